"""One template for every job planner: the steps all kinds share, in upstream's order, around
the kind's own pass.

    not decoded, or unnamed               -> `JobKind.unparsed` (a Warning at most)
    runPolicy.managedBy another controller -> nothing, not even a condition
    deletionTimestamp                     -> nothing
    defaults and validation               (`JobKind.prepare`: each kind's upstream order)
    invalid                               -> training-operator: Created, Failed(<Kind>FailedValidation)
                                             with a Warning, TTL; the others: a Warning only
    Created                               (`JobKind.created`: first sight)
    the kind's own pass                   (`JobKind.reconcile`)
    status                                -> written only when it changed; a one-step-per-pass kind
                                             asks to be planned again at once (`Plan.requeue_now`)

A kind supplies only what is its own: how it parses, which controller it answers to, its
defaults and rules, and its pass. The template never raises on bad input and does no I/O.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from datetime import datetime
from typing import Any, ClassVar, Generic

from kubetrain.api.codec import encode
from kubetrain.api.conditions import TRUE, get_condition, is_finished
from kubetrain.api.fielderrors import ErrorList
from kubetrain.api.kinds import COND_CREATED, KUBEFLOW_JOBS_CONTROLLER, KindInfo, reason
from kubetrain.api.types import JobStatus, TrainingJob
from kubetrain.controller import ttl
from kubetrain.controller.adoption import owned_pods
from kubetrain.controller.config import ControllerConfig
from kubetrain.controller.context import JobReconcile, JobT, Reconcile, StatusT
from kubetrain.controller.owned import not_managed
from kubetrain.controller.plan import Event, Observed, Plan
from kubetrain.frameworks.base import Framework
from kubetrain.kube.timefmt import format_time

METRIC_CREATED = "training_operator_jobs_created_total"
VALIDATION_ERROR = "ValidationError"
"""The Warning reason of an invalid job for the controllers that only warn (mpi-operator's)."""


class JobKind(ABC, Generic[JobT, StatusT]):
    """What one kind's planner supplies to `run_job`."""

    controller: ClassVar[str | None] = None
    """The runPolicy.managedBy value this controller answers to (absent means the same); None
    for a kind without managedBy."""
    one_step_per_pass: ClassVar[bool] = False
    """Upstream takes one step per sync and starts the next from the watch event of its own
    status write: ask the runtime to plan again after a status change (`Plan.requeue_now`)."""
    framework: Framework | None = None

    def unparsed(self, raw: Any, errors: ErrorList) -> Plan:
        """The plan of an object that did not decode into a named job."""
        return Plan()

    def managed_by(self, job: JobT) -> str | None:
        return None

    def ours(self, job: JobT) -> bool:
        """Whether this controller reconciles the job (not managed elsewhere, not being deleted)."""
        manager = self.managed_by(job)
        if self.controller is not None and manager is not None and manager != self.controller:
            return False
        return not job.metadata.get("deletionTimestamp")

    @abstractmethod
    def initial_status(self) -> StatusT:
        """The status of a job that has none yet."""

    @abstractmethod
    def prepare(self, job: JobT, info: KindInfo, errors: ErrorList, now: datetime) -> tuple[JobT, str]:
        """The job with its defaults, and the message of what is invalid ("" when valid); `errors`
        holds the decoding errors. Each kind validates and defaults in its upstream's order."""

    def exists_message(self, name: str, kind: str) -> str:
        """The message of a refused same-named object (the kinds that own children outright)."""
        return not_managed(name, kind)

    def invalid(self, ctx: Reconcile[JobT, StatusT], message: str) -> None:
        """An invalid job (mpi-operator's rule): a Warning, nothing created, no status."""
        ctx.event("Warning", VALIDATION_ERROR, message)

    def created(self, ctx: Reconcile[JobT, StatusT]) -> None:
        """What a valid job gets on first sight (nothing by default)."""

    @abstractmethod
    def reconcile(self, ctx: Reconcile[JobT, StatusT]) -> None:
        """The kind's own pass over a valid job that exists and is ours."""


class TrainingOperatorKind(JobKind[TrainingJob, JobStatus]):
    """A `kubeflow.org/v1` kind of training-operator's: its managedBy, its Created condition, and
    its rule that an invalid job that bypassed the webhook is Failed."""

    controller = KUBEFLOW_JOBS_CONTROLLER

    def managed_by(self, job: TrainingJob) -> str | None:
        return job.run_policy.managed_by

    def initial_status(self) -> JobStatus:
        return JobStatus()

    def invalid(self, ctx: JobReconcile, message: str) -> None:
        """Created, then Failed(<Kind>FailedValidation) with the webhook's message; TTL applies."""
        self.created(ctx)
        if ctx.fail(message, suffix="FailedValidation"):
            ctx.event("Warning", reason(ctx.kind, "FailedValidation"), message)
        if is_finished(ctx.status):
            ttl.apply_ttl(ctx)

    def created(self, ctx: JobReconcile) -> None:
        """`Created` on first sight: it stays the first condition and is counted once."""
        if get_condition(ctx.status, COND_CREATED) is not None:
            return
        if ctx.condition(
            COND_CREATED, TRUE, reason(ctx.kind, "Created"), f"{ctx.kind} {ctx.name} is created."
        ):
            ctx.metric(METRIC_CREATED)


def run_job(
    kind: JobKind[JobT, StatusT],
    raw: Any,
    decoded: tuple[Any, KindInfo | None, ErrorList],
    observed: Observed,
    now: datetime,
    config: ControllerConfig,
) -> Plan:
    """The plan of one job: the shared steps (module docstring) around `kind.reconcile`.

    `decoded` is the kind's parse of `raw`: (job or None, KindInfo or None, decoding errors)."""
    parsed, info, errors = decoded
    if parsed is None or info is None or not parsed.name:
        return kind.unparsed(raw, errors)
    if not kind.ours(parsed):
        return Plan()
    status = parsed.status if parsed.status is not None else kind.initial_status()
    before = encode(status)
    job, problem = kind.prepare(parsed, info, errors, now)
    job.status = status
    pods, foreign = owned_pods(job, observed.pods)
    ctx: Reconcile[JobT, StatusT] = Reconcile(
        job=job,
        info=info,
        framework=kind.framework,
        config=config,
        now=now,
        stamp=format_time(now),
        status=status,
        pods=pods,
        services=[],
        observed=observed,
        foreign_pod_names=foreign,
        exists_message=kind.exists_message,
    )
    if problem:
        kind.invalid(ctx, problem)
    else:
        kind.created(ctx)
        kind.reconcile(ctx)
    after = encode(ctx.status)
    ctx.plan.status = None if after == before else after
    if kind.one_step_per_pass:
        ctx.plan.requeue_now = ctx.plan.status is not None
    return ctx.plan


def warn_unparsed(raw: Any, reason_text: str, message: str) -> Plan:
    """A Warning on an object that is at least named (nothing else can be done with it)."""
    metadata = raw.get("metadata") if isinstance(raw, dict) else None
    if not isinstance(metadata, dict) or not metadata.get("name"):
        return Plan()
    return Plan(events=[Event("Warning", reason_text, message)])
