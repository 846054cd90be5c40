"""The MPIJob v1 planner: training-operator's common ReconcileJobs around the MPI pod pass.

The job-level policies are the generic path's own modules, run on a `Reconcile` (suspend and
resume, cleanPodPolicy, TTL, activeDeadlineSeconds, PodGroups), so v1 MPIJobs behave like the
other v1 kinds there. The MPI pass (spec §4.7) then keeps the launcher's ConfigMap and RBAC, the
workers and the launcher pod, and the status follows training-operator's MPI rules with the
double-prefixed failure reason fixed (`MPIJobFailed`, not `MPIJobMPIJobFailed`, §13.9) and without
the "... is exist" events it emits on every pass.
"""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar

from kubetrain.api.codec import encode
from kubetrain.api.conditions import TRUE, get_condition, has_condition, is_finished
from kubetrain.api.defaults_mpi import default_v1
from kubetrain.api.kinds import (
    COND_CREATED,
    COND_FAILED,
    COND_RESTARTING,
    COND_RUNNING,
    COND_SUCCEEDED,
    COND_SUSPENDED,
    KUBEFLOW_JOBS_CONTROLLER,
    RESTART_ALWAYS,
    RESTART_EXIT_CODE,
    RESTART_ON_FAILURE,
    KindInfo,
)
from kubetrain.api.kinds_mpi import MPIJOB_V1, v1_spec
from kubetrain.api.types import JobStatus, ReplicaStatus, TrainingJob
from kubetrain.api.types_mpi import LAUNCHER, WORKER
from kubetrain.api.validation_mpi import validate_v1
from kubetrain.controller import cleanup, events, gang, limits, ttl
from kubetrain.controller.adoption import owned_pods
from kubetrain.controller.config import ControllerConfig
from kubetrain.controller.context import Reconcile
from kubetrain.controller.mpi import v1_objects as objects
from kubetrain.controller.mpi.common import POD, Sync, data_differ, exit_detail, rules_differ
from kubetrain.controller.names import JsonDict, name_of, replica_type
from kubetrain.controller.plan import CreateObject, Observed, Plan
from kubetrain.controller.pods import phase, restart_count
from kubetrain.controller.status import changed_status, move_active_to_succeeded
from kubetrain.frameworks.base import FrameworkSettings, StatusContext
from kubetrain.kube.timefmt import format_time

METRIC_CREATED = "training_operator_jobs_created_total"
METRIC_SUCCESSFUL = "training_operator_jobs_successful_total"
METRIC_RESTARTED = "training_operator_jobs_restarted_total"
SET_RESTART_POLICY = "SettedPodTemplateRestartPolicy"
SET_SCHEDULER_NAME = "SettedPodTemplateSchedulerName"


class MPIV1Framework:
    """The generic helpers read a framework from the context; MPI's pass is its own, so every
    hook is inert here."""

    info: ClassVar[KindInfo] = MPIJOB_V1
    sets_replica_selector: ClassVar[bool] = False

    def is_master_role(self, job: TrainingJob, rtype: str, index: int) -> bool:
        return rtype == LAUNCHER

    def set_cluster_spec(
        self, job: TrainingJob, pod: JsonDict, rtype: str, index: int, settings: FrameworkSettings
    ) -> None:
        return None

    def update_status(self, ctx: StatusContext) -> None:
        return None

    def desired_children(self, job: TrainingJob, settings: FrameworkSettings) -> list[JsonDict]:
        return []


FRAMEWORK = MPIV1Framework()


def exists_message(name: str, kind: str) -> str:
    return f'Resource "{name}" of MPIJobKind "{kind}" already exists and is not managed by MPIJob'


