"""The MPIJob v1alpha2 planner: the original mpi-operator's (v0.2) `syncHandler` on `run_job`.

Upstream's: docs/upstream-behaviour.md#mpijob-v1alpha2.

being deleted                                -> nothing                          (run_job)
invalid (no Launcher or Worker to run)        -> Warning ValidationError, nothing else (run_job)
Created condition                             (first sight, no event, as upstream)
Succeeded or Failed                          -> cleanPodPolicy All/Running: worker StatefulSet
                                                scaled to 0, Worker active 0; stop
launcher Job absent or running               -> ConfigMap, ServiceAccount, Role, RoleBinding,
                                                worker StatefulSet (replicas kept in line),
                                                launcher Job (its init container waits for the
                                                workers)
status                                        launcher Job counts and conditions, Worker active
                                                = the StatefulSet's ready replicas, Running once
                                                the launcher is active and every worker is ready
"""

from __future__ import annotations

from datetime import datetime

from kubetrain.api.conditions import TRUE, is_finished, set_condition
from kubetrain.api.fielderrors import ErrorList
from kubetrain.api.kinds import (
    CLEAN_POD_ALL,
    CLEAN_POD_RUNNING,
    COND_CREATED,
    COND_FAILED,
    COND_RESTARTING,
    COND_RUNNING,
    COND_SUCCEEDED,
    KindInfo,
)
from kubetrain.api.types import JobStatus, ReplicaStatus, TrainingJob
from kubetrain.controller.context import JobReconcile
from kubetrain.controller.job import JobKind
from kubetrain.controller.names import JsonDict
from kubetrain.controller.owned import (
    BATCH_JOB,
    STATEFUL_SET,
    OwnedObjects,
    as_dict,
    job_condition,
    job_finished,
)
from kubetrain.controller.plan import CreateObject
from kubetrain.kinds.mpijob import v1alpha2_objects as objects
from kubetrain.kinds.mpijob.defaults import default_v1alpha2
from kubetrain.kinds.mpijob.types import LAUNCHER, WORKER, MPIJobV1Alpha2Spec
from kubetrain.kinds.mpijob.validation import validate_v1alpha2, validation_event_message
from kubetrain.kinds.mpijob.wire import v1alpha2_spec

METRIC_SUCCESSFUL = "mpi_operator_jobs_successful_total"
METRIC_FAILED = "mpi_operator_jobs_failed_total"
SET_RESTART_POLICY = "SettedPodTemplateRestartPolicy"
RESTART_POLICY_OVERWRITTEN = (
    "Restart policy in pod template will be overwritten by restart policy in replica spec"
)


class MPIV1Alpha2Kind(JobKind[TrainingJob, JobStatus]):
    """The original mpi-operator's MPIJob: `run_job`'s shared steps (an invalid job only warns),
    then `_run`. It has no managedBy and no suspend."""

    one_step_per_pass = True

    def initial_status(self) -> JobStatus:
        return JobStatus()

    def prepare(
        self, job: TrainingJob, info: KindInfo, errors: ErrorList, now: datetime
    ) -> tuple[TrainingJob, str]:
        problems = validate_v1alpha2(job)
        return default_v1alpha2(job), validation_event_message(problems) if problems else ""

    def exists_message(self, name: str, kind: str) -> str:
        return f'Resource "{name}" of Kind "{kind}" already exists and is not managed by MPIJob'

    def created(self, ctx: JobReconcile) -> None:
        """`addMPIJob`'s Created condition (no event, not counted)."""
        if not ctx.status.conditions:
            message = f"MPIJob {ctx.namespace}/{ctx.name} is created."
            set_condition(ctx.status, COND_CREATED, TRUE, "MPIJobCreated", message, ctx.stamp)

    def reconcile(self, ctx: JobReconcile) -> None:
        _run(ctx, ctx.owned, v1alpha2_spec(ctx.job))


KIND = MPIV1Alpha2Kind()


