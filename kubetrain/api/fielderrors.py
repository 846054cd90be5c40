"""Kubernetes-style field errors, formatted exactly like apimachinery's `field.Error`.

Upstream webhooks and the API server report `<path>: <Type>: <detail>`; users and tools grep for
those strings, so we reproduce the format byte for byte.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from kubetrain.kube.jsonsafe import too_deep


class ErrorType(StrEnum):
    REQUIRED = "Required value"
    INVALID = "Invalid value"
    FORBIDDEN = "Forbidden"
    NOT_SUPPORTED = "Unsupported value"
    DUPLICATE = "Duplicate value"
    TOO_LONG = "Too long"
    NOT_FOUND = "Not found"


_OMIT = object()
_SHOWN_DEPTH = 32
"""Deeper bad values are named, not rendered (json.dumps recurses; user data may nest 10,000 deep)."""
# Types whose message never shows the bad value (as in apimachinery's ErrorBody).
_VALUELESS = {ErrorType.REQUIRED, ErrorType.FORBIDDEN, ErrorType.TOO_LONG}


def _go_value(value: Any) -> str:
    """Render a bad value as apimachinery's `ErrorBody` does: simple types as %v / %q, the rest
    as Go's `json.Marshal` (compact, map keys sorted, <, > and & escaped). A Go struct keeps its
    field order where a map's keys are sorted; most of ours (EnvVar, ResourceRequirements) sort
    the same, RuntimeRef (name, apiGroup, kind) does not."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, int | float):
        return str(value)
    if value is None:
        return "null"
    if too_deep(value, _SHOWN_DEPTH) is not None:
        return f"<{'object' if isinstance(value, dict) else 'array'} nested more than {_SHOWN_DEPTH} levels>"
    text = json.dumps(value, sort_keys=True, default=str, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


@dataclass(frozen=True)
class FieldError:
    type: ErrorType
    field: str
    detail: str = ""
    bad_value: Any = _OMIT

    def body(self) -> str:
        if self.type in _VALUELESS or self.bad_value is _OMIT:
            text = self.type.value
        else:
            text = f"{self.type.value}: {_go_value(self.bad_value)}"
        if self.detail:
            text += f": {self.detail}"
        return text

    def __str__(self) -> str:
        return f"{self.field}: {self.body()}"


def required(path: str, detail: str = "") -> FieldError:
    return FieldError(ErrorType.REQUIRED, path, detail)


def invalid(path: str, value: Any, detail: str = "") -> FieldError:
    return FieldError(ErrorType.INVALID, path, detail, value)


def forbidden(path: str, detail: str = "") -> FieldError:
    return FieldError(ErrorType.FORBIDDEN, path, detail)


def not_supported(path: str, value: Any, supported: Iterable[str]) -> FieldError:
    options = ", ".join(json.dumps(s) for s in supported)
    return FieldError(ErrorType.NOT_SUPPORTED, path, f"supported values: {options}" if options else "", value)


class ErrorList(list[FieldError]):
    """An ordered list of field errors; `str()` is apimachinery's aggregate format."""

    def __str__(self) -> str:
        if len(self) == 1:
            return str(self[0])
        return "[" + ", ".join(str(e) for e in self) + "]"

    def messages(self) -> Iterator[str]:
        return (str(e) for e in self)


class ValidationError(Exception):
    """Raised at API boundaries that must refuse an object; carries the field errors."""

    def __init__(self, errors: ErrorList, kind: str = "", name: str = "") -> None:
        self.errors = errors
        self.kind = kind
        self.name = name
        prefix = f'{kind}.kubeflow.org "{name}" is invalid: ' if kind else ""
        super().__init__(prefix + str(errors))


@dataclass
class ValidationResult:
    """Field errors (the request is denied if any) and admission warnings (shown, not fatal)."""

    errors: ErrorList = field(default_factory=ErrorList)
    warnings: list[str] = field(default_factory=list)
