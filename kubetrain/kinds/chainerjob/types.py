# ruff: noqa: RUF009  (`wire()` returns a dataclasses.field; the call is the declaration, not a shared default)
"""Wire types of ChainerJob (`kubeflow.org/v1alpha1`, archived; docs/upstream-behaviour.md#chainerjob).

It predates the common v1 types, so it has its own spec and status: a copy of its master batch/v1
Job's status. Unknown keys are kept in `extra`, so old manifests round-trip unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass

from kubetrain.api.types import DATE_TIME as _DATE_TIME
from kubetrain.api.types import I32, I64, Envelope, JsonDict, wire
from kubetrain.api.types import REQUIRED as _REQUIRED
from kubetrain.api.types import extra_keys as _extra


@dataclass
class MPIConfig:
    slots: I32 | None = wire("slots")
    extra: JsonDict = _extra()


@dataclass
class ChainerMasterSpec:
    active_deadline_seconds: I64 | None = wire("activeDeadlineSeconds")
    backoff_limit: I32 | None = wire("backoffLimit")
    mpi_config: MPIConfig | None = wire("mpiConfig")
    template: JsonDict | None = wire("template", schema="pod-template")
    extra: JsonDict = _extra()


@dataclass
class WorkerSetSpec:
    replicas: I32 | None = wire("replicas")
    mpi_config: MPIConfig | None = wire("mpiConfig")
    template: JsonDict | None = wire("template", schema="pod-template")
    extra: JsonDict = _extra()


@dataclass
class ChainerJobSpec:
    backend: str | None = wire("backend")
    master: ChainerMasterSpec | None = wire("master", schema=_REQUIRED)
    worker_sets: dict[str, WorkerSetSpec | None] | None = wire("workerSets")
    extra: JsonDict = _extra()


@dataclass
class BatchJobCondition:
    """batch/v1 JobCondition (Complete / Failed / Suspended ...)."""

    type: str = wire("type", default="", schema=_REQUIRED)
    status: str = wire("status", default="", schema=_REQUIRED)
    last_probe_time: str | None = wire("lastProbeTime", schema=_DATE_TIME)
    last_transition_time: str | None = wire("lastTransitionTime", schema=_DATE_TIME)
    reason: str | None = wire("reason")
    message: str | None = wire("message")
    extra: JsonDict = _extra()


@dataclass
class ChainerJobStatus:
    """A copy of the master batch/v1 Job's status (only the fields upstream's JobStatus had)."""

    conditions: list[BatchJobCondition] | None = wire("conditions")
    start_time: str | None = wire("startTime", schema=_DATE_TIME)
    completion_time: str | None = wire("completionTime", schema=_DATE_TIME)
    active: I32 = wire("active", default=0, omitzero=True)
    succeeded: I32 = wire("succeeded", default=0, omitzero=True)
    failed: I32 = wire("failed", default=0, omitzero=True)
    extra: JsonDict = _extra()


@dataclass
class ChainerJob(Envelope):
    spec: ChainerJobSpec | None = wire("spec")
    status: ChainerJobStatus | None = wire("status")
    extra: JsonDict = _extra()
