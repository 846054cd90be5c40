"""Kubernetes ``Status`` errors, built the way k8s.io/apimachinery/pkg/api/errors builds them.

Every failure leaves the server as a ``Status`` object with the same code, reason, message and
details a kube-apiserver would write, because clients branch on ``reason`` and users read
``message``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


class APIError(Exception):
    """A failure that is answered with a Kubernetes Status object."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        details: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = headers or {}

    def status(self) -> dict[str, Any]:
        """The Status body, keys in the order kube-apiserver writes them."""
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
        }
        if self.reason:  # StatusReasonUnknown is omitted on the wire
            body["reason"] = self.reason
        if self.details is not None:
            body["details"] = self.details
        body["code"] = self.code
        return body


def qualified(group: str, name: str) -> str:
    """``schema.GroupResource.String()`` / ``GroupKind.String()``: ``pods`` or ``tfjobs.kubeflow.org``."""
    return f"{name}.{group}" if group else name


def _details(group: str, kind: str, name: str | None = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if name:
        out["name"] = name
    if group:
        out["group"] = group
    if kind:
        out["kind"] = kind
    out.update({k: v for k, v in extra.items() if v})
    return out


def not_found(group: str, resource: str, name: str) -> APIError:
    return APIError(
        404, "NotFound", f'{qualified(group, resource)} "{name}" not found', _details(group, resource, name)
    )


def path_not_found() -> APIError:
    """An URL that names no known resource."""
    return APIError(404, "NotFound", "the server could not find the requested resource", {})


def already_exists(group: str, resource: str, name: str, being_deleted: bool = False) -> APIError:
    """``being_deleted``: the name is held by an object waiting for its finalizers or grace."""
    prefix = "object is being deleted: " if being_deleted else ""
    return APIError(
        409,
        "AlreadyExists",
        f'{prefix}{qualified(group, resource)} "{name}" already exists',
        _details(group, resource, name),
    )


def conflict(group: str, resource: str, name: str, err: str) -> APIError:
    return APIError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {qualified(group, resource)} "{name}": {err}',
        _details(group, resource, name),
    )


MODIFIED = "the object has been modified; please apply your changes to the latest version and try again"


def forbidden(group: str, resource: str, name: str, err: str) -> APIError:
    return APIError(
        403,
        "Forbidden",
        f'{qualified(group, resource)} "{name}" is forbidden: {err}',
        _details(group, resource, name),
    )


def bad_request(message: str) -> APIError:
    return APIError(400, "BadRequest", message)


def method_not_supported(group: str, resource: str, action: str) -> APIError:
    return APIError(
        405,
        "MethodNotAllowed",
        f'{action} is not supported on resources of kind "{qualified(group, resource)}"',
        _details(group, resource),
    )


def router_unsupported_media_type() -> APIError:
    """The answer to a Content-Type no patch route consumes: go-restful's message in a Status."""
    return APIError(415, "UnsupportedMediaType", "415: Unsupported Media Type", {})


def unsupported_media_type(message: str) -> APIError:
    return APIError(415, "UnsupportedMediaType", message)


def expired(message: str) -> APIError:
    """410 with reason Expired, what the watch cache answers for a compacted resourceVersion."""
    return APIError(410, "Expired", message)


def too_many_requests(message: str, retry_after: int) -> APIError:
    return APIError(
        429,
        "TooManyRequests",
        message,
        {"retryAfterSeconds": retry_after},
        headers={"Retry-After": str(retry_after)},
    )


def internal(message: str) -> APIError:
    return APIError(
        500, "InternalError", f"Internal error occurred: {message}", {"causes": [{"message": message}]}
    )


def service_unavailable(message: str) -> APIError:
    return APIError(503, "ServiceUnavailable", message)


def unprocessable(
    message: str = "the server rejected our request due to an error in our request",
) -> APIError:
    """NewGenericServerResponse(422): what a failed JSON patch becomes."""
    return APIError(422, "Invalid", message, {})


_TYPE_TEXT = {
    "FieldValueRequired": "Required value",
    "FieldValueInvalid": "Invalid value",
    "FieldValueTypeInvalid": "Invalid value",
    "FieldValueNotSupported": "Unsupported value",
    "FieldValueForbidden": "Forbidden",
    "FieldValueDuplicate": "Duplicate value",
    "FieldValueTooLong": "Too long",
    "FieldValueTooMany": "Too many",
    "FieldValueNotFound": "Not found",
}
_NO_VALUE = {"FieldValueRequired", "FieldValueForbidden", "FieldValueTooLong", "FieldValueTooMany"}


def _go_value(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    from .jsonutil import dumps

    return dumps(value).decode()


@dataclass(frozen=True)
class FieldError:
    """One entry of a ``field.ErrorList``."""

    type: str
    field: str
    value: Any = None
    detail: str = ""

    def body(self) -> str:
        """``field.Error.ErrorBody()``."""
        text = _TYPE_TEXT.get(self.type, "Invalid value")
        if self.type not in _NO_VALUE:
            text = f"{text}: {_go_value(self.value)}"
        if self.detail:
            text = f"{text}: {self.detail}"
        return text

    def __str__(self) -> str:
        return f"{self.field}: {self.body()}" if self.field else self.body()


def invalid(group: str, kind: str, name: str, errs: list[FieldError]) -> APIError:
    """``errors.NewInvalid``: 422 with one cause per field error."""
    shown = list(dict.fromkeys(str(e) for e in errs))  # ToAggregate drops repeated messages
    agg = shown[0] if len(shown) == 1 else "[" + ", ".join(shown) + "]"
    causes = [{"reason": e.type, "message": e.body(), "field": e.field} for e in errs]
    details: dict[str, Any] = {}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    details["kind"] = kind
    details["causes"] = causes
    return APIError(422, "Invalid", f'{qualified(group, kind)} "{name}" is invalid: {agg}', details)
