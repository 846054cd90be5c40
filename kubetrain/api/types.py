# ruff: noqa: RUF009  (`wire()` returns a dataclasses.field; the call is the declaration, not a shared default)
"""Wire types every kubeflow.org training job shares (docs/upstream-behaviour.md#api-surface).

Plain dataclasses decoded and encoded by `kubetrain.api.codec`. Every object keeps the keys we do
not model in `extra`, and pod templates stay raw dicts, so a job read and written back loses no
field. Field JSON names live in the field metadata (`json`). A kind's own spec type (its replica
specs' field name, its own policies) is declared with the kind, in its package.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Protocol

JsonDict = dict[str, Any]


class Int32:
    """Marker for `Annotated[int, Int32]`: a Go int32 field (range-checked on decode)."""


class Int64:
    """Marker for `Annotated[int, Int64]`: a Go int64 field."""


I32 = Annotated[int, Int32]
I64 = Annotated[int, Int64]

QUEUE_IMMUTABLE = "spec.runPolicy.schedulingPolicy.queue is immutable"
"""Message of the CRD's CEL transition rule on `schedulingPolicy.queue`
(docs/upstream-behaviour.md#common-types)."""
_DATE_TIME = {"format": "date-time"}
_QUEUE_RULE = {"message": QUEUE_IMMUTABLE, "rule": "self == oldSelf"}
_REQUIRED = {"required": True}
REQUIRED = _REQUIRED
"""Schema hint of a field the CRD requires."""
DATE_TIME = _DATE_TIME
"""Schema hint of a timestamp field (RFC 3339)."""


def wire(
    name: str, *, default: Any = None, omitzero: bool = False, factory: Any = None, schema: Any = None
) -> Any:
    """Declare a field's JSON name; `omitzero` drops 0/False/empty on encode like Go's omitempty.

    `schema` is a hint for the CRD generator (`kubetrain.api.schema`): either the name of a shared
    schema (`"pod-template"`, `"quantity-map"`, ...) or a dict merged over the node derived from the
    type hint (a format, a CRD default, a CEL rule). The codec ignores it.
    """
    meta: dict[str, Any] = {"json": name, "omitzero": omitzero}
    if schema is not None:
        meta["schema"] = schema
    if factory is not None:
        return field(default_factory=factory, metadata=meta)
    return field(default=default, metadata=meta)


def meta_string(metadata: JsonDict, key: str) -> str:
    """A metadata string field; "" for a container value (an API server only serves strings, and
    str() of user data nested thousands deep would recurse)."""
    value = metadata.get(key)
    if value is None or isinstance(value, dict | list):
        return ""
    return str(value)


def extra_keys() -> Any:
    """Declare the field that keeps the keys a type does not model (written back as they were)."""
    return field(default_factory=dict, metadata={"extra": True}, repr=False, compare=True)


_extra = extra_keys


# ---- common types -------------------------------------------------------------------------------


@dataclass
class ReplicaSpec:
    replicas: I32 | None = wire("replicas")
    template: JsonDict | None = wire("template", schema="pod-template")
    restart_policy: str | None = wire("restartPolicy")
    extra: JsonDict = _extra()


@dataclass
class SchedulingPolicy:
    min_available: I32 | None = wire("minAvailable")
    queue: str | None = wire("queue", schema={"x-kubernetes-validations": [_QUEUE_RULE]})
    min_resources: dict[str, Any] | None = wire("minResources", schema="quantity-map")
    priority_class: str | None = wire("priorityClass")
    schedule_timeout_seconds: I32 | None = wire("scheduleTimeoutSeconds")
    extra: JsonDict = _extra()


@dataclass
class RunPolicy:
    clean_pod_policy: str | None = wire("cleanPodPolicy")
    ttl_seconds_after_finished: I32 | None = wire("ttlSecondsAfterFinished")
    active_deadline_seconds: I64 | None = wire("activeDeadlineSeconds")
    backoff_limit: I32 | None = wire("backoffLimit")
    scheduling_policy: SchedulingPolicy | None = wire("schedulingPolicy")
    suspend: bool | None = wire("suspend", schema={"default": False})
    managed_by: str | None = wire("managedBy")
    extra: JsonDict = _extra()


@dataclass
class JobCondition:
    type: str = wire("type", default="", schema=_REQUIRED)
    status: str = wire("status", default="", schema=_REQUIRED)
    reason: str | None = wire("reason")
    message: str | None = wire("message")
    last_update_time: str | None = wire("lastUpdateTime", schema=_DATE_TIME)
    last_transition_time: str | None = wire("lastTransitionTime", schema=_DATE_TIME)
    extra: JsonDict = _extra()


@dataclass
class ReplicaStatus:
    active: I32 = wire("active", default=0, omitzero=True)
    succeeded: I32 = wire("succeeded", default=0, omitzero=True)
    failed: I32 = wire("failed", default=0, omitzero=True)
    label_selector: JsonDict | None = wire("labelSelector", schema="label-selector")
    selector: str | None = wire("selector")
    extra: JsonDict = _extra()


@dataclass
class KubetrainStatus:
    """kubetrain's own bookkeeping in `status.kubetrain` (upstream clients ignore the key).

    `restarts` counts restarts that pod recreation would otherwise erase (backoffLimit counts every
    restart: a fix of kubeflow/trainer#2045); `restartingPods` holds uids of pods deleted for a
    restart whose deletion is not yet observed, so a lagging cache cannot count one twice.
    """

    restarts: I32 | None = wire("restarts")
    restarting_pods: list[str] | None = wire("restartingPods")
    extra: JsonDict = _extra()


@dataclass
class JobStatus:
    conditions: list[JobCondition] = wire("conditions", factory=list, omitzero=True)
    replica_statuses: dict[str, ReplicaStatus] = wire("replicaStatuses", factory=dict)
    start_time: str | None = wire("startTime", schema=_DATE_TIME)
    completion_time: str | None = wire("completionTime", schema=_DATE_TIME)
    last_reconcile_time: str | None = wire("lastReconcileTime", schema=_DATE_TIME)
    kubetrain: KubetrainStatus | None = wire("kubetrain")
    extra: JsonDict = _extra()


# ---- the envelope --------------------------------------------------------------------------------


class JobSpec(Protocol):
    """What every replica-spec kind's spec has; each kind's own spec dataclass (its `KindInfo.spec_type`,
    declared in its package with its own JSON name for the replica specs) satisfies it."""

    run_policy: RunPolicy | None
    replica_specs: dict[str, ReplicaSpec | None] | None


@dataclass
class Envelope:
    """What every job object starts with, whatever its kind and era: `apiVersion`, `kind` and the
    raw ObjectMeta, with the name accessors the planners use. A kind's envelope adds its `spec`,
    `status` and `extra`, in that order (the wire order of every kind's objects)."""

    api_version: str = wire("apiVersion", default="")
    kind: str = wire("kind", default="")
    metadata: JsonDict = wire("metadata", factory=dict)

    @property
    def name(self) -> str:
        return meta_string(self.metadata, "name")

    @property
    def namespace(self) -> str:
        return meta_string(self.metadata, "namespace") or "default"

    @property
    def uid(self) -> str:
        return meta_string(self.metadata, "uid")


@dataclass
class TrainingJob(Envelope):
    """A job of any v1 kind. `metadata` is the raw ObjectMeta; `spec` is the kind's spec type."""

    spec: JobSpec | None = wire("spec")
    status: JobStatus | None = wire("status")
    extra: JsonDict = _extra()

    @property
    def replica_specs(self) -> dict[str, ReplicaSpec | None]:
        if self.spec is None or self.spec.replica_specs is None:
            return {}
        return self.spec.replica_specs

    @property
    def run_policy(self) -> RunPolicy:
        if self.spec is None or self.spec.run_policy is None:
            return RunPolicy()
        return self.spec.run_policy
