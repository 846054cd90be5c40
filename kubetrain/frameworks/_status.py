"""Status-rule building blocks shared by the framework plugins.

Upstream's rules: docs/upstream-behaviour.md#status-rules and the sections of each kind.

`StatusRun` wraps one `update_status` call: it applies conditions through the upstream algebra,
records the kind's events, stamps startTime/completionTime, and appends the upstream counter
names. Two deliberate differences from upstream (docs/differences.md#transitions-counted):

* a counter is incremented only when its condition really appeared during this call (upstream
  increments on every reconcile while a rule holds, so its success/failure counters over-count);
  a Restarting that was already present when the call began (set by the reconciler's pod pass,
  which counted it) is not counted again;
* likewise an event is recorded only when its condition appeared (upstream re-records it every
  reconcile while the rule holds, e.g. a Running/Restarting flip-flop while a failed pod lingers).

"Appeared" compares the end of the call with its start, so a condition removed and re-added
within one call (Running and Restarting exclude each other) does not count as new.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from kubetrain.api.conditions import TRUE, get_condition, has_condition
from kubetrain.api.kinds import (
    COND_FAILED,
    COND_RESTARTING,
    COND_RUNNING,
    COND_SUCCEEDED,
    LABEL_JOB_NAME,
    LABEL_OPERATOR_NAME,
    LABEL_REPLICA_TYPE,
    RESTART_NEVER,
    KindInfo,
    reason,
)
from kubetrain.api.types import ReplicaSpec, ReplicaStatus, TrainingJob
from kubetrain.frameworks._env import replicas_of
from kubetrain.frameworks.base import StatusContext
from kubetrain.kube.labels import format_labels

METRIC_SUCCESSFUL = "training_operator_jobs_successful_total"
METRIC_FAILED = "training_operator_jobs_failed_total"
METRIC_RESTARTED = "training_operator_jobs_restarted_total"

EventType = Literal["Normal", "Warning"]

_COUNTED = (
    (COND_SUCCEEDED, METRIC_SUCCESSFUL),
    (COND_FAILED, METRIC_FAILED),
    (COND_RESTARTING, METRIC_RESTARTED),
)


@dataclass(frozen=True)
class Counts:
    """One replica type's numbers as upstream's UpdateJobStatus names them."""

    replicas: int
    succeeded: int
    running: int
    failed: int

    @property
    def expected(self) -> int:
        """Pods that still have to succeed (`replicas - succeeded`)."""
        return self.replicas - self.succeeded


def counts(ctx: StatusContext, rtype: str, spec: ReplicaSpec) -> Counts:
    rs = ctx.status.replica_statuses.get(rtype) or ReplicaStatus()
    return Counts(replicas_of(spec), rs.succeeded, rs.active, rs.failed)


def replica_selector(job: TrainingJob, info: KindInfo, rtype: str) -> str:
    """`metav1.FormatLabelSelector` of the replica's labels: `k=v` pairs, keys sorted, comma-joined."""
    labels = {
        LABEL_JOB_NAME: job.name.replace("/", "-"),
        LABEL_OPERATOR_NAME: info.controller_name,
        LABEL_REPLICA_TYPE: rtype.lower(),
    }
    return format_labels(labels)


