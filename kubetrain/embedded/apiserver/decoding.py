"""Decoding checks: what Go's encoding/json refuses before kube-apiserver ever sees an object.

A body whose metadata (or a ConfigMap's or Secret's data) has the wrong JSON type is a 400
``... cannot be handled as a <Kind>: json: cannot unmarshal <json type> into Go struct field ...``,
and nothing is stored. Lone UTF-16 surrogates and invalid UTF-8 in strings become U+FFFD, as Go
decodes them.
"""

from __future__ import annotations

from typing import Any

import yaml

from . import errors
from .jsonutil import GO_MAX_DEPTH, dumps, loads
from .resources import ResourceType

_STR, _INT, _MAP, _LIST = "string", "int64", "map[string]string", "[]string"
_META_TYPES = {
    "name": _STR,
    "generateName": _STR,
    "namespace": _STR,
    "uid": _STR,
    "resourceVersion": _STR,
    "selfLink": _STR,
    "generation": _INT,
    "deletionGracePeriodSeconds": _INT,
    "labels": _MAP,
    "annotations": _MAP,
    "finalizers": _LIST,
    "ownerReferences": "[]v1.OwnerReference",
    "managedFields": "[]v1.ManagedFieldsEntry",
}
_DATA_FIELDS = {("", "ConfigMap"): ("data",), ("", "Secret"): ("data", "stringData")}


def type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _mismatch(value: Any, go_type: str) -> tuple[str, str] | None:
    """(json type, go type) when ``value`` cannot be decoded into ``go_type``; null always can."""
    if value is None:
        return None
    if go_type == _STR:
        return None if isinstance(value, str) else (type_name(value), _STR)
    if go_type == _INT:
        return None if isinstance(value, int) and not isinstance(value, bool) else (type_name(value), _INT)
    if go_type == _MAP:
        if not isinstance(value, dict):
            return (type_name(value), _MAP)
        bad = next((v for v in value.values() if v is not None and not isinstance(v, str)), None)
        return None if bad is None else (type_name(bad), _STR)
    if not isinstance(value, list):
        return (type_name(value), go_type)
    if go_type == _LIST:
        bad = next((v for v in value if v is not None and not isinstance(v, str)), None)
        return None if bad is None else (type_name(bad), _STR)
    bad = next((v for v in value if v is not None and not isinstance(v, dict)), None)
    return None if bad is None else (type_name(bad), go_type.removeprefix("[]"))


MAX_REQUEST_BYTES = 3 * 1024 * 1024
"""kube-apiserver's MaxRequestBodyBytes: a larger body is a 413 before it is decoded."""


def check_size(raw: bytes) -> None:
    """``limitedReadBody``'s 413 for a body over 3 MiB."""
    if len(raw) > MAX_REQUEST_BYTES:
        raise errors.APIError(
            413, "RequestEntityTooLarge", f"Request entity too large: limit is {MAX_REQUEST_BYTES}"
        )


def summarize(raw: bytes) -> str:
    """``summarizeData(body, 30)``: the start of a body, as kube-apiserver quotes it in errors."""
    if not raw:
        return "<empty>"
    if raw[:1] == b"{":
        text = raw[:30].decode("utf-8", "replace")
        return text + " ..." if len(raw) > 30 else text
    return raw[:30].hex() + (" ..." if len(raw) > 30 else "")


def unrecognized(kind: str, detail: str, raw: bytes) -> errors.APIError:
    """``transformDecodeError`` when no kind could be read from the body."""
    return errors.bad_request(
        f"the object provided is unrecognized (must be of type {kind}): {detail} ({summarize(raw)})"
    )


def check_type_meta(rt: ResourceType, obj: dict[str, Any], raw: bytes | None = None) -> None:
    """The 400 of the decoder's first look (``apiVersion`` and ``kind`` into strings)."""
    for field in ("apiVersion", "kind"):
        bad = _mismatch(obj.get(field), _STR)
        if bad:
            raise unrecognized(
                rt.kind,
                f"couldn't get version/kind; json parse error: json: cannot unmarshal {bad[0]} into Go "
                f"struct field .{field} of type string",
                raw if raw is not None else dumps(obj),
            )


