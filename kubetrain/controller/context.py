"""The working state of one reconcile: inputs, the status being edited, and the plan being built.

Every job planner runs on a `Reconcile` (`kubetrain.controller.job.run_job` builds it): the
generic reconciler's steps (limits, cleanup, replicas, gang, ...) are functions of one, so each
module does one job and the order of steps lives in `reconciler.py` alone; a kind with its own
pass and no framework plugin (MPIJob, ChainerJob, Caffe2Job) reads its owned children through
`owned`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Generic, Literal, TypeVar

from kubetrain.api.conditions import TRUE, has_condition, set_condition
from kubetrain.api.kinds import COND_FAILED, KindInfo, reason
from kubetrain.api.types import JobStatus, TrainingJob
from kubetrain.controller.config import ControllerConfig
from kubetrain.controller.names import JsonDict, NamedJob, is_terminating, job_ref, name_of, object_ref
from kubetrain.controller.owned import OwnedObjects, controller_ref, not_managed
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


JobT = TypeVar("JobT", bound=NamedJob)
StatusT = TypeVar("StatusT")


@dataclass
class Reconcile(Generic[JobT, StatusT]):
    job: JobT
    """The job with its in-memory defaults applied (never written back): a `TrainingJob` for
    the replica-spec kinds, the kind's own envelope type otherwise."""
    info: KindInfo
    framework: Framework | None
    """The framework plugin of a generic-path kind; None for a kind with its own pass."""
    config: ControllerConfig
    now: datetime
    stamp: str
    """`now` in the wire form of status timestamps."""
    status: StatusT
    """The status being edited (a `JobStatus` but for kinds with their own status type);
    compared with the stored one at the end."""
    pods: list[JsonDict]
    """The job's pods: those whose controller ownerReference is this job."""
    services: list[JsonDict]
    """The job's services, adopted orphans included."""
    observed: Observed
    """Everything the runtime observed (PodGroups and framework children are read from here)."""
    foreign_pod_names: frozenset[str] = frozenset()
    """Names of observed pods (matching our labels) that another owner, or none, controls."""
    exists_message: Callable[[str, str], str] = not_managed
    """(name, kind) -> the message of a refused same-named object (see `owned`)."""
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

    @property
    def plugin(self) -> Framework:
        """The framework plugin; only the generic path's steps ask for it."""
        if self.framework is None:
            raise TypeError(f"{self.kind} has no framework plugin")
        return self.framework

    @cached_property
    def owned(self) -> OwnedObjects:
        """The children this job owns outright, refused when a namesake is not ours."""
        return OwnedObjects(
            self.observed, self.job.uid, self.namespace, self.owner(), self.exists_message, self.plan
        )

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
        """The single controller reference every child gets; GC deletes children with the job."""
        return controller_ref(self.info.api_version, self.info.kind, self.job.name, self.job.uid)

    def ref(self) -> ObjectRef:
        return job_ref(self.info, self.job)

    def event(
        self,
        etype: EventType,
        reason: str,
        message: str,
        involved: ObjectRef | None = None,
        *,
        once: str = "",
    ) -> None:
        self.plan.events.append(Event(etype, reason, message, involved, once))

    def condition(self, cond_type: str, cond_status: str, cond_reason: str, message: str) -> bool:
        """Apply one change through the upstream condition algebra (docs/upstream-behaviour.md#conditions)."""
        return set_condition(self._job_status, cond_type, cond_status, cond_reason, message, self.stamp)

    @property
    def _job_status(self) -> JobStatus:
        """The status as training-operator's condition algebra edits it (replica-spec kinds)."""
        status = self.status
        if not isinstance(status, JobStatus):
            raise TypeError(f"{self.kind} status has no training-operator conditions")
        return status

    def fail(self, message: str, suffix: str = "Failed") -> bool:
        """Mark the job Failed (terminal): completionTime stamped, the failure counted once."""
        changed = self.condition(COND_FAILED, TRUE, reason(self.kind, suffix), message)
        if changed:
            self.metric(METRIC_FAILED)
        status = self._job_status
        if has_condition(status, COND_FAILED) and status.completion_time is None:
            status.completion_time = self.stamp
        return changed

    def metric(self, name: str, labels: dict[str, str] | None = None) -> None:
        """An increment of an upstream counter, by default with training-operator's labels."""
        if labels is None:
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


JobReconcile = Reconcile[TrainingJob, JobStatus]
"""The context of a replica-spec job: what the generic reconciler's steps run on."""