class StatusRun:
    """Effects of one status evaluation; call `finish()` once the kind's rules have run."""

    def __init__(self, ctx: StatusContext, info: KindInfo) -> None:
        self.ctx = ctx
        self.kind = info.kind
        self._before = {c.type: (c.status, c.reason, c.message) for c in ctx.status.conditions}
        self._events: list[tuple[str, EventType, str, str]] = []
        if ctx.status.start_time is None:
            ctx.status.start_time = ctx.now

    def running(self, message: str) -> None:
        self.ctx.condition(COND_RUNNING, TRUE, reason(self.kind, "Running"), message)

    def running_if_absent(self, message: str) -> None:
        """XGBoost's `setRunningCondition`: only when no Running condition (of any status) exists."""
        if get_condition(self.ctx.status, COND_RUNNING) is None:
            self.running(message)

    def succeeded(self, message: str) -> None:
        self._terminal(COND_SUCCEEDED, "Succeeded", message)

    def failed(self, message: str) -> None:
        self._terminal(COND_FAILED, "Failed", message)

    def restarting(self, message: str, cond_reason: str | None = None, event: bool = True) -> None:
        cond_reason = cond_reason or reason(self.kind, "Restarting")
        self.ctx.condition(COND_RESTARTING, TRUE, cond_reason, message)
        if event:
            self._events.append((COND_RESTARTING, "Warning", cond_reason, message))

    def _terminal(self, cond_type: str, suffix: str, message: str) -> None:
        cond_reason = reason(self.kind, suffix)
        self.ctx.condition(cond_type, TRUE, cond_reason, message)
        self._events.append((cond_type, "Normal", cond_reason, message))
        if has_condition(self.ctx.status, cond_type) and self.ctx.status.completion_time is None:
            self.ctx.status.completion_time = self.ctx.now

    def _appeared(self, cond_type: str, *, or_reworded: bool = False) -> bool:
        """True now, and not True with the same reason (and, `or_reworded`, message) when the call
        began."""
        current = get_condition(self.ctx.status, cond_type)
        if current is None or current.status != TRUE:
            return False
        before = self._before.get(cond_type)
        if or_reworded:
            return before != (TRUE, current.reason, current.message)
        return before is None or before[:2] != (TRUE, current.reason)

    def finish(self) -> None:
        """Record the events of the conditions that appeared or changed their message during this
        run (a pod pass's `job ... is restarting` becoming the status rule's `<Kind> ... is
        restarting because N ...` is upstream's second event), and the counters of those that
        appeared."""
        for cond_type, etype, event_reason, message in self._events:
            current = get_condition(self.ctx.status, cond_type)
            if (
                self._appeared(cond_type, or_reworded=True)
                and current is not None
                and current.message == message
            ):
                self.ctx.event(etype, event_reason, message)
        for cond, metric in _COUNTED:
            if self._appeared(cond):
                self.ctx.metrics.append(metric)


def ordered_specs(job: TrainingJob, order: tuple[str, ...]) -> list[tuple[str, ReplicaSpec]]:
    """The job's replica specs in a fixed order (upstream ranges over a Go map: random order)."""
    specs = job.replica_specs
    return [(rtype, spec) for rtype in order if (spec := specs.get(rtype)) is not None]


class PyTorchLikeStatus:
    """The status rule PyTorchJob, PaddleJob and JAXJob share.

    Upstream's: docs/upstream-behaviour.md#pytorchjob, #paddlejob, #jaxjob.

    With a Master spec the Master alone decides Running/Succeeded (`<Kind> <name> ...` messages);
    without one the Worker type does (`<Kind> <ns>/<name> ...` messages). Any type with failed
    pods and fewer than `replicas` succeeded+running restarts, or fails under restartPolicy Never.
    Every replica status also gets the scale-subresource `selector`.
    """

    info: ClassVar[KindInfo]
    sets_replica_selector: ClassVar[bool] = True
    master_type: ClassVar[str | None] = "Master"

    def worker_done_early(self, job: TrainingJob, worker: Counts) -> bool:
        """An extra success shortcut for the Worker type (PyTorch elastic overrides it)."""
        return False

    def update_status(self, ctx: StatusContext) -> None:
        job, info = ctx.job, self.info
        run = StatusRun(ctx, info)
        specs = ordered_specs(job, info.replica_types)
        # Set before the rules (upstream sets it per type inside the loop and so leaves types after
        # a succeeded Master without one); the HPA reads Worker's through the scale subresource.
        for rtype, _ in specs:
            ctx.status.replica_statuses.setdefault(rtype, ReplicaStatus()).selector = replica_selector(
                job, info, rtype
            )
        has_master = self.master_type is not None and job.replica_specs.get(self.master_type) is not None
        kind, name, key = info.kind, job.name, f"{job.namespace}/{job.name}"
        for rtype, spec in specs:
            c = counts(ctx, rtype, spec)
            if has_master:
                if rtype == self.master_type:
                    if c.running > 0:
                        run.running(f"{kind} {name} is running.")
                    if c.expected == 0:
                        run.succeeded(f"{kind} {name} is successfully completed.")
                        break
            elif rtype == "Worker":
                if c.expected == 0 or self.worker_done_early(job, c):
                    run.succeeded(f"{kind} {key} successfully completed.")
                elif c.running > 0:
                    run.running(f"{kind} {key} is running.")
            if c.failed > 0 and c.replicas > c.succeeded + c.running:
                detail = f"{c.failed} {rtype} replica(s) failed."
                if spec.restart_policy != RESTART_NEVER:
                    run.restarting(f"{kind} {name} is restarting because {detail}")
                else:
                    run.failed(f"{kind} {name} is failed because {detail}")
        run.finish()
