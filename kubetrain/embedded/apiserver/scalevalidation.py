"""apiextensions' checks of a custom resource's scale paths (customresource/validator.go).

A CRD with a ``scale`` subresource has its replica counts read as int64 and its selector as a
string (`unstructured.NestedInt64` / `NestedString`), on every write, after the schema: a value of
another type is ``<path>: Invalid value: 0: <path> accessor error: 3 is of the type float64,
expected int64``. The schema's `integer` takes ``3.0`` (kube-openapi's isFloatInt); these paths do
not, because Go decoded it as a float64. Missing values are fine.
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

from .errors import FieldError
from .resources import ScalePaths

_MAX_INT32 = 2**31 - 1


def _go_type(value: Any) -> str:
    """Go's %T of a decoded JSON value."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    return "[]interface {}" if isinstance(value, list) else "map[string]interface {}"


def _go_float(value: float) -> str:
    """Go's %v of a float64: the shortest digits, in %e form below 1e-4 and from 1e+06 on."""
    if value == 0 or not math.isfinite(value):
        return {math.inf: "+Inf", -math.inf: "-Inf"}.get(value, "NaN" if value != value else "0")
    sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
    assert isinstance(exponent, int)
    text = "".join(map(str, digits))
    point = exponent + len(text) - 1  # the decimal exponent of the first digit
    if point < -4 or point >= 6:
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        shown = f"{mantissa}e{'-' if point < 0 else '+'}{abs(point):02d}"
    elif point >= 0:
        whole = text[: point + 1].ljust(point + 1, "0")
        shown = whole + ("." + text[point + 1 :] if len(text) > point + 1 else "")
    else:
        shown = "0." + "0" * (-point - 1) + text
    return ("-" if sign else "") + shown


def _go_print(value: Any) -> str:
    """Go's %v of a decoded JSON value. Iterative: a poison object nests thousands deep."""
    out: list[str] = []
    todo: list[tuple[bool, Any]] = [(False, value)]  # (is literal text, item)
    while todo:
        literal, item = todo.pop()
        if literal:
            out.append(item)
        elif item is None:
            out.append("<nil>")
        elif isinstance(item, bool):
            out.append("true" if item else "false")
        elif isinstance(item, float):
            out.append(_go_float(item))
        elif isinstance(item, list | dict):
            parts: list[tuple[bool, Any]] = []
            entries = sorted(item.items()) if isinstance(item, dict) else list(enumerate(item))
            for i, (key, child) in enumerate(entries):
                prefix = (" " if i else "") + (f"{key}:" if isinstance(item, dict) else "")
                parts += [(True, prefix), (False, child)]
            opening = "map[" if isinstance(item, dict) else "["
            todo += [(True, "]"), *reversed(parts), (True, opening)]
        else:
            out.append(str(item))
    return "".join(out)


def _accessor_error(fields: list[str], value: Any, want: str) -> str:
    shown = "." + ".".join(fields)
    return f"{shown} accessor error: {_go_print(value)} is of the type {_go_type(value)}, expected {want}"


def _nested(obj: Any, path: str, want: str) -> tuple[Any, str | None]:
    """`unstructured.NestedFieldNoCopy` then the type check: (value or None, accessor error)."""
    fields = path.removeprefix(".").split(".")
    node = obj
    for i, name in enumerate(fields):
        if node is None:  # a null on the way: not found
            return None, None
        if not isinstance(node, dict):
            return None, _accessor_error(fields[: i + 1], node, "map[string]interface{}")
        if name not in node:
            return None, None
        node = node[name]
    if _go_type(node) != want:
        return None, _accessor_error(fields, node, want)
    return node, None


def _replicas_errors(obj: Any, path: str) -> list[FieldError]:
    value, error = _nested(obj, path, "int64")
    if error is not None:
        return [FieldError("FieldValueInvalid", path, 0, error)]
    if value is not None and value < 0:
        return [FieldError("FieldValueInvalid", path, value, "should be a non-negative integer")]
    if value is not None and value > _MAX_INT32:
        return [FieldError("FieldValueInvalid", path, value, f"should be less than or equal to {_MAX_INT32}")]
    return []


def scale_spec_errors(obj: Any, scale: ScalePaths | None) -> list[FieldError]:
    """`ValidateScaleSpec`: the spec replicas path."""
    return [] if scale is None else _replicas_errors(obj, scale.spec_replicas)


def scale_status_errors(obj: Any, scale: ScalePaths | None) -> list[FieldError]:
    """`ValidateScaleStatus`: the status replicas path and the label selector path."""
    if scale is None:
        return []
    errs = _replicas_errors(obj, scale.status_replicas)
    if scale.label_selector:
        _, error = _nested(obj, scale.label_selector, "string")
        if error is not None:
            errs.append(FieldError("FieldValueInvalid", scale.label_selector, "", error))
    return errs
