"""What the kinds off the generic path share: their own planners, and for some their own envelopes.

MPIJob (`v1`, `v2beta1`), ChainerJob and Caffe2Job are each a package of `kubetrain.kinds`; each
parses with `parse_standalone` (given its served `KindInfo`s and its envelope type), and their
defaults and validation read pod templates through the helpers here. Nothing here names a kind.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from kubetrain.api.fielderrors import ErrorList, invalid, not_supported, required
from kubetrain.api.jobs import decode_job
from kubetrain.api.kinds import RESTART_NEVER, KindInfo
from kubetrain.api.types import Envelope

E = TypeVar("E", bound=Envelope)

NON_NEGATIVE = "must be greater than or equal to 0"


def parse_standalone(
    raw: Any,
    served: Sequence[KindInfo],
    envelope_cls: type[E],
    version_of: Callable[[dict[str, Any]], str] | None = None,
) -> tuple[E | None, KindInfo | None, ErrorList]:
    """Decode a job of the kind `served` describes (every served version, storage version first)
    into `envelope_cls`; never raises (like `parse_job`).

    Any served apiVersion is accepted; the spec and status are decoded with the types of the
    version `version_of(raw)` names (default: the first), whatever version the object was read as.
    """
    errors = ErrorList()
    kind = served[0].kind
    if not isinstance(raw, dict) or raw.get("kind") != kind:
        errors.append(not_supported("kind", raw.get("kind") if isinstance(raw, dict) else None, [kind]))
        return None, None, errors
    by_version = {info.version: info for info in served}
    info = by_version[version_of(raw)] if version_of is not None else served[0]
    api_versions = [version.api_version for version in served]
    if raw.get("apiVersion") not in api_versions:
        errors.append(not_supported("apiVersion", raw.get("apiVersion"), api_versions))
    job = decode_job(raw, envelope_cls, info.spec_type, info.status_type, errors)
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
