"""The admission.k8s.io AdmissionReview wire format: decode a request, encode a response.

Shaped after controller-runtime's webhook handler (the one upstream's operator uses) so that the
API server, and anything that inspects our answers, sees the same bytes:

* allowed  -> `status: {code: 200}`;
* denied   -> `status: {code: 403, reason: Forbidden, message: <aggregated field errors>}`
  (controller-runtime's `admission.Denied`; the API server prefixes the message with
  `admission webhook "<name>" denied the request: `, see `rejection_status`);
* malformed request -> HTTP 200 carrying `allowed: false, status: {code: 400, message}`
  (controller-runtime's `admission.Errored`): the API server can still parse the answer and shows
  the message, where a bare HTTP 400 would surface as an opaque "failed calling webhook".

A review is answered in the apiVersion it came in (v1, or the identical v1beta1).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubetrain.kube import jsonsafe

ADMISSION_V1 = "admission.k8s.io/v1"
ADMISSION_V1BETA1 = "admission.k8s.io/v1beta1"
SUPPORTED_VERSIONS = (ADMISSION_V1, ADMISSION_V1BETA1)
KIND = "AdmissionReview"
JSON_CONTENT_TYPE = "application/json"

CREATE = "CREATE"
UPDATE = "UPDATE"
DELETE = "DELETE"
CONNECT = "CONNECT"
OPERATIONS = (CREATE, UPDATE, DELETE, CONNECT)

JsonDict = dict[str, Any]


class MalformedReview(ValueError):
    """The body is not an AdmissionReview request we can answer (-> an `errored` response)."""


@dataclass(frozen=True)
class AdmissionRequest:
    """The fields of `AdmissionReview.request` a validating webhook uses."""

    uid: str
    operation: str
    object: Any = None
    old_object: Any = None
    kind: JsonDict = field(default_factory=dict)
    namespace: str = ""
    name: str = ""
    dry_run: bool = False


@dataclass(frozen=True)
class AdmissionResponse:
    """`AdmissionReview.response`: `status` is a metav1.Status (without kind/apiVersion)."""

    uid: str
    allowed: bool
    status: JsonDict
    warnings: tuple[str, ...] = ()

    def to_dict(self) -> JsonDict:
        out: JsonDict = {"uid": self.uid, "allowed": self.allowed, "status": self.status}
        if self.warnings:
            out["warnings"] = list(self.warnings)
        return out


def parse_review(body: bytes, content_type: str | None) -> tuple[AdmissionRequest, str]:
    """The request and the review's apiVersion; raises MalformedReview with a readable reason."""
    media_type = (content_type or "").split(";", 1)[0].strip().lower()
    if media_type != JSON_CONTENT_TYPE:
        raise MalformedReview(f"contentType={content_type or ''}, expected {JSON_CONTENT_TYPE}")
    if not body:
        raise MalformedReview("request body is empty")
    try:
        review = jsonsafe.loads(body)  # any depth; lone surrogates become U+FFFD, as in Go
    except (ValueError, UnicodeDecodeError) as exc:
        raise MalformedReview(f"couldn't decode AdmissionReview: {exc}") from exc
    if not isinstance(review, dict):
        raise MalformedReview("couldn't decode AdmissionReview: not a JSON object")
    api_version = review.get("apiVersion")
    if review.get("kind") != KIND or api_version not in SUPPORTED_VERSIONS:
        raise MalformedReview(
            f"expected {KIND} in {' or '.join(SUPPORTED_VERSIONS)}, "
            f"got kind={review.get('kind')!r} apiVersion={api_version!r}"
        )
    request = review.get("request")
    if not isinstance(request, dict):
        raise MalformedReview("AdmissionReview has no request")
    return _request(request), str(api_version)


def _request(raw: JsonDict) -> AdmissionRequest:
    uid = raw.get("uid")
    if not isinstance(uid, str) or not uid:
        raise MalformedReview("AdmissionReview request has no uid")
    operation = raw.get("operation")
    if operation not in OPERATIONS:
        raise MalformedReview(f"unknown operation {operation!r}")
    kind = raw.get("kind")
    return AdmissionRequest(
        uid=uid,
        operation=str(operation),
        object=raw.get("object"),
        old_object=raw.get("oldObject"),
        kind=kind if isinstance(kind, dict) else {},
        namespace=str(raw.get("namespace") or ""),
        name=str(raw.get("name") or ""),
        dry_run=bool(raw.get("dryRun")),
    )


def allowed(uid: str, warnings: tuple[str, ...] = ()) -> AdmissionResponse:
    """controller-runtime's `admission.Allowed("")`."""
    return AdmissionResponse(uid, True, {"metadata": {}, "code": 200}, warnings)


def denied(uid: str, message: str, warnings: tuple[str, ...] = ()) -> AdmissionResponse:
    """controller-runtime's `admission.Denied(msg)`: 403 Forbidden with the bare message."""
    status = {"metadata": {}, "message": message, "reason": "Forbidden", "code": 403}
    return AdmissionResponse(uid, False, status, warnings)


def errored(uid: str, code: int, message: str) -> AdmissionResponse:
    """controller-runtime's `admission.Errored(code, err)`: no reason, just code and message."""
    return AdmissionResponse(uid, False, {"metadata": {}, "message": message, "code": code})


def review_body(response: AdmissionResponse, api_version: str = ADMISSION_V1) -> JsonDict:
    """The AdmissionReview envelope written back to the API server."""
    return {"kind": KIND, "apiVersion": api_version, "response": response.to_dict()}


def rejection_status(webhook: str, response: AdmissionResponse) -> JsonDict:
    """The metav1.Status the API server returns to the client for a denial (its `ToStatusErr`).

    Lets tests (and an embedded API server that calls webhooks) show exactly what `kubectl apply`
    prints without a real kube-apiserver in the loop.
    """
    status = dict(response.status)
    code = int(status.get("code") or 0)
    message = str(status.get("message") or "")
    denied_by = f'admission webhook "{webhook}" denied the request'
    reason = str(status.get("reason") or "")
    if message or reason:
        text = f"{denied_by}: {message or reason}"
    else:
        text = f"{denied_by} without explanation"
    out: JsonDict = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": text,
        "code": code if code >= 400 else 400,
    }
    if reason:
        out["reason"] = reason
    return out
