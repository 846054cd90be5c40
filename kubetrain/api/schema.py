"""Structural OpenAPI v3 schemas derived from the wire dataclasses.

The CRDs must describe exactly the fields the codec reads and writes, so the schema is computed
from the same type hints instead of being written by hand per kind: adding a field to a type adds it
to every CRD that uses it. A field's `schema` metadata (see `kubetrain.api.types.wire`) names a
shared schema or adds a format, a default or a CEL rule where the type hint alone cannot say it.

Every node carries a `type` (or `x-kubernetes-int-or-string` / preserve-unknown-fields), which is
what a kube-apiserver requires of a structural schema.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import types as pytypes
import typing
from typing import Any, Union, get_args, get_origin

from kubetrain.api.types import Int32, Int64

Schema = dict[str, Any]

QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
    r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)

_PRESERVE: Schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}

# Pod templates stay free-form (the pod API server validates pods when the operator creates them),
# except that every template must declare containers and every container a name: the two facts
# upstream's CRD enforces and the operator relies on.
_CONTAINER_LIST: Schema = {
    "type": "array",
    "items": {**_PRESERVE, "properties": {"name": {"type": "string"}}, "required": ["name"]},
}
_POD_TEMPLATE: Schema = {
    **_PRESERVE,
    "properties": {
        "metadata": dict(_PRESERVE),
        "spec": {**_PRESERVE, "properties": {"containers": _CONTAINER_LIST}, "required": ["containers"]},
    },
}

NAMED_SCHEMAS: dict[str, Schema] = {
    "pod-template": _POD_TEMPLATE,
    "quantity-map": {
        "type": "object",
        "additionalProperties": {
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "pattern": QUANTITY_PATTERN,
            "x-kubernetes-int-or-string": True,
        },
    },
    # autoscaling/v2 MetricSpec: only `type` is required there; the HPA API validates the rest.
    "metric-list": {
        "type": "array",
        "items": {**_PRESERVE, "properties": {"type": {"type": "string"}}, "required": ["type"]},
    },
    "label-selector": {**_PRESERVE, "x-kubernetes-map-type": "atomic"},
}

_INT_FORMATS = {Int32: "int32", Int64: "int64"}


def _strip_optional(hint: Any) -> Any:
    if get_origin(hint) in (Union, pytypes.UnionType):
        args = [a for a in get_args(hint) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return hint


def schema_for_hint(hint: Any) -> Schema:
    """The schema of one type hint (Optional is transparent: absence is how JSON says None)."""
    hint = _strip_optional(hint)
    origin = get_origin(hint)
    if origin is typing.Annotated:
        base, *markers = get_args(hint)
        if base is int:
            return {"type": "integer", "format": _INT_FORMATS.get(markers[0] if markers else Int64, "int64")}
        return schema_for_hint(base)
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return schema_for_dataclass(hint)
    if origin is dict:
        _, val_hint = get_args(hint)
        return {"type": "object", "additionalProperties": schema_for_hint(val_hint)}
    if origin is list:
        (item_hint,) = get_args(hint)
        return {"type": "array", "items": schema_for_hint(item_hint)}
    if hint is int:
        return {"type": "integer", "format": "int64"}
    if hint is bool:
        return {"type": "boolean"}
    if hint is str:
        return {"type": "string"}
    if hint is Any:
        return {"x-kubernetes-preserve-unknown-fields": True}
    raise TypeError(f"schema: unsupported type hint {hint!r}")


def _field_schema(hint: Any, meta_schema: Any) -> tuple[Schema, bool]:
    """A field's schema and whether its parent must list it as required."""
    if isinstance(meta_schema, str):
        return copy.deepcopy(NAMED_SCHEMAS[meta_schema]), False
    node = schema_for_hint(hint)
    required = False
    if isinstance(meta_schema, dict):
        extra = dict(meta_schema)
        required = bool(extra.pop("required", False))
        node.update(copy.deepcopy(extra))
    return node, required


@functools.cache
def _dataclass_schema(cls: type) -> Schema:
    hints = typing.get_type_hints(cls, include_extras=True)
    properties: Schema = {}
    required: list[str] = []
    for f in dataclasses.fields(cls):
        if f.metadata.get("extra"):
            continue
        node, is_required = _field_schema(hints[f.name], f.metadata.get("schema"))
        properties[f.metadata["json"]] = node
        if is_required:
            required.append(f.metadata["json"])
    out: Schema = {"type": "object", "properties": properties}
    if required:
        out["required"] = sorted(required)
    return out


def schema_for_dataclass(cls: type) -> Schema:
    """The object schema of a wire dataclass; a fresh copy the caller may change."""
    return copy.deepcopy(_dataclass_schema(cls))


def iter_nodes(node: Any, path: str = "") -> typing.Iterator[tuple[str, Schema]]:
    """Every schema node below `node` with a readable path (for structural checks in tests)."""
    if not isinstance(node, dict):
        return
    yield path or "<root>", node
    for key, child in node.get("properties", {}).items():
        yield from iter_nodes(child, f"{path}.{key}")
    if isinstance(node.get("additionalProperties"), dict):
        yield from iter_nodes(node["additionalProperties"], f"{path}[*]")
    if "items" in node:
        yield from iter_nodes(node["items"], f"{path}[]")
