"""OpenAPI v3 (and v2) documents of what the server serves, built the way kube-apiserver builds them.

Built-in kinds: the real kube-apiserver's documents (``data/openapi.json.xz``, see ``openapi_gen``),
restricted to the resources served here. Custom resources: one document per group-version made from
the CRDs' ``openAPIV3Schema`` as apiextensions-apiserver's ``builder`` does (ObjectMeta reference,
apiVersion/kind, embedded-resource properties, the ``x-kubernetes-group-version-kind`` extension,
the same operation ids, parameters and content types). Documents are cached and rebuilt only when
the served types of their group-version change, so each has a stable hash for client caches.
"""

from __future__ import annotations

import functools
import hashlib
import json
import lzma
import time
from dataclasses import dataclass
from importlib import resources as importlib_resources
from typing import Any

from .jsonutil import clone, dumps, loads
from .resources import ResourceCatalog, ResourceType

V3_PREFIX = "#/components/schemas/"
V2_PREFIX = "#/definitions/"
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
LIST_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"
STATUS = "io.k8s.apimachinery.pkg.apis.meta.v1.Status"
DELETE_OPTIONS = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"
PATCH = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch"
SCALE = "io.k8s.api.autoscaling.v1.Scale"
META_DOC = (
    "Standard object's metadata. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)
LIST_META_DOC = (
    "Standard list metadata. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"
)
EMBEDDED_API_VERSION_DOC = (
    "apiVersion defines the versioned schema of this representation of an object. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources"
)
EMBEDDED_KIND_DOC = (
    "kind is a string value representing the type of this object. In CamelCase. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"
)
CRD_TITLE = "Kubernetes CRD Swagger"
CRD_PRODUCES = ("application/json", "application/yaml")
CRD_PATCH_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/apply-patch+yaml",
)


@functools.cache
def builtin_data() -> dict[str, Any]:
    """The captured kube-apiserver documents (decompressed once, ~30 ms)."""
    raw = importlib_resources.files(__package__).joinpath("data/openapi.json.xz").read_bytes()
    data: dict[str, Any] = loads(lzma.decompress(raw))
    return data


def gv_key(group: str, version: str) -> str:
    """``api/v1`` or ``apis/<group>/<version>``: a group-version's name in /openapi/v3."""
    return f"apis/{group}/{version}" if group else f"api/{version}"


def model_name(group: str, version: str, kind: str) -> str:
    """apiextensions' gvkToModelName: the group reversed (``kubeflow.org`` -> ``org.kubeflow``)."""
    return ".".join([*reversed(group.split(".")), version, kind])


def etag_of(data: bytes) -> str:
    """kube-openapi's computeETag: upper-case hex SHA-512 of the served bytes."""
    return hashlib.sha512(data).hexdigest().upper()


@dataclass
class Document:
    """A served document: the object, its JSON bytes, its hash and when it was built."""

    doc: dict[str, Any]
    data: bytes
    etag: str
    last_modified: float

    @classmethod
    def of(cls, doc: dict[str, Any]) -> Document:
        data = dumps(doc)
        return cls(doc, data, etag_of(data), time.time())


# --- built-in group-versions ---------------------------------------------------------------


def _served_path(path: str, prefix: str, types: dict[str, ResourceType]) -> bool:
    rest = path[len(prefix) :].strip("/").split("/")
    if rest == [""]:
        return True
    if rest[0] == "watch":
        rest = rest[1:]
    if (
        rest
        and rest[0] == "namespaces"
        and len(rest) >= 3
        and not (len(rest) == 3 and rest[2] in ("status", "finalize"))
    ):
        rest = rest[2:]
    rt = types.get(rest[0]) if rest else None
    return rt is not None and (len(rest) < 3 or rest[2] in rt.subresources)


