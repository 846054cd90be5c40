"""The pure reconciler: `plan(job, observed, now, config) -> Plan` (design §3, spec §3.4-§3.13, §12).

The order of the steps is upstream's ReconcileJobs; each step lives in its own module:

    parse, managedBy, deletionTimestamp  -> skip (empty plan)
    validate                             -> invalid: Failed(<Kind>FailedValidation), nothing created
    Created condition                     (first sight; counted once)
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

from kubetrain.api.codec import encode
from kubetrain.api.conditions import TRUE, get_condition, has_condition, is_finished
from kubetrain.api.defaults import apply_defaults
from kubetrain.api.fielderrors import ErrorList
from kubetrain.api.jobs import parse_job
from kubetrain.api.kinds import COND_CREATED, COND_SUCCEEDED, COND_SUSPENDED, KUBEFLOW_JOBS_CONTROLLER, reason
from kubetrain.api.types import JobStatus
from kubetrain.api.validation import aggregate, validate
from kubetrain.controller import abnormal, cleanup, events, gang, limits, replicas, ttl
from kubetrain.controller.adoption import claim_services, owned_pods
from kubetrain.controller.children import reconcile_children
from kubetrain.controller.config import ControllerConfig
from kubetrain.controller.context import Reconcile
from kubetrain.controller.ledger import RestartLedger
from kubetrain.controller.plan import Event, Observed, Plan
from kubetrain.controller.status import changed_status, move_active_to_succeeded
from kubetrain.frameworks.base import Framework, StatusContext
from kubetrain.kube.timefmt import format_time

METRIC_CREATED = "training_operator_jobs_created_total"


def plan(
    job: dict[str, Any], observed: Observed, now: datetime, config: ControllerConfig, *, framework: Framework
) -> Plan:
    """What to do for one job of `framework`'s kind given what exists; see the module docstring."""
    parsed, info, errors = parse_job(job)
    if parsed is None or info is None or info.kind != framework.info.kind or not parsed.name:
        return unknown_kind(job, errors)
    managed_by = parsed.run_policy.managed_by
    if managed_by is not None and managed_by != KUBEFLOW_JOBS_CONTROLLER:
        return Plan()  # another controller (e.g. MultiKueue) owns this job: not even a condition
    if parsed.metadata.get("deletionTimestamp"):
        return Plan()
    status = parsed.status if parsed.status is not None else JobStatus()
    before = encode(status)
    errors.extend(validate(parsed, info))
    defaulted = parsed if errors else apply_defaults(parsed, info)
    defaulted.status = status
    pods, foreign = owned_pods(defaulted, observed.pods)
    services, claims = claim_services(info, defaulted, observed.services) if not errors else ([], [])
    ctx = Reconcile(
        job=defaulted,
        info=info,
        framework=framework,
        config=config,
        now=now,
        stamp=format_time(now),
        status=status,
        pods=pods,
        services=services,
        observed=observed,
        foreign_pod_names=foreign,
    )
    _created(ctx)
    if errors:
        _invalid(ctx, errors)
    else:
        ctx.plan.actions.extend(claims)
        reconcile_children(ctx)
        _reconcile_job(ctx)
    ctx.plan.status = changed_status(before, ctx.status)
    return ctx.plan


def unknown_kind(job: Any, errors: ErrorList) -> Plan:
    """A Warning on the object when it is at least named; nothing else can be done."""
    if not isinstance(job, dict):
        return Plan()
    metadata = job.get("metadata")
    if not isinstance(metadata, dict) or not metadata.get("name"):
        return Plan()
    kind = job.get("kind") if isinstance(job.get("kind"), str) else ""
    return Plan(events=[Event("Warning", reason(str(kind), "FailedValidation"), aggregate(errors))])


def _created(ctx: Reconcile) -> None:
    """`Created` on first sight; it stays the first condition and is counted once."""
    if get_condition(ctx.status, COND_CREATED) is not None:
        return
    if ctx.condition(COND_CREATED, TRUE, reason(ctx.kind, "Created"), f"{ctx.kind} {ctx.name} is created."):
        ctx.metric(METRIC_CREATED)


