"""Deleting pods and services of a finished or suspended job.

Upstream's: docs/upstream-behaviour.md#clean-pod-policy, #reconcile (a suspended job).

cleanPodPolicy applies to finished jobs, including jobs failed by backoffLimit or
activeDeadlineSeconds (upstream v1.9.4 semantics; v1.9.0-1.9.3 deleted everything there,
kubeflow/trainer#3419). A suspended job loses all its pods and services whatever the policy.
"""

from __future__ import annotations

from kubetrain.api.conditions import FALSE, TRUE, has_condition, is_finished
from kubetrain.api.kinds import (
    CLEAN_POD_ALL,
    CLEAN_POD_RUNNING,
    COND_RUNNING,
    COND_SUCCEEDED,
    COND_SUSPENDED,
    reason,
)
from kubetrain.controller import events, gang, ttl
from kubetrain.controller.context import JobReconcile
from kubetrain.controller.names import name_of
from kubetrain.controller.pods import phase
from kubetrain.controller.status import move_active_to_succeeded


def delete_pods_and_services(ctx: JobReconcile, policy: str | None) -> None:
    """`All`: every pod and service; `Running`: pods not yet done (Pending may start running)
    and their same-named services; anything else (`None`): nothing."""
    if policy not in (CLEAN_POD_ALL, CLEAN_POD_RUNNING):
        return
    services = {name_of(svc): svc for svc in ctx.services}
    for pod in ctx.pods:
        if policy == CLEAN_POD_RUNNING and phase(pod) not in ("Running", "Pending", ""):
            continue
        name = name_of(pod)
        ctx.delete(pod, events.SUCCESSFUL_DELETE_POD, events.deleted_pod(name))
        svc = services.get(name)
        if svc is not None:
            ctx.delete(svc, events.SUCCESSFUL_DELETE_SERVICE, events.deleted_service(name))
    if policy == CLEAN_POD_ALL:
        for svc in ctx.services:
            ctx.delete(svc, events.SUCCESSFUL_DELETE_SERVICE, events.deleted_service(name_of(svc)))


def settle(ctx: JobReconcile) -> bool:
    """Upstream's first job-level steps, in its order: a finished job gets the finished handling,
    a suspended one releases everything, a resumed one restarts its clock. True when the pass
    ends here (finished or suspended)."""
    if is_finished(ctx.status):
        finish(ctx)
        return True
    if ctx.job.run_policy.suspend:
        suspend(ctx)
        return True
    if has_condition(ctx.status, COND_SUSPENDED):
        resume(ctx)
    return False


def suspend(ctx: JobReconcile) -> None:
    """Release everything the job holds and record why (`[.., Running(False), Suspended(True)]`)."""
    delete_pods_and_services(ctx, CLEAN_POD_ALL)
    gang.delete_pod_group(ctx)
    for replica_status in ctx.status.replica_statuses.values():
        replica_status.active = 0
    suspended = reason(ctx.kind, "Suspended")
    message = f"{ctx.kind} {ctx.name} is suspended."
    if has_condition(ctx.status, COND_RUNNING):
        ctx.condition(COND_RUNNING, FALSE, suspended, message)
    if not has_condition(ctx.status, COND_SUSPENDED):
        ctx.condition(COND_SUSPENDED, TRUE, suspended, message)
    ctx.event("Normal", suspended, message)


def resume(ctx: JobReconcile) -> None:
    """Suspended(False, Resumed); the clock of activeDeadlineSeconds restarts with startTime."""
    resumed = reason(ctx.kind, "Resumed")
    message = f"{ctx.kind} {ctx.name} is resumed."
    ctx.condition(COND_SUSPENDED, FALSE, resumed, message)
    ctx.status.start_time = ctx.stamp
    ctx.event("Normal", resumed, message)


def finish(ctx: JobReconcile) -> None:
    """A finished job: cleanPodPolicy (a finished launcher lets Running delete the workers), no
    PodGroup, active counted as succeeded, completionTime, TTL."""
    delete_pods_and_services(ctx, ctx.job.run_policy.clean_pod_policy)
    gang.delete_pod_group(ctx)
    if has_condition(ctx.status, COND_SUCCEEDED):
        move_active_to_succeeded(ctx.status)
    if ctx.status.completion_time is None:
        ctx.status.completion_time = ctx.stamp
    ttl.apply_ttl(ctx)
