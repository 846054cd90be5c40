"""The reconcile contract: what the pure reconciler hands to the runtime.

`plan(job, observed, now, config) -> Plan` never does I/O. The runtime applies the actions,
writes `Plan.status` through the status subresource when it is not None, records the events
and requeues the job after `requeue_after` seconds when set. Running the planner again on
the same input yields the same plan; running it after its actions landed yields no actions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

JsonDict = dict[str, Any]


@dataclass(frozen=True)
class ObjectRef:
    """Identifies one object by its API coordinates (enough for a URL and an Event's involvedObject)."""

    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str | None = None


@dataclass(frozen=True)
class CreateObject:
    """POST `obj` (a complete manifest: apiVersion, kind, metadata.namespace/name, ownerReferences)."""

    obj: JsonDict

    @property
    def ref(self) -> ObjectRef:
        meta = self.obj["metadata"]
        return ObjectRef(self.obj["apiVersion"], self.obj["kind"], meta.get("namespace", ""), meta["name"])


@dataclass(frozen=True)
class DeleteObject:
    """DELETE the object; `ref.uid`, when set, is sent as a precondition so that a newer
    same-named object survives."""

    ref: ObjectRef
    propagation_policy: Literal["Background", "Foreground", "Orphan"] = "Background"


@dataclass(frozen=True)
class PatchObject:
    """PATCH the object's main resource with a JSON merge patch (RFC 7386)."""

    ref: ObjectRef
    patch: JsonDict


Action = CreateObject | DeleteObject | PatchObject


@dataclass(frozen=True)
class Event:
    """A Kubernetes Event to record; `involved` None means the job itself."""

    type: Literal["Normal", "Warning"]
    reason: str
    message: str
    involved: ObjectRef | None = None
    once: str = ""
    """The fact the event reports when every later pass sees it again (a container's
    termination): the runtime records one event per distinct `once`, so such a fact does not
    spend the job's event budget (the spam filter's 25 per object) on repeats."""


@dataclass(frozen=True)
class MetricIncrement:
    """One increment of an upstream-named counter, e.g. `training_operator_jobs_successful_total`."""

    name: str
    labels: Mapping[str, str] = field(default_factory=dict)


@dataclass
class Observed:
    """What exists for one job, as raw dicts from the runtime's cache (never mutated by the planner).

    `pods` and `services` are the objects labelled with the job's operator-name and job-name labels.
    `others` holds the other child kinds the controller declared it watches, keyed by
    "<apiVersion>/<Kind>" (e.g. "scheduling.volcano.sh/v1beta1/PodGroup",
    "autoscaling/v2/HorizontalPodAutoscaler"), restricted to objects whose controller ownerReference
    is the job.
    """

    pods: Sequence[JsonDict] = ()
    services: Sequence[JsonDict] = ()
    others: Mapping[str, Sequence[JsonDict]] = field(default_factory=dict)

    def of(self, api_version: str, kind: str) -> Sequence[JsonDict]:
        return self.others.get(f"{api_version}/{kind}", ())


@dataclass
class Plan:
    """The outcome of one reconcile.

    `status` is the complete new `.status` of the job, or None when it did not change (so the
    runtime writes nothing). `requeue_after` (seconds) is set whenever a time-based rule
    (activeDeadlineSeconds, ttlSecondsAfterFinished) will fire later without any other event.
    """

    actions: list[Action] = field(default_factory=list)
    status: JsonDict | None = None
    requeue_after: float | None = None
    events: list[Event] = field(default_factory=list)
    metrics: list[MetricIncrement] = field(default_factory=list)
    retry: bool = False
    """This pass is an error to retry with backoff once its writes are done: something the planner
    may not touch (a same-named object the job does not control) blocks the job, and nothing
    else would enqueue it when that changes (upstream's controllers return an error)."""
    requeue_now: bool = False
    """Plan the job again as soon as this pass's writes are done (a planner that takes one step
    per pass, whose next step upstream would start from the watch event of its own status write,
    which the runtime's cache swallows because it already holds the written version)."""

    @property
    def is_empty(self) -> bool:
        return not self.actions and self.status is None