def _run(ctx: JobReconcile, sync: OwnedObjects, spec: MPIJobV1Alpha2Spec) -> None:
    status, name = ctx.status, ctx.name
    if is_finished(status):
        if spec.clean_pod_policy in (CLEAN_POD_ALL, CLEAN_POD_RUNNING):
            _scale_workers(sync, name, spec, 0)
            status.replica_statuses[WORKER] = ReplicaStatus()
        return
    if status.start_time is None:
        status.start_time = ctx.stamp
    launcher = sync.get(BATCH_JOB, name + objects.LAUNCHER_SUFFIX)
    if launcher is not None and not sync.controlled(launcher):
        return
    worker: JsonDict | None = None
    if launcher is None or not job_finished(launcher):
        workers = objects.worker_count(spec)
        sync.ensure(objects.config_map(sync, name, spec, workers))
        sync.ensure(objects.service_account(sync, name))
        sync.ensure(objects.role(sync, name, workers))
        sync.ensure(objects.role_binding(sync, name))
        if sync.blocked:
            return
        worker = _scale_workers(sync, name, spec, workers)
        if sync.blocked:
            return
        if launcher is None:
            launcher, warned = objects.launcher_job(sync, name, spec)
            if warned:
                ctx.event("Warning", SET_RESTART_POLICY, RESTART_POLICY_OVERWRITTEN)
            sync.plan.actions.append(CreateObject(launcher))
    _update_status(ctx, launcher, worker)


def _scale_workers(sync: OwnedObjects, name: str, spec: MPIJobV1Alpha2Spec, replicas: int) -> JsonDict | None:
    """`getOrCreateWorkerStatefulSet`: created when absent (and wanted), replicas kept in line;
    returns the observed StatefulSet, or the manifest being created."""
    desired = objects.worker_stateful_set(sync, name, spec, replicas)
    if sync.get(STATEFUL_SET, name + objects.WORKER_SUFFIX) is None:
        if replicas == 0:
            return None
        sync.plan.actions.append(CreateObject(desired))
        return desired
    return sync.ensure(desired, objects.replicas_differ)


def _complete(job: JsonDict) -> bool:
    return job_condition(job, "Complete") is not None


def _failed(job: JsonDict) -> bool:
    return job_condition(job, "Failed") is not None


def _update_status(ctx: JobReconcile, launcher: JsonDict | None, worker: JsonDict | None) -> None:
    """`updateMPIJobStatus`. Events are recorded when their condition changes (upstream records
    them on every sync of a finished launcher; the recorder aggregates them anyway)."""
    status, key = ctx.status, f"{ctx.namespace}/{ctx.name}"
    launcher_status = as_dict(launcher.get("status")) if launcher is not None else {}
    if launcher is not None:
        status.replica_statuses[LAUNCHER] = ReplicaStatus(
            active=int(launcher_status.get("active") or 0),
            succeeded=int(launcher_status.get("succeeded") or 0),
            failed=int(launcher_status.get("failed") or 0),
        )
        if _complete(launcher):
            _finish(ctx, COND_SUCCEEDED, "MPIJobSucceeded", f"MPIJob {key} successfully completed.")
        elif _failed(launcher):
            _finish(ctx, COND_FAILED, "MPIJobFailed", f"MPIJob {key} has failed")
        elif status.replica_statuses[LAUNCHER].failed > 0:
            message = f"MPIJob {key} is restarting."
            set_condition(status, COND_RESTARTING, TRUE, "MPIJobRestarting", message, ctx.stamp)
    ready, wanted = 0, 0
    if worker is not None:
        ready = int(as_dict(worker.get("status")).get("readyReplicas") or 0)
        wanted = int(as_dict(worker.get("spec")).get("replicas") or 0)
        status.replica_statuses[WORKER] = ReplicaStatus(active=ready)
    launcher_active = int(launcher_status.get("active") or 0)
    if launcher is not None and worker is not None and launcher_active > 0 and ready == wanted:
        set_condition(status, COND_RUNNING, TRUE, "MPIJobRunning", f"MPIJob {key} is running.", ctx.stamp)


def _finish(ctx: JobReconcile, cond_type: str, reason: str, message: str) -> None:
    status = ctx.status
    if status.completion_time is None:
        status.completion_time = ctx.stamp
    if set_condition(status, cond_type, TRUE, reason, message, ctx.stamp):
        ctx.event("Normal" if cond_type == COND_SUCCEEDED else "Warning", reason, message)
        ctx.metric(METRIC_SUCCESSFUL if cond_type == COND_SUCCEEDED else METRIC_FAILED, {})
