"""Server-side field validation: the ``fieldValidation`` query parameter of create, update and patch.

kube-apiserver decodes a request body strictly unless told ``Ignore``: an unknown field (one the
kind's schema does not have; for custom resources, one pruning would drop) or a duplicate field
fails the request under ``Strict`` and becomes a ``Warning: 299 - "unknown field \"spec.x\""``
header under ``Warn``, the default when the parameter is absent (Kubernetes 1.27+). The texts are
apimachinery's: ``strict decoding error: unknown field "spec.x", duplicate field "spec.y"``, inside
``<Kind> in version "<v>" cannot be handled as a <Kind>: ...`` (400 BadRequest) for create and
update, and inside a 422 on the field ``patch`` for patches (``handlers/patch.go``).

The checks run only for requests (the middleware sets the directive for the request's task), never
for the server's own controllers' writes. Server-side apply ignores the directive: a field the
schema lacks always fails it, with structured-merge-diff's error (``check_apply``).
"""

from __future__ import annotations

import contextvars
import functools
import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from . import admission, errors
from .errors import APIError, FieldError
from .jsonutil import dumps, loads
from .openapi import OBJECT_META, V3_PREFIX, builtin_data, gv_key
from .resources import ResourceType

IGNORE, WARN, STRICT = "Ignore", "Warn", "Strict"
_ALLOWED = ("", IGNORE, STRICT, WARN)  # sets.List order, as the NotSupported error lists them
_OPTIONS_KIND = {"POST": "CreateOptions", "PUT": "UpdateOptions", "PATCH": "PatchOptions"}
APPLY_PATCH = "application/apply-patch+yaml"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
_ENVELOPE = ("apiVersion", "kind", "metadata")


@dataclass
class RequestState:
    directive: str
    duplicates: list[str] = field(default_factory=list)  # the texts, for patches and custom resources
    pairs: Any = None  # the body with its repeated keys (a _Pairs tree), when it has any


_state: contextvars.ContextVar[RequestState | None] = contextvars.ContextVar(
    "kubetrain_field_validation", default=None
)


# --- the request side ----------------------------------------------------------------------


class _Pairs(list[tuple[str, Any]]):
    """A JSON object as the text has it: every key, repeated ones included, in order."""


def _dup_walk(node: Any, path: list[str], out: list[str]) -> None:
    """Repeated keys in document order, into every value (first ones too), as an untyped decode."""
    if isinstance(node, _Pairs):
        seen: set[str] = set()
        for k, v in node:
            if k in seen:
                out.append(_path(path, k))
            seen.add(k)
            if isinstance(v, list):
                path.append(k)
                _dup_walk(v, path, out)
                path.pop()
    elif isinstance(node, list):
        for i, v in enumerate(node):
            if isinstance(v, list):
                path.append(f"[{i}]")
                _dup_walk(v, path, out)
                path.pop()


def _path(path: list[str], key: str) -> str:
    return ".".join([*path, key]).replace(".[", "[")


_KEY_END = re.compile(rb'"\s*:')


def _count_keys(node: Any) -> int:
    if isinstance(node, dict):
        return len(node) + sum(_count_keys(v) for v in node.values() if isinstance(v, dict | list))
    if isinstance(node, list):
        return sum(_count_keys(v) for v in node if isinstance(v, dict | list))
    return 0


def parse_pairs(raw: bytes) -> _Pairs | None:
    """The body as a tree of key/value pairs when it repeats a key, else None.

    Fast path: every key of the text ends in ``":``, so when that count equals the keys orjson
    kept (it keeps the last of repeated keys), no key repeats. Only otherwise (a repeated key,
    or ``\\":`` inside a string) is the body parsed again, slowly, keeping every pair."""
    if b'"' not in raw:
        return None
    try:
        if len(_KEY_END.findall(raw)) == _count_keys(loads(raw)):
            return None
        tree = json.loads(raw, object_pairs_hook=_Pairs)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None  # the handler reports the malformed body
    return tree if isinstance(tree, _Pairs) else None


def duplicate_fields(raw: bytes) -> list[str]:
    """Paths of repeated keys in a JSON body (sigs.k8s.io/json's DisallowDuplicateFields)."""
    tree = parse_pairs(raw)
    out: list[str] = []
    if tree is not None:
        _dup_walk(tree, [], out)
    return out


def _bad_directive(method: str, value: str) -> web.Response:
    err = errors.invalid(
        "meta.k8s.io",
        _OPTIONS_KIND[method],
        "",
        [
            FieldError(
                "FieldValueNotSupported",
                "fieldValidation",
                value,
                "supported values: " + ", ".join(f'"{v}"' for v in _ALLOWED),
            )
        ],
    )
    return web.Response(body=dumps(err.status()), status=err.code, content_type="application/json")


