"""The MPIJob v1 planner: training-operator's common ReconcileJobs around the MPI pod pass.

The shared steps (managedBy, deletion, validation -> Failed, Created, status diff) are
`run_job`'s, and the job-level policies are the generic path's own modules (suspend and resume,
cleanPodPolicy and the finish, TTL, activeDeadlineSeconds, PodGroups), so v1 MPIJobs behave like
the other v1 kinds there. The MPI pass (docs/upstream-behaviour.md#mpijob-v1) then keeps the
launcher's ConfigMap and RBAC, the workers and the launcher pod, and the status follows
training-operator's MPI rules with the double-prefixed failure reason fixed (`MPIJobFailed`, not
`MPIJobMPIJobFailed`: docs/differences.md#mpijob-v1-reason) and without the "... is exist" events
it emits on every pass.
"""

from __future__ import annotations

from datetime import datetime

from kubetrain.api.conditions import TRUE, has_condition, is_finished
from kubetrain.api.fielderrors import ErrorList
from kubetrain.api.kinds import (
    COND_FAILED,
    COND_RESTARTING,
    COND_RUNNING,
    COND_SUCCEEDED,
    RESTART_ALWAYS,
    RESTART_EXIT_CODE,
    RESTART_ON_FAILURE,
    KindInfo,
)
from kubetrain.api.types import ReplicaStatus, TrainingJob
from kubetrain.controller import cleanup, events, gang, limits
from kubetrain.controller.context import JobReconcile
from kubetrain.controller.job import TrainingOperatorKind
from kubetrain.controller.names import JsonDict, name_of, replica_type
from kubetrain.controller.owned import POD, OwnedObjects, data_differ, exit_detail, rules_differ
from kubetrain.controller.plan import CreateObject
from kubetrain.controller.pods import phase, restart_count
from kubetrain.kinds.mpijob import v1_objects as objects
from kubetrain.kinds.mpijob.defaults import default_v1
from kubetrain.kinds.mpijob.types import LAUNCHER, WORKER
from kubetrain.kinds.mpijob.validation import validate_v1
from kubetrain.kinds.mpijob.wire import v1_spec

METRIC_CREATED = "training_operator_jobs_created_total"
METRIC_SUCCESSFUL = "training_operator_jobs_successful_total"
METRIC_RESTARTED = "training_operator_jobs_restarted_total"
SET_RESTART_POLICY = "SettedPodTemplateRestartPolicy"
SET_SCHEDULER_NAME = "SettedPodTemplateSchedulerName"


class MPIV1Kind(TrainingOperatorKind):
    """training-operator's MPIJob: the shared steps of `run_job`, then the MPI pass."""

    one_step_per_pass = True

    def prepare(
        self, job: TrainingJob, info: KindInfo, errors: ErrorList, now: datetime
    ) -> tuple[TrainingJob, str]:
        problem = validate_v1(job)
        return (job if problem else default_v1(job)), problem or ""

    def exists_message(self, name: str, kind: str) -> str:
        return f'Resource "{name}" of MPIJobKind "{kind}" already exists and is not managed by MPIJob'

    def reconcile(self, ctx: JobReconcile) -> None:
        _reconcile(ctx, ctx.config.mpi_kubectl_delivery_image)


KIND = MPIV1Kind()


def _backoff_exceeded(ctx: JobReconcile) -> bool:
    """Upstream's PastBackoffLimit: restarts of running pods whose restartPolicy restarts them."""
    limit = ctx.job.run_policy.backoff_limit
    if limit is None:
        return False
    restarts = 0
    for rtype, spec in ctx.job.replica_specs.items():
        if spec is None or spec.restart_policy not in (RESTART_ON_FAILURE, RESTART_ALWAYS):
            continue
        kind = rtype.lower()
        for pod in ctx.pods:
            if phase(pod) == "Running" and replica_type(pod) == kind:
                restarts += restart_count(pod)
    return restarts > 0 and restarts >= limit


def _reconcile(ctx: JobReconcile, delivery_image: str) -> None:
    status = ctx.status
    if cleanup.settle(ctx):
        return
    failure = None
    if _backoff_exceeded(ctx):
        failure = limits.backoff_message(ctx.name)
    else:
        left = limits.seconds_left(ctx)
        if left is not None and left <= 0:
            failure = limits.deadline_message(ctx.name)
    if failure is not None:
        if ctx.fail(failure):
            ctx.event("Normal", "MPIJobFailed", failure)
        cleanup.finish(ctx)
        return
    if gang.holds_pods(ctx):
        return
    if status.start_time is None:
        status.start_time = ctx.stamp
    launcher, workers = _mpi_pass(ctx, delivery_image)
    if launcher is False:
        return  # ErrResourceExists: upstream stops here and retries
    _update_status(ctx, launcher, workers)
    if is_finished(status):
        ctx.plan.actions[:] = [a for a in ctx.plan.actions if not _is_pod_create(a)]
        cleanup.finish(ctx)
        return
    limits.requeue_for_deadline(ctx)


def _is_pod_create(action: object) -> bool:
    return isinstance(action, CreateObject) and action.obj.get("kind") == "Pod"


