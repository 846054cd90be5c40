"""Decode raw JSON-like dicts into the wire dataclasses and encode them back, losing nothing.

Decoding never raises on bad input: a wrong type becomes a field error naming the path and what
was expected, and the field is left unset, so validation can report every problem at once and a
malformed job can never crash the operator. Keys we do not model go to `extra` and come back out
on encode.
"""

from __future__ import annotations

import dataclasses
import functools
import types as pytypes
import typing
from collections.abc import Callable
from typing import Any, TypeVar, Union, get_args, get_origin

from kubetrain.api.fielderrors import ErrorList, ErrorType, FieldError, invalid
from kubetrain.api.types import Int32, Int64
from kubetrain.kube import jsonsafe

T = TypeVar("T")

_FAST_DEPTH = 32
"""Levels walked by recursion (fast); deeper data goes through the iterative `jsonsafe` walkers."""
_SHOWN_PATH = 160

_INT_RANGES = {
    Int32: (-(2**31), 2**31 - 1, "a 32-bit integer"),
    Int64: (-(2**63), 2**63 - 1, "a 64-bit integer"),
}


@dataclasses.dataclass(frozen=True)
class _FieldPlan:
    attr: str
    json: str
    hint: Any
    omitzero: bool


def _compute_plan(cls: type) -> tuple[tuple[_FieldPlan, ...], str | None]:
    """Per-dataclass decoding plan (resolved type hints), computed once per class."""
    hints = typing.get_type_hints(cls, include_extras=True)
    fields: list[_FieldPlan] = []
    extra_attr = None
    for f in dataclasses.fields(cls):
        if f.metadata.get("extra"):
            extra_attr = f.name
            continue
        fields.append(_FieldPlan(f.name, f.metadata["json"], hints[f.name], bool(f.metadata.get("omitzero"))))
    return tuple(fields), extra_attr


_plan: Callable[[type], tuple[tuple[_FieldPlan, ...], str | None]] = functools.cache(_compute_plan)


def json_clone(value: Any, _depth: int = 0) -> Any:
    """A deep copy of JSON-shaped data (dicts and lists of scalars), ~5x faster than deepcopy.

    Scalars are immutable and shared; that is all JSON or YAML input holds. Subtrees deeper
    than `_FAST_DEPTH` are copied iteratively: user data may nest as deep as the API server
    allows, far beyond Python's recursion limit.
    """
    if _depth >= _FAST_DEPTH:
        return jsonsafe.clone(value)
    if isinstance(value, dict):
        depth = _depth + 1
        return {k: json_clone(v, depth) for k, v in value.items()}
    if isinstance(value, list):
        depth = _depth + 1
        return [json_clone(v, depth) for v in value]
    return value