def _invalid(ctx: Reconcile, errors: ErrorList) -> None:
    """A job that bypassed the webhook fails with the webhook's message; nothing is created."""
    message = aggregate(errors)
    if ctx.fail(message, suffix="FailedValidation"):
        ctx.event("Warning", reason(ctx.kind, "FailedValidation"), message)
    if is_finished(ctx.status):
        ttl.apply_ttl(ctx)


def _finish(ctx: Reconcile) -> None:
    """A finished job: cleanPodPolicy, no PodGroup, active counted as succeeded, TTL."""
    cleanup.delete_pods_and_services(ctx, ctx.job.run_policy.clean_pod_policy)
    gang.delete_pod_group(ctx)
    if has_condition(ctx.status, COND_SUCCEEDED):
        move_active_to_succeeded(ctx.status)
    if ctx.status.completion_time is None:
        ctx.status.completion_time = ctx.stamp
    ttl.apply_ttl(ctx)


def _reconcile_job(ctx: Reconcile) -> None:
    status = ctx.status
    ledger = RestartLedger.read(status)
    ledger.forget_gone(ctx.pods)
    try:
        _reconcile_running(ctx, ledger)
    finally:
        ledger.write(status)


def _reconcile_running(ctx: Reconcile, ledger: RestartLedger) -> None:
    status = ctx.status
    if is_finished(status):
        _finish(ctx)
        return
    if ctx.job.run_policy.suspend:
        cleanup.suspend(ctx)
        return
    if has_condition(status, COND_SUSPENDED):
        cleanup.resume(ctx)
    abnormal.record_abnormal_pods(ctx)
    views = replicas.replica_views(ctx)
    prev_failed = sum(rs.failed for rs in status.replica_statuses.values())
    failure = limits.exceeded_limit(ctx, views, ledger, prev_failed)
    if failure is not None:
        for view in views:
            replicas.recount(ctx, view)
        if ctx.fail(failure):
            ctx.event("Normal", reason(ctx.kind, "Failed"), failure)
        _finish(ctx)
        return
    if ctx.config.gang_scheduling and gang.sync_pod_group(ctx):
        if status.last_reconcile_time is None:
            status.last_reconcile_time = ctx.stamp
        return
    for view in views:
        replicas.reconcile_pods(ctx, view, ledger)
        replicas.reconcile_services(ctx, view)
    _warn_custom_scheduler(ctx)
    if status.start_time is None:
        status.start_time = ctx.stamp
    _kind_status(ctx)
    if is_finished(status):
        _finish(ctx)
        return
    for create, event in ctx.staged.creates:
        ctx.plan.actions.append(create)
        ctx.plan.events.append(event)
    replicas.commit_restarts(ctx, ledger)
    limits.requeue_for_deadline(ctx)


def _warn_custom_scheduler(ctx: Reconcile) -> None:
    creates_pods = any(create.obj.get("kind") == "Pod" for create, _ in ctx.staged.creates)
    if ctx.config.gang_scheduling and creates_pods and gang.custom_scheduler_set(ctx):
        ctx.event("Warning", events.SET_SCHEDULER_NAME, events.SCHEDULER_NOT_OVERWRITTEN)


def _kind_status(ctx: Reconcile) -> None:
    """Run the framework's Running/Succeeded/Failed rules and collect their effects."""
    sctx = StatusContext(job=ctx.job, status=ctx.status, pods=ctx.pods, now=ctx.stamp)
    ctx.framework.update_status(sctx)
    for etype, event_reason, message in sctx.events:
        ctx.event(etype, event_reason, message)
    for name in sctx.metrics:
        ctx.metric(name)
    if is_finished(ctx.status) and ctx.status.completion_time is None:
        ctx.status.completion_time = ctx.stamp
