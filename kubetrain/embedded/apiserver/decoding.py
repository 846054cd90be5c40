"""Decoding checks: what Go's encoding/json refuses before kube-apiserver ever sees an object.

A body whose metadata (or a ConfigMap's or Secret's data) has the wrong JSON type is a 400
``... cannot be handled as a <Kind>: json: cannot unmarshal <json type> into Go struct field ...``,
and nothing is stored. Lone UTF-16 surrogates in strings become U+FFFD, as Go decodes them.
"""

from __future__ import annotations

import json
import re
from typing import Any

from . import errors
from .jsonutil import loads
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
_SURROGATE = re.compile("[\ud800-\udfff]")


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


def _replace_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {_replace_surrogates(k): _replace_surrogates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace_surrogates(v) for v in value]
    return value


def decode_json(data: bytes | str) -> Any:
    """Parse a request body; a lone surrogate (which orjson refuses) decodes to U+FFFD, as in Go."""
    try:
        return loads(data)
    except ValueError as exc:
        if "surrogate" not in str(exc):
            raise
    return _replace_surrogates(json.loads(data))