def _mpi_pass(ctx: JobReconcile, delivery_image: str) -> tuple[JsonDict | bool | None, list[JsonDict | None]]:
    """training-operator's MPI ReconcilePods. Returns (launcher pod or None, worker pods), or
    (False, []) when a same-named object that is not ours blocks the job."""
    sync = ctx.owned
    spec = v1_spec(ctx.job)
    launcher_name = objects.launcher_name(ctx)
    launcher = sync.get(POD, launcher_name)
    if launcher is not None and not sync.controlled(launcher):
        return False, []
    if launcher is not None and phase(launcher) in ("Succeeded", "Failed"):
        return launcher, []
    gpu = objects.is_gpu_launcher(ctx)
    slots = spec.slots_per_worker if spec.slots_per_worker is not None else 1
    if objects.service_account_name(ctx) == launcher_name:
        sync.ensure(objects.service_account(ctx))
    running = sorted(name_of(p) for p in _worker_pods(ctx) if phase(p) == "Running")
    sync.ensure(objects.config_map(ctx, slots, spec.main_container, running, gpu), data_differ)
    sync.ensure(objects.role(ctx), rules_differ)
    sync.ensure(objects.role_binding(ctx))
    if sync.blocked:
        return False, []
    workers = _reconcile_workers(ctx, sync)
    if sync.blocked:
        return False, []
    if ctx.config.gang_scheduling and gang.custom_scheduler_set(ctx):
        ctx.event("Warning", SET_SCHEDULER_NAME, events.SCHEDULER_NOT_OVERWRITTEN)
    if launcher is None:
        pod, warned = objects.launcher_pod(ctx, delivery_image, gpu)
        if warned:
            ctx.event("Warning", SET_RESTART_POLICY, events.RESTART_POLICY_OVERWRITTEN)
        ctx.plan.actions.append(CreateObject(pod))
        ctx.event("Normal", "MPIJobRunning", f"launcher pod created success: {launcher_name}")
    return launcher, workers


def _worker_pods(ctx: JobReconcile) -> list[JsonDict]:
    prefix = f"{ctx.name}-worker-"
    return [p for p in ctx.pods if name_of(p).startswith(prefix) and name_of(p)[len(prefix) :].isdigit()]


def _reconcile_workers(ctx: JobReconcile, sync: OwnedObjects) -> list[JsonDict | None]:
    prefix = f"{ctx.name}-worker-"
    count = objects.worker_count(ctx)
    for pod in _worker_pods(ctx):
        if int(name_of(pod)[len(prefix) :]) >= count:
            ctx.delete(pod, events.SUCCESSFUL_DELETE_POD, events.deleted_pod(name_of(pod)))
    found: list[JsonDict | None] = []
    for index in range(count):
        current = sync.get(POD, f"{prefix}{index}")
        if current is None:
            pod = objects.worker_pod(ctx, index)
            ctx.plan.actions.append(CreateObject(pod))
            ctx.event("Normal", events.SUCCESSFUL_CREATE_POD, f"Created worker pod: {name_of(pod)}")
        elif not sync.controlled(current):
            return []
        found.append(current)
    return found


def _update_status(
    ctx: JobReconcile, launcher: JsonDict | bool | None, workers: list[JsonDict | None]
) -> None:
    """Replica statuses from the launcher pod and the workers, then the MPIJob rules of
    training-operator's UpdateJobStatus (Launcher decides success; any failure fails the job)."""
    status = ctx.status
    launcher_status = ReplicaStatus()
    if isinstance(launcher, dict):
        launcher_phase = phase(launcher)
        launcher_status.succeeded = 1 if launcher_phase == "Succeeded" else 0
        launcher_status.failed = 1 if launcher_phase == "Failed" else 0
        launcher_status.active = 1 if launcher_phase == "Running" else 0
    status.replica_statuses[LAUNCHER] = launcher_status
    worker_status = ReplicaStatus()
    for pod in workers:
        pod_phase = phase(pod) if pod is not None else ""
        if pod_phase == "Failed":
            worker_status.failed += 1
        elif pod_phase == "Succeeded":
            worker_status.succeeded += 1
        elif pod_phase == "Running":
            worker_status.active += 1
    status.replica_statuses[WORKER] = worker_status
    for rtype in (LAUNCHER, WORKER):
        spec = ctx.job.replica_specs.get(rtype)
        if spec is None:
            continue
        counts = status.replica_statuses[rtype]
        if rtype == LAUNCHER:
            if counts.active > 0:
                ctx.condition(COND_RUNNING, TRUE, "MPIJobRunning", f"MPIJob {ctx.name} is running.")
            if (spec.replicas or 0) - counts.succeeded == 0:
                message = f"MPIJob {ctx.name} is successfully completed."
                if ctx.condition(COND_SUCCEEDED, TRUE, "MPIJobSucceeded", message):
                    ctx.event("Normal", "MPIJobSucceeded", message)
                    ctx.metric(METRIC_SUCCESSFUL)
                if status.completion_time is None:
                    status.completion_time = ctx.stamp
                return
        if counts.failed > 0:
            if spec.restart_policy == RESTART_EXIT_CODE:
                message = (
                    f"MPIJob {ctx.name} is restarting because {counts.failed} {rtype} replica(s) failed."
                )
                if ctx.condition(COND_RESTARTING, TRUE, "MPIJobRestarting", message):
                    ctx.event("Warning", "MPIJobRestarting", message)
                    ctx.metric(METRIC_RESTARTED)
            else:
                message = f"MPIJob {ctx.name} is failed because {counts.failed} {rtype} replica(s) failed."
                detail = exit_detail(launcher) if rtype == LAUNCHER and isinstance(launcher, dict) else ""
                if detail:  # kubetrain addition: how the launcher failed (a malformed mpirun...)
                    message = f"{message[:-1]}: {detail}."
                if ctx.fail(message):
                    ctx.event("Normal", "MPIJobFailed", message)
    if has_condition(status, COND_FAILED) and status.completion_time is None:
        status.completion_time = ctx.stamp