def builtin_document(key: str, types: list[ResourceType]) -> dict[str, Any] | None:
    """The real document of a built-in group-version, with only the paths of ``types``."""
    data = builtin_data()
    gv = data["groupVersions"].get(key)
    if gv is None:
        return None
    by_plural = {rt.plural: rt for rt in types}
    paths = {p: item for p, item in gv["paths"].items() if _served_path(p, "/" + key, by_plural)}
    schemas = {name: gv["overrides"].get(name) or data["schemas"][name] for name in gv["schemas"]}
    needed = _closure(_refs(paths, set()), schemas)
    return {
        "openapi": "3.0.0",
        "info": data["info"],
        "paths": paths,
        "components": {
            "schemas": {n: schemas[n] for n in sorted(needed)},
            "securitySchemes": data["securitySchemes"],
        },
    }


def _refs(node: Any, acc: set[str]) -> set[str]:
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "$ref" and isinstance(v, str):
                acc.add(v.rsplit("/", 1)[-1])
            else:
                _refs(v, acc)
    elif isinstance(node, list):
        for v in node:
            _refs(v, acc)
    return acc


def _closure(names: set[str], schemas: dict[str, Any]) -> set[str]:
    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in seen or name not in schemas:
            continue
        seen.add(name)
        todo.extend(_refs(schemas[name], set()) - seen)
    return seen


# --- custom resources ----------------------------------------------------------------------


