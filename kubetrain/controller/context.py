"""The working state of one reconcile: inputs, the status being edited, and the plan being built.

Every step of the reconciler (limits, cleanup, replicas, gang, ...) is a function of a `Reconcile`,
so each module does one job and the order of steps lives in `reconciler.py` alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Literal

from kubetrain.api.conditions import TRUE, has_condition, set_condition
from kubetrain.api.kinds import COND_FAILED, KindInfo, reason
from kubetrain.api.types import JobStatus, TrainingJob
from kubetrain.controller.config import ControllerConfig
from kubetrain.controller.names import JsonDict, is_terminating, job_ref, name_of, object_ref, owner_reference
from kubetrain.controller.plan import (
    CreateObject,
    DeleteObject,
    Event,
    MetricIncrement,
    ObjectRef,
    Observed,
    Plan,
)
from kubetrain.frameworks.base import Framework, FrameworkSettings

EventType = Literal["Normal", "Warning"]
METRIC_FAILED = "training_operator_jobs_failed_total"


@dataclass
class Staged:
    """Pod-pass writes that only make sense if the job is still running at the end of the pass.

    Upstream creates pods and recreates failed ones before evaluating the kind's status rule, so a
    job that succeeds or fails in that same pass gets pods it will never use. We hold these writes
    back until the rule has run and drop them when the job finished.
    """

    creates: list[tuple[CreateObject, Event]] = field(default_factory=list)
    restarts: list[JsonDict] = field(default_factory=list)


@dataclass
class Reconcile:
    job: TrainingJob
    """The job with its in-memory defaults applied (never written back)."""
    info: KindInfo
    framework: Framework
    config: ControllerConfig
    now: datetime
    stamp: str
    """`now` in the wire form of status timestamps."""
    status: JobStatus
    """The status being edited; compared with the stored one at the end."""
    pods: list[JsonDict]
    """The job's pods: those whose controller ownerReference is this job."""
    services: list[JsonDict]
    """The job's services, adopted orphans included."""
    observed: Observed
    """Everything the runtime observed (PodGroups and framework children are read from here)."""
    foreign_pod_names: frozenset[str] = frozenset()
    """Names of observed pods (matching our labels) that another owner, or none, controls."""
    plan: Plan = field(default_factory=Plan)
    staged: Staged = field(default_factory=Staged)
    _deleting: set[tuple[str, str]] = field(default_factory=set)

    @property
    def kind(self) -> str:
        return self.info.kind

    @property
    def name(self) -> str:
        return self.job.name

    @property
    def namespace(self) -> str:
        return self.job.namespace

    @cached_property
    def settings(self) -> FrameworkSettings:
        c = self.config
        return FrameworkSettings(
            cluster_domain=c.cluster_domain,
            pytorch_init_container_image=c.pytorch_init_container_image,
            pytorch_init_container_max_tries=c.pytorch_init_container_max_tries,
            pytorch_init_container_template=c.pytorch_init_container_template,
        )

    def owner(self) -> JsonDict:
        return owner_reference(self.info, self.job)

    def ref(self) -> ObjectRef:
        return job_ref(self.info, self.job)

    def event(self, etype: EventType, reason: str, message: str, involved: ObjectRef | None = None) -> None:
        self.plan.events.append(Event(etype, reason, message, involved))

    def condition(self, cond_type: str, cond_status: str, cond_reason: str, message: str) -> bool:
        """Apply one change through the upstream condition algebra (spec §3.12)."""
        return set_condition(self.status, cond_type, cond_status, cond_reason, message, self.stamp)

    def fail(self, message: str, suffix: str = "Failed") -> bool:
        """Mark the job Failed (terminal): completionTime stamped, the failure counted once."""
        changed = self.condition(COND_FAILED, TRUE, reason(self.kind, suffix), message)
        if changed:
            self.metric(METRIC_FAILED)
        if has_condition(self.status, COND_FAILED) and self.status.completion_time is None:
            self.status.completion_time = self.stamp
        return changed

    def metric(self, name: str) -> None:
        labels = {"job_namespace": self.namespace, "framework": self.info.framework}
        self.plan.metrics.append(MetricIncrement(name, labels))

    def delete(self, obj: JsonDict, reason: str | None, message: str | None) -> bool:
        """Delete an observed object once per plan (uid precondition); objects already
        terminating are left alone. Returns whether a delete was planned."""
        key = (str(obj.get("kind", "")), name_of(obj))
        if key in self._deleting or is_terminating(obj):
            return False
        self._deleting.add(key)
        self.plan.actions.append(DeleteObject(object_ref(obj)))
        if reason is not None and message is not None:
            self.event("Normal", reason, message)
        return True

    def requeue(self, seconds: float) -> None:
        """Ask to be reconciled again within `seconds` (the earliest request wins)."""
        current = self.plan.requeue_after
        self.plan.requeue_after = seconds if current is None else min(current, seconds)

    def is_deleting(self, kind: str, name: str) -> bool:
        return (kind, name) in self._deleting
