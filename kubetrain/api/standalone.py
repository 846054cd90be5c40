"""What the kinds off the generic path share: their own planners, and for some their own envelopes.

MPIJob (`v1`, `v2beta1`), ChainerJob and Caffe2Job are each a package of `kubetrain.kinds`; each
parses with `parse_standalone` (given its own `KindInfo`, envelope and status type), and their
defaults and validation read pod templates through the helpers here. Nothing here names a kind.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from kubetrain.api.codec import decode
from kubetrain.api.fielderrors import ErrorList, invalid, not_supported, required
from kubetrain.api.kinds import RESTART_NEVER, KindInfo
from kubetrain.api.types import Envelope

E = TypeVar("E", bound=Envelope)

NON_NEGATIVE = "must be greater than or equal to 0"


def refuse_kind(raw: Any, kind: str) -> tuple[None, None, ErrorList]:
    """The answer of a kind's parse to an object of another kind (or no object at all)."""
    errors = ErrorList()
    errors.append(not_supported("kind", raw.get("kind") if isinstance(raw, dict) else None, [kind]))
    return None, None, errors


def parse_standalone(
    raw: dict[str, Any], info: KindInfo, served: Sequence[KindInfo], envelope_cls: type[E], status_type: type
) -> tuple[E, KindInfo, ErrorList]:
    """Decode a job of `info`'s kind (already checked) into `envelope_cls`; never raises (like
    `parse_job`). `served` are the kind's versions (any of their apiVersions is accepted); the spec
    is decoded as `info.spec_type`, whatever version the object was read as."""
    errors = ErrorList()
    api_versions = [version.api_version for version in served]
    if raw.get("apiVersion") not in api_versions:
        errors.append(not_supported("apiVersion", raw.get("apiVersion"), api_versions))
    envelope = {k: v for k, v in raw.items() if k not in ("spec", "status")}
    job, env_errors = decode(envelope_cls, envelope)
    errors.extend(env_errors)
    assert job is not None  # envelope is a dict
    if not isinstance(raw.get("metadata", {}), dict):
        job.metadata = {}
    # Every envelope has `spec` and `status`; their types are the kind's own.
    if raw.get("spec") is not None:
        spec, spec_errors = decode(info.spec_type, raw["spec"], "spec")
        setattr(job, "spec", spec)  # noqa: B010
        errors.extend(spec_errors)
    if raw.get("status") is not None:
        status, status_errors = decode(status_type, raw["status"], "status")
        setattr(job, "status", status)  # noqa: B010
        errors.extend(status_errors)
    if not isinstance(job.metadata.get("name", ""), str):
        errors.append(invalid("metadata.name", job.metadata.get("name"), "must be of type string"))
    return job, info, errors


def containers(template: Any) -> list[Any]:
    """A pod template's containers ([] when it has none or is not a template)."""
    spec = template.get("spec") if isinstance(template, dict) else None
    found = spec.get("containers") if isinstance(spec, dict) else None
    return found if isinstance(found, list) else []


def require_containers(errs: ErrorList, path: str, template: Any) -> None:
    if not containers(template):
        errs.append(required(f"{path}.template.spec.containers", "must define at least one container"))


def with_restart_never(template: Any) -> Any:
    """A template without a pod restartPolicy gets `Never` (both archived operators did this)."""
    spec = template.get("spec") if isinstance(template, dict) else None
    if not isinstance(spec, dict) or spec.get("restartPolicy"):
        return template
    return {**template, "spec": {**spec, "restartPolicy": RESTART_NEVER}}