def plan_v1(
    job: TrainingJob, observed: Observed, now: datetime, config: ControllerConfig, delivery_image: str
) -> Plan:
    manager = job.run_policy.managed_by
    if manager is not None and manager != KUBEFLOW_JOBS_CONTROLLER:
        return Plan()
    if job.metadata.get("deletionTimestamp"):
        return Plan()
    status = job.status if job.status is not None else JobStatus()
    before = encode(status)
    problem = validate_v1(job)
    defaulted = job if problem else default_v1(job)
    pods, foreign = owned_pods(defaulted, observed.pods)
    ctx = Reconcile(
        job=defaulted,
        info=MPIJOB_V1,
        framework=FRAMEWORK,
        config=config,
        now=now,
        stamp=format_time(now),
        status=status,
        pods=pods,
        services=[],
        observed=observed,
        foreign_pod_names=foreign,
    )
    if get_condition(status, COND_CREATED) is None and ctx.condition(
        COND_CREATED, TRUE, "MPIJobCreated", f"MPIJob {ctx.name} is created."
    ):
        ctx.metric(METRIC_CREATED)
    if problem:
        if ctx.fail(problem, suffix="FailedValidation"):
            ctx.event("Warning", "MPIJobFailedValidation", problem)
        if is_finished(status):
            ttl.apply_ttl(ctx)
    else:
        _reconcile(ctx, delivery_image)
    ctx.plan.status = changed_status(before, status)
    return ctx.plan


def _finish(ctx: Reconcile) -> None:
    """cleanPodPolicy (the launcher finished, so Running deletes the workers), PodGroup, TTL."""
    cleanup.delete_pods_and_services(ctx, ctx.job.run_policy.clean_pod_policy)
    gang.delete_pod_group(ctx)
    if has_condition(ctx.status, COND_SUCCEEDED):
        move_active_to_succeeded(ctx.status)
    if ctx.status.completion_time is None:
        ctx.status.completion_time = ctx.stamp
    ttl.apply_ttl(ctx)


def _backoff_exceeded(ctx: Reconcile) -> bool:
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


def _reconcile(ctx: Reconcile, delivery_image: str) -> None:
    status = ctx.status
    if is_finished(status):
        _finish(ctx)
        return
    if ctx.job.run_policy.suspend:
        cleanup.suspend(ctx)
        return
    if has_condition(status, COND_SUSPENDED):
        cleanup.resume(ctx)
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
        _finish(ctx)
        return
    if ctx.config.gang_scheduling and gang.sync_pod_group(ctx):
        if status.last_reconcile_time is None:
            status.last_reconcile_time = ctx.stamp
        return
    if status.start_time is None:
        status.start_time = ctx.stamp
    launcher, workers = _mpi_pass(ctx, delivery_image)
    if launcher is False:
        return  # ErrResourceExists: upstream stops here and retries
    _update_status(ctx, launcher, workers)
    if is_finished(status):
        ctx.plan.actions[:] = [a for a in ctx.plan.actions if not _is_pod_create(a)]
        _finish(ctx)
        return
    limits.requeue_for_deadline(ctx)


def _is_pod_create(action: object) -> bool:
    return isinstance(action, CreateObject) and action.obj.get("kind") == "Pod"


def _mpi_pass(ctx: Reconcile, delivery_image: str) -> tuple[JsonDict | bool | None, list[JsonDict | None]]:
    """training-operator's MPI ReconcilePods. Returns (launcher pod or None, worker pods), or
    (False, []) when a same-named object that is not ours blocks the job."""
    sync = Sync(ctx.observed, ctx.job.uid, ctx.namespace, ctx.owner(), exists_message, plan=ctx.plan)
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


def _worker_pods(ctx: Reconcile) -> list[JsonDict]:
    prefix = f"{ctx.name}-worker-"
    return [p for p in ctx.pods if name_of(p).startswith(prefix) and name_of(p)[len(prefix) :].isdigit()]


def _reconcile_workers(ctx: Reconcile, sync: Sync) -> list[JsonDict | None]:
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


def _update_status(ctx: Reconcile, launcher: JsonDict | bool | None, workers: list[JsonDict | None]) -> None:
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
