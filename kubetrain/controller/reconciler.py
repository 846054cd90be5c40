"""The generic reconciler: `plan(job, observed, now, config, framework=...) -> Plan` for the
replica-spec kinds, on the `run_job` template (job.py): level-triggered and idempotent, so the same
input plans the same and a plan that has landed plans nothing. Upstream's reconcile:
docs/upstream-behaviour.md#reconcile, #events, #lifecycle.

The order of the steps is upstream's ReconcileJobs; each step lives in its own module:

    parse, managedBy, deletionTimestamp  -> skip (empty plan)                     (job.py)
    validate                             -> invalid: Failed(<Kind>FailedValidation), nothing created
    Created condition                     (first sight; counted once)             (job.py)
    services claimed, framework children  (adoption.py, children.py)
    finished                             -> cleanPodPolicy, PodGroup, TTL (cleanup.py, gang.py, ttl.py)
    suspended / resumed                   (cleanup.py)
    abnormal-pod events                   (abnormal.py)
    backoffLimit / deadline              -> Failed, then the finished handling (limits.py)
    PodGroup, Volcano gate                (gang.py)
    pods, restarts, services, recount     (replicas.py)
    the kind's status rule                (frameworks)
    finished in this pass                -> held-back creates/restarts dropped, finished handling

It never performs I/O and never raises on bad input: a job that cannot be parsed yields at most
a Warning event.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from kubetrain.api.conditions import is_finished
from kubetrain.api.defaults import apply_defaults
from kubetrain.api.fielderrors import ErrorList
from kubetrain.api.jobs import parse_job
from kubetrain.api.kinds import KindInfo, reason
from kubetrain.api.types import TrainingJob
from kubetrain.api.validation import aggregate, validate
from kubetrain.controller import abnormal, cleanup, events, gang, limits, replicas
from kubetrain.controller.adoption import claim_services
from kubetrain.controller.children import reconcile_children
from kubetrain.controller.config import ControllerConfig
from kubetrain.controller.context import JobReconcile
from kubetrain.controller.job import TrainingOperatorKind, run_job, warn_unparsed
from kubetrain.controller.ledger import RestartLedger
from kubetrain.controller.plan import Observed, Plan
from kubetrain.frameworks.base import Framework, StatusContext


class GenericKind(TrainingOperatorKind):
    """A replica-spec kind on the generic path: its framework plugin does the kind's part."""

    def __init__(self, framework: Framework) -> None:
        self.framework = framework

    def unparsed(self, raw: Any, errors: ErrorList) -> Plan:
        return unknown_kind(raw, errors)

    def prepare(
        self, job: TrainingJob, info: KindInfo, errors: ErrorList, now: datetime
    ) -> tuple[TrainingJob, str]:
        errors.extend(validate(job, info))
        if errors:
            return job, aggregate(errors)
        return apply_defaults(job, info), ""

    def reconcile(self, ctx: JobReconcile) -> None:
        services, claims = claim_services(ctx.info, ctx.job, ctx.observed.services)
        ctx.services = services
        ctx.plan.actions.extend(claims)
        reconcile_children(ctx)
        _reconcile_job(ctx)


def plan(
    job: dict[str, Any], observed: Observed, now: datetime, config: ControllerConfig, *, framework: Framework
) -> Plan:
    """What to do for one job of `framework`'s kind given what exists; see the module docstring."""
    decoded = parse_job(job, {framework.info.kind: framework.info})
    info = decoded[1]
    if info is not None and info.kind != framework.info.kind:
        return unknown_kind(job, decoded[2])
    return run_job(GenericKind(framework), job, decoded, observed, now, config)


def unknown_kind(job: Any, errors: ErrorList) -> Plan:
    """A Warning on the object when it is at least named; nothing else can be done."""
    kind = job.get("kind") if isinstance(job, dict) and isinstance(job.get("kind"), str) else ""
    return warn_unparsed(job, reason(str(kind), "FailedValidation"), aggregate(errors))


def _reconcile_job(ctx: JobReconcile) -> None:
    status = ctx.status
    ledger = RestartLedger.read(status)
    ledger.forget_gone(ctx.pods)
    try:
        _reconcile_running(ctx, ledger)
    finally:
        ledger.write(status)


def _reconcile_running(ctx: JobReconcile, ledger: RestartLedger) -> None:
    status = ctx.status
    if cleanup.settle(ctx):
        return
    abnormal.record_abnormal_pods(ctx)
    views = replicas.replica_views(ctx)
    prev_failed = sum(rs.failed for rs in status.replica_statuses.values())
    failure = limits.exceeded_limit(ctx, views, ledger, prev_failed)
    if failure is not None:
        for view in views:
            replicas.recount(ctx, view)
        if ctx.fail(failure):
            ctx.event("Normal", reason(ctx.kind, "Failed"), failure)
        cleanup.finish(ctx)
        return
    if gang.holds_pods(ctx):
        return
    for view in views:
        replicas.reconcile_pods(ctx, view, ledger)
        replicas.reconcile_services(ctx, view)
    _warn_custom_scheduler(ctx)
    if status.start_time is None:
        status.start_time = ctx.stamp
    _kind_status(ctx)
    if is_finished(status):
        cleanup.finish(ctx)
        return
    for create, event in ctx.staged.creates:
        ctx.plan.actions.append(create)
        ctx.plan.events.append(event)
    replicas.commit_restarts(ctx, ledger)
    limits.requeue_for_deadline(ctx)


def _warn_custom_scheduler(ctx: JobReconcile) -> None:
    creates_pods = any(create.obj.get("kind") == "Pod" for create, _ in ctx.staged.creates)
    if ctx.config.gang_scheduling and creates_pods and gang.custom_scheduler_set(ctx):
        ctx.event("Warning", events.SET_SCHEDULER_NAME, events.SCHEDULER_NOT_OVERWRITTEN)


def _kind_status(ctx: JobReconcile) -> None:
    """Run the framework's Running/Succeeded/Failed rules and collect their effects."""
    sctx = StatusContext(job=ctx.job, status=ctx.status, pods=ctx.pods, now=ctx.stamp)
    ctx.plugin.update_status(sctx)
    for etype, event_reason, message in sctx.events:
        ctx.event(etype, event_reason, message)
    for name in sctx.metrics:
        ctx.metric(name)
    if is_finished(ctx.status) and ctx.status.completion_time is None:
        ctx.status.completion_time = ctx.stamp
