"""One kind's validating webhook: an AdmissionRequest in, an AdmissionResponse out (no I/O).

The rules themselves live in `kubetrain.api.validation` (shared with the controller, which
re-validates because a webhook can be bypassed or absent); this module only maps admission
operations onto them the way controller-runtime's `CustomValidator` plumbing does:

* CREATE validates `object`; UPDATE validates `object` against `oldObject`, so the immutability
  rules (managedBy, schedulingPolicy.queue) apply; an UPDATE without `oldObject` is a malformed
  request (controller-runtime fails to decode it the same way);
* DELETE and CONNECT are allowed (upstream's `ValidateDelete` returns nothing);
* an object of another kind than the path's is a 400, never a silent allow.

MXJob: upstream 1.8 served a webhook that always allowed with a deprecation warning, and 1.9
dropped the kind. We validate MXJob with the ≤1.7 controller rules instead (a job that the
controller would fail later is better refused at `kubectl apply`), and keep a deprecation warning.

MPIJob (v1 and v2beta1), ChainerJob and Caffe2Job get no webhook, as upstream: their controllers
validate (mpi-operator: a Warning `ValidationError` event and nothing else; training-operator's
v1 MPIJob: Failed with `MPIJobFailedValidation`), and `kubetrain validate` runs the same checks
offline. A webhook would have to pick one of the two MPIJob versions' rule sets for a request
whose mechanics the conversion rule decides later (`kubetrain.kinds.mpijob.conversion`), and would put
the operator in the path of every MPIJob write, including Kueue's v2beta1 ones, which
mpi-operator never did. So `routes()` serves the kinds whose registration says `webhook` (the
six generic kinds, and Trainer v2's three, whose registrations bring their own rules: `admit`).

A kind's own rules may read other objects (a TrainJob's runtime) through `lookup`: the local plane
passes one over its store, the operator's TLS server one over its caches of the kinds the
registrations' `admission_reads` name; without one, such rules check what the object holds.
"""

from __future__ import annotations

from collections.abc import Iterable

from kubetrain.api.kinds import KindInfo
from kubetrain.api.validation import aggregate, validate_raw_with_warnings, webhook_name, webhook_path
from kubetrain.kinds import registry as kind_registry
from kubetrain.kinds.registration import Lookup
from kubetrain.webhook.review import (
    CONNECT,
    DELETE,
    UPDATE,
    AdmissionRequest,
    AdmissionResponse,
    allowed,
    denied,
    errored,
)

DEPRECATED_KINDS: dict[str, str] = {
    reg.kind: reg.admission_warning for reg in kind_registry.REGISTRY if reg.admission_warning
}
"""Admission warnings added for every CREATE/UPDATE of a kind, whatever its validity."""


def routes(kinds: Iterable[KindInfo] | None = None) -> dict[str, KindInfo]:
    """Path -> kind for every kind served (all registered kinds by default)."""
    return {webhook_path(info): info for info in (kind_registry.webhook_kinds() if kinds is None else kinds)}


def names(kinds: Iterable[KindInfo] | None = None) -> dict[str, KindInfo]:
    """Webhook name (as in the ValidatingWebhookConfiguration) -> kind."""
    return {webhook_name(info): info for info in (kind_registry.webhook_kinds() if kinds is None else kinds)}


def admit(info: KindInfo, request: AdmissionRequest, lookup: Lookup | None = None) -> AdmissionResponse:
    """Validate one admission request for `info`'s path."""
    uid = request.uid
    if request.operation in (DELETE, CONNECT):
        return allowed(uid)
    obj = request.object
    if not isinstance(obj, dict):
        return errored(uid, 400, "there is no content to decode")
    mismatch = _kind_mismatch(info, obj)
    if mismatch:
        return errored(uid, 400, mismatch)
    old = None
    if request.operation == UPDATE:
        old = request.old_object
        if not isinstance(old, dict):
            return errored(uid, 400, "there is no content to decode: UPDATE without oldObject")
    reg = kind_registry.registration_for(info.kind)
    if reg is not None and reg.admit is not None:
        verdict = reg.admit(obj, old, lookup)
        if verdict.message:
            return denied(uid, verdict.message, verdict.warnings)
        if verdict.errors:
            return denied(uid, aggregate(verdict.errors), verdict.warnings)
        return allowed(uid, verdict.warnings)
    _, _, result = validate_raw_with_warnings(obj, old, kinds={info.kind: info})
    warnings = tuple(result.warnings)
    if info.kind in DEPRECATED_KINDS:
        warnings += (DEPRECATED_KINDS[info.kind],)
    if result.errors:
        return denied(uid, aggregate(result.errors), warnings)
    return allowed(uid, warnings)


def _kind_mismatch(info: KindInfo, obj: dict[str, object]) -> str:
    kind, api_version = obj.get("kind"), obj.get("apiVersion")
    if kind == info.kind and api_version == info.api_version:
        return ""
    return (
        f"this webhook validates {info.api_version}, Kind={info.kind}; "
        f"got apiVersion={api_version!r}, kind={kind!r}"
    )