@web.middleware
async def middleware(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    """Read the directive (and the body's duplicate fields) of a write to a resource."""
    if request.method not in _OPTIONS_KIND or not request.path.startswith(("/api/", "/apis/")):
        return await handler(request)
    value = request.query.get("fieldValidation", "")
    if value not in _ALLOWED:
        return _bad_directive(request.method, value)
    directive = value or WARN
    if request.content_type == APPLY_PATCH:
        return await handler(request)
    state = RequestState(directive)
    if directive != IGNORE and "yaml" not in request.content_type:
        prefix = "json patch " if request.content_type == JSON_PATCH else ""
        state.pairs = parse_pairs(await request.read())
        dups: list[str] = []
        if state.pairs is not None:
            _dup_walk(state.pairs, [], dups)
        state.duplicates = [f'{prefix}duplicate field "{p}"' for p in dups]
    token = _state.set(state)
    try:
        return await handler(request)
    finally:
        _state.reset(token)


# --- unknown fields ------------------------------------------------------------------------


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


@functools.cache
def _gv_schemas(key: str) -> dict[str, Any]:
    data = builtin_data()
    gv = data["groupVersions"].get(key)
    if gv is None:
        return {}
    return {n: gv["overrides"].get(n) or data["schemas"][n] for n in gv["schemas"]}


@functools.cache
def _kind_schema(group: str, version: str, kind: str) -> str | None:
    want = {"group": group, "version": version, "kind": kind}
    for name, schema in _gv_schemas(gv_key(group, version)).items():
        if want in (schema.get("x-kubernetes-group-version-kind") or ()):
            return name
    return None


def _resolve(schema: Any, defs: dict[str, Any]) -> dict[str, Any]:
    while isinstance(schema, dict):
        ref = schema.get("$ref")
        all_of = schema.get("allOf")
        if isinstance(ref, str):
            schema = defs.get(ref.removeprefix(V3_PREFIX))
        elif isinstance(all_of, list) and len(all_of) == 1:
            schema = all_of[0]
        else:
            return schema
    return {}


class _Node:
    """A schema compiled for the unknown-field walk: what a Go struct (or map, or slice) accepts."""

    __slots__ = ("addl", "any_key", "items", "list_keys", "opaque", "props")

    def __init__(self) -> None:
        self.props: dict[str, _Node] = {}
        self.addl: _Node | None = None
        self.items: _Node | None = None
        self.list_keys: tuple[str, ...] = ()  # x-kubernetes-list-map-keys of a list
        self.any_key = False  # additionalProperties: true
        self.opaque = True  # no properties: RawExtension, FieldsV1, JSON, scalars


def _compile(schema: Any, defs: dict[str, Any], memo: dict[int, _Node]) -> _Node:
    s = _resolve(schema, defs)
    key = id(s)
    if key in memo:
        return memo[key]
    node = memo[key] = _Node()
    props, addl, items = s.get("properties"), s.get("additionalProperties"), s.get("items")
    if isinstance(items, dict):
        node.items = _compile(items, defs, memo)
        node.list_keys = tuple(s.get("x-kubernetes-list-map-keys") or ())
    if (props is None and addl is None) or s.get("x-kubernetes-preserve-unknown-fields"):
        return node
    node.opaque = False
    node.props = {k: _compile(v, defs, memo) for k, v in (props or {}).items()}
    if s.get("x-kubernetes-embedded-resource"):
        node.props.update(_envelope_nodes())
    if isinstance(addl, dict):
        node.addl = _compile(addl, defs, memo)
    node.any_key = addl is True
    return node


def _typed_unknown(value: Any, node: _Node, path: list[str], out: list[str], drop: bool = False) -> None:
    """Fields a Go struct decoder would not know (and drops, with ``drop``); ``path`` is a stack."""
    if isinstance(value, dict):
        if node.opaque:
            return
        for k, v in list(value.items()):
            sub = node.props.get(k) or node.addl
            if sub is not None:
                if isinstance(v, dict | list):
                    path.append(k)
                    _typed_unknown(v, sub, path, out, drop)
                    path.pop()
            elif not node.any_key:
                out.append(".".join([*path, k]).replace(".[", "["))
                if drop:
                    del value[k]
    elif isinstance(value, list) and node.items is not None:
        for i, v in enumerate(value):
            if isinstance(v, dict | list):
                path.append(f"[{i}]")
                _typed_unknown(v, node.items, path, out, drop)
                path.pop()


@functools.cache
def _kind_node(group: str, version: str, kind: str) -> _Node | None:
    name = _kind_schema(group, version, kind)
    if name is None:
        return None
    defs = _gv_schemas(gv_key(group, version))
    return _compile(defs[name], defs, {})


@functools.cache
def _object_meta_node() -> _Node:
    defs = builtin_data()["crd"]["schemas"]
    return _compile(defs[OBJECT_META], defs, {})


def _envelope_nodes() -> dict[str, _Node]:
    """apiVersion, kind and metadata: what every (embedded) resource may carry."""
    return {"apiVersion": _Node(), "kind": _Node(), "metadata": _object_meta_node()}


def _meta_unknown(meta: Any, path: str, out: list[str]) -> None:
    _typed_unknown(meta, _object_meta_node(), [path], out)


def _prune_unknown(value: Any, schema: Any, path: str, out: list[str], embedded: list[str]) -> None:
    """apiextensions' pruning with TrackUnknownFieldPaths (pruning/algorithm.go)."""
    if not isinstance(schema, dict):
        if isinstance(value, dict):
            out.extend(_join(path, k) for k in value)
        return
    preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
    is_embedded = bool(schema.get("x-kubernetes-embedded-resource")) or not path
    if isinstance(value, dict):
        if is_embedded and path:
            embedded.append(path)
        props = schema.get("properties") or {}
        addl = schema.get("additionalProperties")
        for k, v in value.items():
            if is_embedded and k in _ENVELOPE:
                continue
            if k in props:
                _prune_unknown(v, props[k], _join(path, k), out, embedded)
            elif isinstance(addl, dict):
                _prune_unknown(v, addl, _join(path, k), out, embedded)
            elif not (preserve or addl is True):
                out.append(_join(path, k))
    elif isinstance(value, list):
        items = schema.get("items")
        for i, v in enumerate(value):
            _prune_unknown(v, items, f"{path}[{i}]", out, embedded)


def _get(obj: Any, path: str) -> Any:
    """The value at a pruning path (``a.b[0].c``), for embedded resources' metadata."""
    cur = obj
    for part in path.replace("[", ".[").split("."):
        if part.startswith("["):
            idx = int(part[1:-1])
            cur = cur[idx] if isinstance(cur, list) and idx < len(cur) else None
        else:
            cur = cur.get(part) if isinstance(cur, dict) else None
    return cur


def unknown_fields(rt: ResourceType, obj: dict[str, Any]) -> list[str]:
    """Paths of the fields of ``obj`` that decoding ``rt`` drops, in kube-apiserver's order.

    A built-in kind's unknown fields are removed here (decoding into its Go struct loses them);
    a custom resource's are removed later by pruning."""
    out: list[str] = []
    if rt.custom is None:
        node = _kind_node(rt.group, rt.version, rt.kind)
        if node is not None:
            _typed_unknown(obj, node, [], out, drop=True)
        return out
    _meta_unknown(obj.get("metadata"), "metadata", out)
    if not rt.custom.schema:
        return out
    pruned: list[str] = []
    embedded: list[str] = []
    _prune_unknown(obj, rt.custom.schema, "", pruned, embedded)
    out.extend(sorted(pruned))
    for path in embedded:
        _meta_unknown((_get(obj, path) or {}).get("metadata"), path + ".metadata", out)
    return out


# --- server-side apply ----------------------------------------------------------------------


def _smd_element(item: Any, keys: tuple[str, ...], index: int) -> str:
    """structured-merge-diff's path element: ``[name="c"]`` in an associative list, else ``[0]``."""
    if keys and isinstance(item, dict) and all(k in item for k in keys):
        return "[" + ",".join(f"{k}={dumps(item[k]).decode()}" for k in keys) + "]"
    return f"[{index}]"


def _apply_unknown(value: Any, node: _Node, path: list[str], out: list[str]) -> None:
    if isinstance(value, dict):
        if node.opaque:
            return
        for k in sorted(value):
            sub = node.props.get(k) or node.addl
            if sub is None:
                if not node.any_key:
                    out.append("".join(path) + "." + k)
            elif isinstance(value[k], dict | list):
                path.append("." + k)
                _apply_unknown(value[k], sub, path, out)
                path.pop()
    elif isinstance(value, list) and node.items is not None:
        for i, item in enumerate(value):
            if isinstance(item, dict | list):
                path.append(_smd_element(item, node.list_keys, i))
                _apply_unknown(item, node.items, path, out)
                path.pop()


def _apply_node(rt: ResourceType) -> _Node | None:
    if rt.custom is None:
        return _kind_node(rt.group, rt.version, rt.kind)
    if not isinstance(rt.custom.schema, dict):
        return None
    root = _compile({**rt.custom.schema, "x-kubernetes-embedded-resource": True}, {}, {})
    return root


def check_apply(rt: ResourceType, config: dict[str, Any], name: str) -> None:
    """Server-side apply converts the configuration to the kind's type whatever fieldValidation
    says; a field the schema lacks fails it with structured-merge-diff's 500."""
    node = _apply_node(rt)
    if node is None:
        return
    paths: list[str] = []
    _apply_unknown(config, node, [], paths)
    if not paths:
        return
    text = f"{paths[0]}: field not declared in schema"  # the conversion stops at the first
    meta = config.get("metadata") if isinstance(config.get("metadata"), dict) else {}
    ns = str((meta or {}).get("namespace") or "")
    gvk = f"{rt.group}/{rt.version}, Kind={rt.kind}"
    raise APIError(500, "", f"failed to create typed patch object ({ns}/{name}; {gvk}): {text}")


# --- the checks rest.py calls ----------------------------------------------------------------


def _strict_text(problems: list[str]) -> str:
    return "strict decoding error: " + ", ".join(problems)


def _typed_strict(node: Any, schema: _Node, path: list[str], out: list[str]) -> None:
    """A built-in kind's decode of a body with repeated keys: duplicate and unknown fields in
    document order, an unknown field's value skipped, each error once (decode.go's object)."""
    if isinstance(node, _Pairs):
        if schema.opaque:
            return
        seen: set[str] = set()
        for k, v in node:
            sub = schema.props.get(k) or schema.addl
            if sub is None and not schema.any_key:
                text = f'unknown field "{_path(path, k)}"'
                if text not in out:
                    out.append(text)
                continue
            if k in seen:
                text = f'duplicate field "{_path(path, k)}"'
                if text not in out:
                    out.append(text)
            seen.add(k)
            if sub is not None and isinstance(v, list):
                path.append(k)
                _typed_strict(v, sub, path, out)
                path.pop()
    elif isinstance(node, list) and schema.items is not None:
        for i, v in enumerate(node):
            if isinstance(v, list):
                path.append(f"[{i}]")
                _typed_strict(v, schema.items, path, out)
                path.pop()


def _problems(state: RequestState, rt: ResourceType, obj: dict[str, Any], body: bool) -> list[str]:
    """The strict decoding errors of a write; ``body``: ``obj`` is the request body itself."""
    unknown = unknown_fields(rt, obj)
    node = _kind_node(rt.group, rt.version, rt.kind) if rt.custom is None else None
    if body and state.pairs is not None and node is not None:
        out: list[str] = []
        _typed_strict(state.pairs, node, [], out)
        return out
    return [*state.duplicates, *(f'unknown field "{p}"' for p in unknown)]


def _warn(problems: list[str]) -> None:
    for text in problems:
        admission.add_warning(text)


def check_object(rt: ResourceType, obj: dict[str, Any]) -> None:
    """Create and update: a 400 under Strict, warnings under Warn."""
    state = _state.get()
    if state is None:
        return
    problems = _problems(state, rt, obj, body=True)
    if not problems or state.directive == IGNORE:
        return
    if state.directive == WARN:
        _warn(problems)
        return
    raise errors.bad_request(
        f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: {_strict_text(problems)}'
    )


def check_patched(rt: ResourceType, patched: dict[str, Any], patch: Any, content_type: str) -> None:
    """Patch: the patched object is decoded strictly; a 422 on ``patch`` under Strict."""
    state = _state.get()
    if state is None:
        return
    strategic = content_type == STRATEGIC_PATCH and rt.custom is None
    before = dumps(patched).decode() if state.directive == STRICT and not strategic else ""
    problems = _problems(state, rt, patched, body=False)
    if not problems or state.directive == IGNORE:
        return
    if state.directive == WARN:
        _warn(problems)
        return
    shown = go_format(patch) if strategic else before
    err = FieldError("FieldValueInvalid", "patch", shown, _strict_text(problems))
    raise APIError(
        422,
        "Invalid",
        f' "" is invalid: {err}',
        {"causes": [{"reason": err.type, "message": err.body(), "field": err.field}]},
    )


def go_format(value: Any) -> str:
    """Go's ``%+v`` of a decoded JSON value (how patch.go shows a strategic merge patch)."""
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{go_format(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(go_format(v) for v in value) + "]"
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