def check_types(rt: ResourceType, obj: dict[str, Any]) -> None:
    """Raise the decoder's 400 for the first field of the wrong JSON type."""
    meta = obj.get("metadata")
    found: tuple[str, str, str] | None = None
    if isinstance(meta, dict):
        prefix = "ObjectMeta." if rt.custom is not None else "ObjectMeta.metadata."
        for field, go_type in _META_TYPES.items():
            bad = _mismatch(meta.get(field), go_type)
            if bad:
                found = (f"{prefix}{field}", *bad)
                break
    if found is None:
        for field in _DATA_FIELDS.get((rt.group, rt.kind), ()):
            bad = _mismatch(obj.get(field), _MAP)
            if bad:
                found = (f"{rt.kind}.{field}", *bad)
                break
    if found is not None:
        field, json_type, go_type = found
        raise errors.bad_request(
            f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: json: cannot unmarshal '
            f"{json_type} into Go struct field {field} of type {go_type}"
        )


def decode_json(data: bytes | str) -> Any:
    """Parse a request body as Go's encoding/json does: lone surrogates and invalid UTF-8 become
    U+FFFD, any depth up to Go's 10,000 (iteratively), deeper is a syntax error."""
    return loads(data, max_depth=GO_MAX_DEPTH)


_YAML_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's loader: it composes without Python recursion and refuses nesting beyond 1,000
with a YAMLError (the pure-Python loader raises RecursionError at ~500)."""


def decode_yaml(raw: bytes, kind: str) -> Any:
    """Parse a YAML body of ``kind``; a 400 when it is not YAML.

    JSON text (what kubectl sends as apply-patch+yaml) is read by the JSON decoder, so it may nest
    as deep as Go allows; other YAML is limited to libyaml's 1,000 levels (go-yaml's is 10,000)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise unrecognized(kind, "yaml: invalid leading UTF-8 octet", raw) from None
    if text.lstrip()[:1] in ("{", "["):
        try:
            return decode_json(text)
        except ValueError:
            pass  # flow-style YAML is looser than JSON: let the YAML parser judge
    try:
        return yaml.load(text, Loader=_YAML_LOADER)
    except yaml.YAMLError as exc:
        raise errors.bad_request(f"error decoding YAML: {exc}") from None


_INT64 = range(-(2**63), 2**63)
_DELETE_OPTIONS: dict[str, tuple[str, type | tuple[type, ...]]] = {
    "gracePeriodSeconds": ("int64", int),
    "propagationPolicy": ("v1.DeletionPropagation", str),
    "orphanDependents": ("bool", bool),
    "dryRun": ("[]string", list),
    "preconditions": ("v1.Preconditions", dict),
}
_PRECONDITIONS = {"uid": "types.UID", "resourceVersion": "string"}


def _unmarshal_error(value: Any, field: str, go_type: str) -> errors.APIError:
    what = type_name(value)
    if isinstance(value, float | int) and not isinstance(value, bool):
        what = f"number {value!r}"  # Go quotes the literal of a number it cannot fit
    return errors.bad_request(f"json: cannot unmarshal {what} into Go struct field {field} of type {go_type}")


def check_delete_options(body: dict[str, Any]) -> None:
    """The decoder's 400 for a DeleteOptions body field of the wrong JSON type."""
    for name, (go_type, py_type) in _DELETE_OPTIONS.items():
        value = body.get(name)
        field = f"DeleteOptions.{name}"
        if value is None:
            continue
        if name == "gracePeriodSeconds":
            if isinstance(value, bool) or not isinstance(value, int) or value not in _INT64:
                raise _unmarshal_error(value, field, go_type)
        elif not isinstance(value, py_type) or (py_type is not bool and isinstance(value, bool)):
            raise errors.bad_request(
                f"json: cannot unmarshal {type_name(value)} into Go struct field {field} of type {go_type}"
            )
        elif name == "dryRun" and isinstance(value, list):
            bad = next((v for v in value if not isinstance(v, str)), None)
            if bad is not None:
                raise errors.bad_request(
                    f"json: cannot unmarshal {type_name(bad)} into Go struct field {field} of type string"
                )
        elif name == "preconditions" and isinstance(value, dict):
            for key, key_type in _PRECONDITIONS.items():
                inner = value.get(key)
                if inner is not None and not isinstance(inner, str):
                    raise errors.bad_request(
                        f"json: cannot unmarshal {type_name(inner)} into Go struct field "
                        f"{field}.{key} of type {key_type}"
                    )
