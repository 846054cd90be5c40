# ruff: noqa: RUF009  (`wire()` returns a dataclasses.field; the call is the declaration, not a shared default)
"""Wire types of Caffe2Job (`kubeflow.org/v1alpha1`, archived; docs/upstream-behaviour.md#caffe2job).

It predates the common v1 types, so it has its own spec and status, whose replica status is a
single object. Unknown keys are kept in `extra`, so old manifests round-trip unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass

from kubetrain.api.types import DATE_TIME as _DATE_TIME
from kubetrain.api.types import I32, Envelope, JobCondition, JsonDict, wire
from kubetrain.api.types import REQUIRED as _REQUIRED
from kubetrain.api.types import extra_keys as _extra


@dataclass
class Caffe2BackendSpec:
    backend_type: str | None = wire("backendType")
    nfs_path: str | None = wire("nfsPath")
    redis_host: str | None = wire("redisHost")
    redis_port: I32 | None = wire("redisPort")
    extra: JsonDict = _extra()


@dataclass
class Caffe2ReplicaSpec:
    replicas: I32 | None = wire("replicas")
    template: JsonDict | None = wire("template", schema="pod-template")
    extra: JsonDict = _extra()


@dataclass
class ChiefSpec:
    replica_name: str | None = wire("replicaName")
    replica_index: I32 | None = wire("replicaIndex")
    extra: JsonDict = _extra()


@dataclass
class TerminationPolicy:
    chief: ChiefSpec | None = wire("chief")
    extra: JsonDict = _extra()


@dataclass
class Caffe2JobSpec:
    runtime_id: str | None = wire("RuntimeID")
    """Upstream's JSON key is literally `RuntimeID`."""
    backend_specs: Caffe2BackendSpec | None = wire("backendSpecs")
    replica_specs: Caffe2ReplicaSpec | None = wire("replicaSpecs", schema=_REQUIRED)
    termination_policy: TerminationPolicy | None = wire("terminationPolicy")
    extra: JsonDict = _extra()


@dataclass
class Caffe2ReplicaStatus:
    active: I32 = wire("active", default=0, omitzero=True)
    succeeded: I32 = wire("succeeded", default=0, omitzero=True)
    failed: I32 = wire("failed", default=0, omitzero=True)
    extra: JsonDict = _extra()


@dataclass
class Caffe2JobStatus:
    conditions: list[JobCondition] = wire("conditions", factory=list, omitzero=True)
    replica_statuses: Caffe2ReplicaStatus | None = wire("replicaStatuses")
    start_time: str | None = wire("startTime", schema=_DATE_TIME)
    completion_time: str | None = wire("completionTime", schema=_DATE_TIME)
    last_reconcile_time: str | None = wire("lastReconcileTime", schema=_DATE_TIME)
    extra: JsonDict = _extra()


@dataclass
class Caffe2Job(Envelope):
    spec: Caffe2JobSpec | None = wire("spec")
    status: Caffe2JobStatus | None = wire("status")
    extra: JsonDict = _extra()
