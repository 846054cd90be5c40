"""One exception type for every failed API call, with the predicates callers branch on."""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """An API call failed: `status` is the HTTP code, 0 for a connection-level failure."""

    def __init__(
        self,
        status: int,
        reason: str = "",
        message: str = "",
        body: dict[str, Any] | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"{status} {reason}: {message}" if message else f"{status} {reason}")
        self.status = status
        self.reason = reason
        self.message = message
        self.body = body
        self.retry_after = retry_after

    @property
    def not_found(self) -> bool:
        return self.status == 404

    @property
    def conflict(self) -> bool:
        """409 of any kind (optimistic concurrency or AlreadyExists)."""
        return self.status == 409

    @property
    def already_exists(self) -> bool:
        return self.status == 409 and self.reason == "AlreadyExists"

    @property
    def gone(self) -> bool:
        return self.status == 410

    @property
    def too_many_requests(self) -> bool:
        return self.status == 429

    @property
    def server_error(self) -> bool:
        return self.status >= 500

    @property
    def connection_error(self) -> bool:
        return self.status == 0

    @classmethod
    def from_status(cls, http_status: int, body: Any, retry_after: float | None = None) -> ApiError:
        """Build from a response body that is (usually) a metav1.Status."""
        if isinstance(body, dict) and body.get("kind") == "Status":
            return cls(
                int(body.get("code") or http_status),
                str(body.get("reason") or ""),
                str(body.get("message") or ""),
                body,
                retry_after,
            )
        text = body if isinstance(body, str) else ""
        return cls(http_status, _default_reason(http_status), text[:500], None, retry_after)


_REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


def _default_reason(status: int) -> str:
    return _REASONS.get(status, "Unknown")