def _unfold(schema: Any) -> Any:
    """The published form of a structural schema: int-or-string unfolded into its anyOf."""
    if isinstance(schema, list):
        return [_unfold(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: (v if k in ("default", "enum", "example") else _unfold_value(k, v)) for k, v in schema.items()}
    if out.get("x-kubernetes-int-or-string") and "anyOf" not in out:
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if out.get("x-kubernetes-embedded-resource"):
        _add_embedded(out)
    return out


def _unfold_value(key: str, value: Any) -> Any:
    """`properties` maps names to schemas: each is unfolded once (unfolding the map as a schema
    too, and then each property again, doubled the work at every level: 146 s for Trainer v2's
    CRDs, whose schemas nest a JobSet's pod templates ~40 levels deep)."""
    if key == "properties" and isinstance(value, dict):
        return {k: _unfold(v) for k, v in value.items()}
    return _unfold(value)


def _meta_ref(name: str, description: str) -> dict[str, Any]:
    """A described reference, in the ``allOf`` form OpenAPI v3 needs for siblings of ``$ref``."""
    return {"allOf": [{"$ref": V3_PREFIX + name}], "description": description}


def _add_embedded(s: dict[str, Any]) -> None:
    props = s.setdefault("properties", {})
    props["apiVersion"] = {"description": EMBEDDED_API_VERSION_DOC, "type": "string"}
    props["kind"] = {"description": EMBEDDED_KIND_DOC, "type": "string"}
    props["metadata"] = _meta_ref(OBJECT_META, META_DOC)
    required = s.setdefault("required", [])
    for name in ("kind", "apiVersion"):
        if name not in required:
            required.append(name)


def crd_kind_schema(rt: ResourceType) -> dict[str, Any]:
    """The component schema of a custom kind (builder.buildKubeNative, OpenAPI v3 form)."""
    assert rt.custom is not None
    source = rt.custom.schema
    gvk = {"group": rt.group, "version": rt.version, "kind": rt.kind}
    if not isinstance(source, dict):
        return {"type": "object", "x-kubernetes-group-version-kind": [gvk]}
    schema = _unfold(clone(source))
    schema.pop("x-kubernetes-embedded-resource", None)
    type_meta = builtin_data()["crd"]["typeMeta"]
    props = schema.setdefault("properties", {})
    props["metadata"] = _meta_ref(OBJECT_META, META_DOC)
    props["apiVersion"] = clone(type_meta["apiVersion"])
    props["kind"] = clone(type_meta["kind"])
    schema["x-kubernetes-group-version-kind"] = [gvk]
    if rt.field_selectors:
        schema["x-kubernetes-selectable-fields"] = [{"fieldPath": f} for f in rt.field_selectors]
    return schema


def crd_list_schema(rt: ResourceType) -> dict[str, Any]:
    type_meta = builtin_data()["crd"]["typeMeta"]
    doc = (
        f"List of {rt.plural}. More info: "
        "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md"
    )
    out: dict[str, Any] = {
        "description": f"{rt.list_kind_name} is a list of {rt.kind}",
        "properties": {
            "apiVersion": clone(type_meta["apiVersion"]),
            "items": {
                "description": doc,
                "items": {"$ref": V3_PREFIX + model_name(rt.group, rt.version, rt.kind)},
                "type": "array",
            },
            "kind": clone(type_meta["kind"]),
            "metadata": _meta_ref(LIST_META, LIST_META_DOC),
        },
        "required": ["items"],
        "type": "object",
        "x-kubernetes-group-version-kind": [
            {"group": rt.group, "kind": rt.list_kind_name, "version": rt.version}
        ],
    }
    if rt.field_selectors:
        out["x-kubernetes-selectable-fields"] = [{"fieldPath": f} for f in rt.field_selectors]
    return out


def _op_id_part(text: str, capitalize: bool) -> str:
    """kube-openapi's ToValidOperationID."""
    out = []
    cap = capitalize
    for i, ch in enumerate(text):
        if ch.isalpha() or ch == "_" or (i and ch.isdigit()):
            out.append(ch.upper() if cap else ch)
            cap = False
        else:
            cap = True
    return "".join(out)


_VERB_PREFIXES = (
    "get",
    "log",
    "read",
    "replace",
    "patch",
    "delete",
    "watch",
    "connect",
    "proxy",
    "list",
    "create",
)


def operation_id(op: str, group: str, version: str) -> str:
    """apiserver's GetOperationIDAndTags: the verb, then group and version, then the rest."""
    verb = next(p for p in _VERB_PREFIXES if op.startswith(p))
    trimmed = group.removesuffix(".k8s.io")
    return verb + _op_id_part(trimmed, True) + _op_id_part(version, True) + _op_id_part(op[len(verb) :], True)


def _article(noun: str) -> str:
    if not noun.endswith("ss") and noun.endswith("s"):
        return " "
    return " an " if noun[:1].lower() in "aeiou" else " a "


def _description(kind: str, sub: str, verb: str) -> str:
    """builder.descriptionFor."""
    article = {"list": " objects of kind ", "read": " the specified ", "replace": " the specified "}.get(verb)
    if verb == "patch":
        article = " the specified "
    elif verb in ("create", "delete"):
        article = _article(kind)
    sub_text = f" {sub} of" if sub else ""
    if verb == "patch":
        return f"partially update{sub_text}{article}{kind}"
    if verb == "deletecollection":
        return f"delete collection of{sub_text + ' a' if sub else ''} {kind}"
    return f"{verb}{sub_text}{article or ''}{kind}"


def _content(ref: str, types: tuple[str, ...]) -> dict[str, Any]:
    return {t: {"schema": {"$ref": V3_PREFIX + ref}} for t in types}


def _crd_params(params: dict[str, list[dict[str, Any]]], action: str) -> list[dict[str, Any]]:
    """endpoints.AddObjectParams for the options type of each action."""
    if action == "deletecollection":
        return clone(params["list"])  # ListOptions
    if action == "get":
        return [clone(p) for p in params["list"] if p["name"] == "resourceVersion"]  # GetOptions
    return clone(params[action])


def _hoist(item: dict[str, Any]) -> dict[str, Any]:
    """builder3: parameters every operation of a path has move to the path, all sorted by name."""
    ops = {m: op for m, op in item.items() if m != "parameters"}
    keys = [{(p["in"], p["name"]) for p in op.get("parameters", ())} for op in ops.values()]
    common = set.intersection(*keys) if keys else set()
    shared = list(item.get("parameters", ()))
    for op in ops.values():
        for p in op.get("parameters", ()):
            if (p["in"], p["name"]) in common and all(p["name"] != s["name"] for s in shared):
                shared.append(p)
        rest = [p for p in op.get("parameters", ()) if (p["in"], p["name"]) not in common]
        if rest:
            op["parameters"] = sorted(rest, key=lambda p: p["name"])
        else:
            op.pop("parameters", None)
    return {**dict(sorted(ops.items())), "parameters": sorted(shared, key=lambda p: p["name"])}


def _crd_paths(rt: ResourceType) -> dict[str, Any]:
    """The paths of one custom resource version, as builder.generateBuilder lays them out."""
    params = builtin_data()["crd"]["parameters"]
    g, v = rt.group, rt.version
    kind_ref = model_name(g, v, rt.kind)
    list_ref = model_name(g, v, rt.list_kind_name)
    ns = "Namespaced" if rt.namespaced else ""
    tag = _op_id_part(g.removesuffix(".k8s.io"), False) + "_" + _op_id_part(v, False)
    gvk = {"group": g, "kind": rt.kind, "version": v}
    pretty = {
        "description": "If 'true', then the output is pretty printed. Defaults to 'false' unless the "
        "user-agent indicates a browser or command-line HTTP tool (curl and wget).",
        "in": "query",
        "name": "pretty",
        "schema": {"type": "string", "uniqueItems": True},
    }
    ns_param = {
        "description": "object name and auth scope, such as for teams and projects",
        "in": "path",
        "name": "namespace",
        "required": True,
        "schema": {"type": "string", "uniqueItems": True},
    }
    name_param = {
        "description": f"name of the {rt.kind}",
        "in": "path",
        "name": "name",
        "required": True,
        "schema": {"type": "string", "uniqueItems": True},
    }

    def op(
        method: str, action: str, verb: str, sample: str, sub: str = "", op_name: str | None = None
    ) -> dict[str, Any]:
        name = op_name or f"{verb}{ns}{rt.kind}{sub.title()}"
        responses: dict[str, Any] = {
            "200": {"content": _content(sample, CRD_PRODUCES), "description": "OK"},
            "401": {"description": "Unauthorized"},
        }
        if action == "post":
            responses["201"] = {"content": _content(sample, CRD_PRODUCES), "description": "Created"}
            responses["202"] = {"content": _content(sample, CRD_PRODUCES), "description": "Accepted"}
        elif action == "delete":
            responses["202"] = {"content": _content(sample, CRD_PRODUCES), "description": "Accepted"}
        elif action == "put":
            responses["201"] = {"content": _content(sample, CRD_PRODUCES), "description": "Created"}
        out: dict[str, Any] = {
            "description": _description(rt.kind, sub, verb),
            "operationId": operation_id(name, g, v),
        }
        own = _crd_params(params, action)
        if own:
            out["parameters"] = own
        if method == "patch":
            out["requestBody"] = {"content": _content(PATCH, CRD_PATCH_TYPES), "required": True}
        elif action in ("post", "put"):
            body = SCALE if sample == SCALE else kind_ref
            out["requestBody"] = {"content": _content(body, CRD_PRODUCES), "required": True}
        elif action == "delete":
            out["requestBody"] = {"content": _content(DELETE_OPTIONS, CRD_PRODUCES)}
        out["responses"] = responses
        out["tags"] = [tag]
        out["x-kubernetes-action"] = action
        out["x-kubernetes-group-version-kind"] = dict(gvk)
        return out

    paths: dict[str, Any] = {}
    root = f"/apis/{g}/{v}/{rt.plural}"
    if rt.namespaced:
        paths[root] = {
            "get": op("get", "list", "list", list_ref, op_name=f"list{rt.kind}ForAllNamespaces"),
            "parameters": [pretty],
        }
        root = f"/apis/{g}/{v}/namespaces/{{namespace}}/{rt.plural}"
    scope = [ns_param] if rt.namespaced else []
    paths[root] = {
        "delete": op("delete", "deletecollection", "deletecollection", STATUS),
        "get": op("get", "list", "list", list_ref),
        "parameters": [*scope, pretty],
        "post": op("post", "post", "create", kind_ref),
    }
    item = [name_param, *scope, pretty]
    paths[root + "/{name}"] = {
        "delete": op("delete", "delete", "delete", STATUS),
        "get": op("get", "get", "read", kind_ref),
        "parameters": item,
        "patch": op("patch", "patch", "patch", kind_ref),
        "put": op("put", "put", "replace", kind_ref),
    }
    for sub, sample in (("status", kind_ref), ("scale", SCALE)):
        if sub in rt.subresources:
            paths[f"{root}/{{name}}/{sub}"] = {
                "get": op("get", "get", "read", sample, sub),
                "parameters": clone(item),
                "patch": op("patch", "patch", "patch", sample, sub),
                "put": op("put", "put", "replace", sample, sub),
            }
    return {path: _hoist(item) for path, item in paths.items()}


def crd_document(types: list[ResourceType]) -> dict[str, Any]:
    """One group-version's document for its custom kinds (apiextensions' merged v3 spec)."""
    data = builtin_data()
    meta = data["crd"]["schemas"]
    schemas: dict[str, Any] = {}
    paths: dict[str, Any] = {}
    for rt in sorted(types, key=lambda t: t.kind):
        schemas[model_name(rt.group, rt.version, rt.kind)] = crd_kind_schema(rt)
        schemas[model_name(rt.group, rt.version, rt.list_kind_name)] = crd_list_schema(rt)
        paths.update(_crd_paths(rt))
    for name in sorted(_closure(_refs([paths, schemas], set()), {**meta, **schemas})):
        if name in meta:
            schemas[name] = meta[name]
    return {
        "openapi": "3.0.0",
        "info": {"title": CRD_TITLE, "version": "v0.1.0"},
        "paths": dict(sorted(paths.items())),
        "components": {"schemas": dict(sorted(schemas.items()))},
    }


# --- OpenAPI v2 ----------------------------------------------------------------------------


def to_v2_schema(node: Any, crd: bool = False) -> Any:
    """A v3 component schema in v2 form: ``#/definitions/`` refs, single-ref ``allOf`` unwrapped,
    no ``default`` or ``nullable`` (swagger 2.0 has neither); a custom kind's also as
    apiextensions' ToStructuralOpenAPIV2 makes it (``crd``)."""
    if isinstance(node, list):
        return [to_v2_schema(n, crd) for n in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for k, v in node.items():
        if k == "$ref" and isinstance(v, str):
            out[k] = v.replace(V3_PREFIX, V2_PREFIX)
        elif k in ("default", "nullable"):
            continue
        elif k in ("enum", "example"):
            out[k] = v
        elif k == "properties" and isinstance(v, dict):
            out[k] = {name: to_v2_schema(s, crd) for name, s in v.items()}
        else:
            out[k] = to_v2_schema(v, crd)
    all_of = out.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1 and set(all_of[0]) == {"$ref"}:
        out.pop("allOf")
        out = {"$ref": all_of[0]["$ref"], **out}
    if crd:
        _structural_v2(node, out)
    return out


def _structural_v2(source: dict[str, Any], out: dict[str, Any]) -> None:
    """ToStructuralOpenAPIV2: no allOf/anyOf/oneOf/not; nullable and preserved nodes untyped."""
    for key in ("allOf", "anyOf", "oneOf", "not"):
        out.pop(key, None)
    if source.get("nullable"):
        for key in ("type", "items", "properties"):
            out.pop(key, None)
    if source.get("x-kubernetes-preserve-unknown-fields"):
        out.pop("items", None)
        out.pop("properties", None)
        if out.get("type") == "object":
            out.pop("type")
    if out.get("type") == "array" and "items" not in out:
        out.pop("type")
    props = source.get("properties")
    if isinstance(props, dict) and isinstance(out.get("required"), list):
        nullable = {name for name, sub in props.items() if isinstance(sub, dict) and sub.get("nullable")}
        out["required"] = [r for r in out["required"] if r not in nullable]
        if not out["required"]:
            out.pop("required")
    addl = source.get("additionalProperties")
    if isinstance(addl, dict) and addl.get("nullable"):
        out.pop("required", None)


def _v2_param(p: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in p.items() if k != "schema"}
    out.update(p.get("schema") or {})
    return out


def _shared(params: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The v2 aggregator's dedup: a parameter equal to a shared one becomes a reference to it."""
    by_value = {_canonical(v): k for k, v in builtin_data()["v2"]["parameters"].items()}
    out = []
    for p in params:
        name = by_value.get(_canonical(p))
        out.append({"$ref": f"#/parameters/{name}"} if name else p)
    return out


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _v2_operation(op: dict[str, Any]) -> dict[str, Any]:
    """A CRD operation in v2 form (builder.go's routes: every one consumes JSON and YAML)."""
    out = {k: v for k, v in op.items() if k not in ("parameters", "requestBody", "responses")}
    out["consumes"] = list(CRD_PRODUCES)
    params = [_v2_param(p) for p in op.get("parameters") or ()]
    body = op.get("requestBody")
    if body:
        content: dict[str, Any] = body.get("content") or {}
        first: dict[str, Any] = next(iter(content.values()), {})
        schema = first.get("schema")
        param: dict[str, Any] = {"in": "body", "name": "body", "schema": schema}
        if body.get("required"):
            param["required"] = True
        params.insert(0, param)
        out["consumes"] = list(content)
    if params:
        out["parameters"] = _shared(to_v2_schema(params))
    responses: dict[str, Any] = {}
    produces: list[str] = []
    for code, resp in (op.get("responses") or {}).items():
        entry = {"description": resp.get("description", "")}
        content = resp.get("content") or {}
        for t in content:
            if t not in produces:
                produces.append(t)
        if content:
            entry["schema"] = to_v2_schema(next(iter(content.values())).get("schema"))
        responses[code] = entry
    if produces:
        out["produces"] = produces
    out["responses"] = responses
    out["schemes"] = ["https"]
    return out


def to_v2(documents: list[dict[str, Any]], builtin: dict[str, list[ResourceType]]) -> dict[str, Any]:
    """The swagger 2.0 document (/openapi/v2): the real server's paths and shared parameters for
    the ``builtin`` types served (by group-version key), the converted documents of custom ones,
    every schema as a definition."""
    data = builtin_data()
    v2 = data["v2"]
    paths: dict[str, Any] = {}
    definitions: dict[str, Any] = {}
    meta = data["crd"]["schemas"]
    for doc in documents:
        crd = doc.get("info", {}).get("title") == CRD_TITLE
        for name, schema in (doc.get("components") or {}).get("schemas", {}).items():
            definitions.setdefault(
                name, v2["definitions"].get(name) or to_v2_schema(schema, crd and name not in meta)
            )
        if not crd:
            continue
        for path, item in doc.get("paths", {}).items():
            entry: dict[str, Any] = {}
            for method, op in item.items():
                if method == "parameters":
                    entry[method] = _shared([_v2_param(p) for p in op])
                else:
                    entry[method] = _v2_operation(op)
            paths[path] = entry
    for key, types in builtin.items():
        prefix = "/" + key
        by_plural = {rt.plural: rt for rt in types}
        for path, item in v2["paths"].items():
            if (path == prefix + "/" or path.startswith(prefix + "/")) and _served_path(
                path, prefix, by_plural
            ):
                paths[path] = item
    return {
        "definitions": dict(sorted(definitions.items())),
        "info": data["info"],
        "parameters": v2["parameters"],
        "paths": dict(sorted(paths.items())),
        "security": [{"BearerToken": []}],
        "securityDefinitions": data["securitySchemes"],
        "swagger": "2.0",
    }


# --- the service ---------------------------------------------------------------------------


class OpenAPIService:
    """Serves cached documents; a group-version's document is rebuilt when its served types change."""

    def __init__(self, catalog: ResourceCatalog) -> None:
        self._catalog = catalog
        self._cache: dict[str, tuple[list[ResourceType], Document]] = {}
        self._others: dict[str, Document] = {}
        self._discovery: tuple[tuple[tuple[str, str], ...], Document] | None = None
        self._v2: tuple[tuple[tuple[str, str], ...], Document] | None = None

    def _group_versions(self) -> dict[str, list[ResourceType]]:
        out: dict[str, list[ResourceType]] = {}
        for group in self._catalog.group_names():
            versions = self._catalog.group_versions(group)
            for version in versions[0] if versions else ():
                types = self._catalog.types_in(group, version)
                if types:
                    out[gv_key(group, version)] = types
        return out

    def group_version(self, key: str) -> Document | None:
        """A group-version's document, or one of the root (``api``, ``apis``, ``version``, a group)."""
        types = self._group_versions().get(key)
        if not types:
            return self.documents().get(key)
        return self._document(key, types)

    def _document(self, key: str, types: list[ResourceType]) -> Document:
        cached = self._cache.get(key)
        if cached is not None and _same(cached[0], types):
            return cached[1]
        doc = self._build(key, types)
        built = Document.of(doc)
        if cached is not None and cached[1].etag == built.etag:
            built = cached[1]  # same bytes: keep the old Last-Modified
        self._cache[key] = (list(types), built)
        return built

    def _build(self, key: str, types: list[ResourceType]) -> dict[str, Any]:
        builtin = [rt for rt in types if rt.custom is None]
        custom = [rt for rt in types if rt.custom is not None]
        doc = builtin_document(key, builtin) if builtin else None
        if custom:
            extra = crd_document(custom)
            if doc is None:
                return extra
            doc["paths"].update(extra["paths"])
            doc["components"]["schemas"].update(extra["components"]["schemas"])
        return doc or {"openapi": "3.0.0", "info": builtin_data()["info"], "paths": {}, "components": {}}

    def documents(self) -> dict[str, Document]:
        served = self._group_versions()
        docs = {key: self._document(key, types) for key, types in served.items()}
        groups = {"apis/" + key.split("/")[1] for key, types in served.items() if key.startswith("apis/")}
        builtin_groups = {
            "apis/" + rt.group for types in served.values() for rt in types if rt.custom is None
        }
        for key in ("api", "apis", "version", *sorted(groups & builtin_groups)):
            doc = self._others.get(key)
            if doc is None and key in builtin_data()["others"]:
                doc = self._others[key] = Document.of(builtin_data()["others"][key])
            if doc is not None:
                docs[key] = doc
        return docs

    def discovery(self) -> Document:
        """``{"paths": {"api/v1": {"serverRelativeURL": "/openapi/v3/api/v1?hash=..."}, ...}}``."""
        docs = self.documents()
        state = tuple(sorted((k, d.etag) for k, d in docs.items()))
        if self._discovery is not None and self._discovery[0] == state:
            return self._discovery[1]
        paths = {k: {"serverRelativeURL": relative_url(k, etag)} for k, etag in state}
        built = Document.of({"paths": paths})
        self._discovery = (state, built)
        return built

    def v2(self) -> Document:
        docs = self.documents()
        state = tuple(sorted((k, d.etag) for k, d in docs.items()))
        if self._v2 is not None and self._v2[0] == state:
            return self._v2[1]
        builtin = {
            key: [rt for rt in types if rt.custom is None] for key, types in self._group_versions().items()
        }
        built = Document.of(to_v2([docs[k].doc for k, _ in state], builtin))
        self._v2 = (state, built)
        return built


def _same(a: list[ResourceType], b: list[ResourceType]) -> bool:
    """The same type objects: the catalog makes new ones whenever a CRD changes."""
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


def relative_url(key: str, etag: str) -> str:
    return f"/openapi/v3/{key}?hash={etag}"
