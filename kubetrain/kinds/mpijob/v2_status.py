"""MPIJob v2beta1 status: mpi-operator's `updateMPIJobStatus`.

Upstream's: docs/upstream-behaviour.md#mpijob-v2beta1-status.

Only the launcher decides success or failure; worker failures count but do not fail the job,
except evictions. Events are recorded when their condition changes (upstream re-emits some on
every sync; the event recorder would aggregate them anyway).
"""

from __future__ import annotations

from dataclasses import dataclass

from kubetrain.api.conditions import (
    FALSE,
    MPI_OPERATOR_RULES,
    TRUE,
    get_condition,
    is_finished,
    set_condition,
)
from kubetrain.api.kinds import COND_FAILED, COND_RUNNING, COND_SUCCEEDED, COND_SUSPENDED
from kubetrain.api.types import JobCondition, JobStatus, ReplicaStatus
from kubetrain.controller.names import JsonDict, meta, name_of
from kubetrain.controller.owned import OwnedObjects, as_dict, exit_detail, job_condition
from kubetrain.controller.pods import phase
from kubetrain.kinds.mpijob.types import LAUNCHER, WORKER

METRIC_SUCCESSFUL = "mpi_operator_jobs_successful_total"
METRIC_FAILED = "mpi_operator_jobs_failed_total"
BACKOFF_LIMIT_EXCEEDED = "BackoffLimitExceeded"
MESSAGE_LIMIT = 1024


@dataclass
class StatusInputs:
    name: str
    namespace: str
    suspended: bool
    launcher: JsonDict | None
    launcher_pods: list[JsonDict]
    workers: list[JsonDict | None]
    """The pods of indices 0..replicas-1 this pass looked at (None: being created); [] when the
    pass did not look (suspended, launcher finished)."""


def _failure(inputs: StatusInputs, cond: JsonDict) -> tuple[str, str]:
    """Reason and message of a failed launcher Job, with the last failed pod's details appended
    when the Job gave up on its backoff limit.

    Differences from upstream: the `/<pod reason>` suffix is left out when the pod has no reason
    (upstream writes a trailing slash), and when the pod has no status message the exit code of
    its first terminated container is given instead, so a failed `mpirun` says how it failed.
    """
    key = f"{inputs.namespace}/{inputs.name}"
    reason = str(cond.get("reason") or "MPIJobFailed")
    message = str(cond.get("message") or f"MPIJob {key} has failed")
    if reason != BACKOFF_LIMIT_EXCEEDED:
        return reason, message
    failed = [p for p in inputs.launcher_pods if phase(p) == "Failed"]
    if not failed:
        return reason, message
    last = max(failed, key=lambda p: (str(meta(p).get("creationTimestamp", "")), name_of(p)))
    pod_status = as_dict(last.get("status"))
    if pod_status.get("reason"):
        reason += "/" + str(pod_status["reason"])
    detail = str(pod_status.get("message") or "") or exit_detail(last)
    if detail:
        message += ": " + detail
    if len(message) > MESSAGE_LIMIT:
        message = message[: MESSAGE_LIMIT - 3] + "..."
    return reason, message


def update_status(sync: OwnedObjects, status: JobStatus, inputs: StatusInputs, stamp: str) -> None:
    key = f"{inputs.namespace}/{inputs.name}"

    def cond(cond_type: str, cond_status: str, reason: str, message: str) -> bool:
        return set_condition(status, cond_type, cond_status, reason, message, stamp, MPI_OPERATOR_RULES)

    if inputs.suspended:
        if cond(COND_SUSPENDED, TRUE, "MPIJobSuspended", "MPIJob suspended"):
            sync.event("Normal", "MPIJobSuspended", "MPIJob suspended")
    elif get_condition(status, COND_SUSPENDED) is not None and cond(
        COND_SUSPENDED, FALSE, "MPIJobResumed", "MPIJob resumed"
    ):
        sync.event("Normal", "MPIJobResumed", "MPIJob resumed")
        status.start_time = stamp
    launcher_running = 0
    launcher = inputs.launcher
    if launcher is not None:
        launcher_running = sum(1 for p in inputs.launcher_pods if phase(p) == "Running")
        launcher_status = ReplicaStatus()
        status.replica_statuses[LAUNCHER] = launcher_status
        job_status = as_dict(launcher.get("status"))
        failed = job_status.get("failed")
        launcher_status.failed = failed if isinstance(failed, int) else 0
        failed_cond = job_condition(launcher, "Failed")
        if job_condition(launcher, "Complete") is not None:
            launcher_status.succeeded = 1
            message = f"MPIJob {key} successfully completed."
            if status.completion_time is None:
                status.completion_time = job_status.get("completionTime") or stamp
            if cond(COND_SUCCEEDED, TRUE, "MPIJobSucceeded", message):
                sync.event("Normal", "MPIJobSucceeded", message)
                sync.metric(METRIC_SUCCESSFUL)
        elif failed_cond is not None:
            reason, message = _failure(inputs, failed_cond)
            if status.completion_time is None:
                status.completion_time = stamp
            if cond(COND_FAILED, TRUE, reason, message):
                sync.event("Warning", reason, message)
                sync.metric(METRIC_FAILED)
        else:
            launcher_status.active = launcher_running
    worker_status = ReplicaStatus()
    status.replica_statuses[WORKER] = worker_status
    running = evicted = 0
    for pod in inputs.workers:
        pod_phase = phase(pod) if pod is not None else ""
        if pod_phase == "Failed":
            worker_status.failed += 1
            pod_status = as_dict(pod.get("status")) if pod is not None else {}
            if pod_status.get("reason") == "Evicted":
                evicted += 1
        elif pod_phase == "Succeeded":
            worker_status.succeeded += 1
        elif pod_phase == "Running":
            running += 1
            worker_status.active += 1
    if evicted:
        message = f"{evicted}/{len(inputs.workers)} workers are evicted"
        if cond(COND_FAILED, TRUE, "MPIJobEvicted", message):
            sync.event("Warning", "MPIJobEvicted", message)
    if inputs.suspended:
        cond(COND_RUNNING, FALSE, "MPIJobSuspended", f"MPIJob {key} is suspended.")
    elif is_finished(status) and get_condition(status, COND_RUNNING) is None:
        # Placed before the terminal condition, so the last condition (the State column) stays
        # Succeeded or Failed.
        message = f"MPIJob {key} is finished but Running condition was never set."
        moment = status.completion_time or stamp
        never = JobCondition(COND_RUNNING, FALSE, "MPIJobRunning", message, moment, moment)
        status.conditions.insert(max(len(status.conditions) - 1, 0), never)
    elif (
        launcher is not None
        and not is_finished(status)
        and launcher_running >= 1
        and running == len(inputs.workers)
        and cond(COND_RUNNING, TRUE, "MPIJobRunning", f"MPIJob {key} is running.")
    ):
        sync.event("Normal", "MPIJobRunning", f"MPIJob {key} is running")