def type_name(value: Any) -> str:
    """The JSON type of a value, as the API server names it in type errors."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "null" if value is None else type(value).__name__


def _strip_optional(hint: Any) -> Any:
    origin = get_origin(hint)
    if origin in (Union, pytypes.UnionType):
        args = [a for a in get_args(hint) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return hint


def _decode_value(hint: Any, value: Any, path: str, errors: ErrorList) -> Any:
    if value is None:
        return None
    hint = _strip_optional(hint)
    origin = get_origin(hint)
    if origin is typing.Annotated:
        base, *markers = get_args(hint)
        if base is int:
            return _decode_int(value, path, errors, markers[0] if markers else Int64)
        return _decode_value(base, value, path, errors)
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        if not isinstance(value, dict):
            errors.append(invalid(path, type_name(value), "must be of type object"))
            return None
        return _decode_object(hint, value, path, errors)
    if origin is dict:
        _, val_hint = get_args(hint)
        if not isinstance(value, dict):
            errors.append(invalid(path, type_name(value), "must be of type object"))
            return None
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                errors.append(invalid(path, str(key), "keys must be strings"))
                continue
            out[key] = _decode_value(val_hint, item, f"{path}[{key}]", errors)
        return out
    if origin is list:
        (item_hint,) = get_args(hint)
        if not isinstance(value, list):
            errors.append(invalid(path, type_name(value), "must be of type array"))
            return None
        return [_decode_value(item_hint, item, f"{path}[{i}]", errors) for i, item in enumerate(value)]
    if hint is Any:
        return json_clone(value)
    if hint is int:
        return _decode_int(value, path, errors, Int64)
    if hint is bool:
        if not isinstance(value, bool):
            errors.append(invalid(path, type_name(value), "must be of type boolean"))
            return None
        return value
    if hint is str:
        if not isinstance(value, str):
            errors.append(invalid(path, type_name(value), "must be of type string"))
            return None
        return value
    raise TypeError(f"codec: unsupported type hint {hint!r} at {path}")  # a programming error, not input


def _decode_int(value: Any, path: str, errors: ErrorList, marker: Any) -> int | None:
    low, high, what = _INT_RANGES.get(marker, _INT_RANGES[Int64])
    if isinstance(value, bool) or not isinstance(value, int | float):
        errors.append(invalid(path, type_name(value), "must be of type integer"))
        return None
    if isinstance(value, float):
        if not value.is_integer():
            errors.append(invalid(path, value, "must be of type integer"))
            return None
        value = int(value)
    if not low <= value <= high:
        errors.append(invalid(path, value, f"must be {what}"))
        return None
    return value


def _decode_object(cls: type[T], data: dict[str, Any], path: str, errors: ErrorList) -> T:
    fields, extra_attr = _plan(cls)
    kwargs: dict[str, Any] = {}
    known = set()
    for fp in fields:
        known.add(fp.json)
        if fp.json in data:
            decoded = _decode_value(fp.hint, data[fp.json], f"{path}.{fp.json}" if path else fp.json, errors)
            if decoded is not None:
                kwargs[fp.attr] = decoded
    if extra_attr is not None:
        kwargs[extra_attr] = {k: json_clone(v) for k, v in data.items() if k not in known}
    return cls(**kwargs)


def decode(cls: type[T], data: Any, path: str = "") -> tuple[T | None, ErrorList]:
    """Decode `data` into `cls`; returns the object (None if not an object at all) and field errors."""
    errors = ErrorList()
    if not isinstance(data, dict):
        errors.append(invalid(path or "<root>", type_name(data), "must be of type object"))
        return None, errors
    deep = jsonsafe.too_deep(data, jsonsafe.MAX_JOB_DEPTH - (1 if path else 0), path)
    if deep is not None:
        errors.append(too_deep_error(deep))
    return _decode_object(cls, data, path, errors), errors


def too_deep_error(path: str) -> FieldError:
    """The field error for data nested beyond `MAX_JOB_DEPTH` (the path shortened to be readable)."""
    shown = path if len(path) <= _SHOWN_PATH else path[:_SHOWN_PATH] + "..."
    return FieldError(ErrorType.INVALID, shown, f"nesting too deep: at most {jsonsafe.MAX_JOB_DEPTH} levels")


def _encode_value(value: Any, depth: int = 0) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return encode(value)
    if depth >= _FAST_DEPTH:
        return jsonsafe.transform(value, _encode_leaf)
    if isinstance(value, dict):
        return {k: _encode_value(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_encode_value(v, depth + 1) for v in value]
    return value


def _encode_leaf(value: Any) -> Any:
    return encode(value) if dataclasses.is_dataclass(value) and not isinstance(value, type) else value


def encode(obj: Any) -> dict[str, Any]:
    """Encode a wire dataclass to a JSON-ready dict: None omitted, `omitzero` zeros omitted, extras kept."""
    fields, extra_attr = _plan(type(obj))
    out: dict[str, Any] = {}
    for fp in fields:
        value = getattr(obj, fp.attr)
        if value is None or (fp.omitzero and not value):
            continue
        out[fp.json] = _encode_value(value)
    if extra_attr is not None:
        for key, value in getattr(obj, extra_attr).items():
            out.setdefault(key, json_clone(value))
    return out
