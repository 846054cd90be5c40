"""Event reasons and messages of the generic path, shared with the runtime.

Upstream's list: docs/upstream-behaviour.md#events.

The planner records the *successful* outcome of every write it asks for (`SuccessfulCreatePod`,
...) because it cannot know the result; the runtime swaps such an event for its failure twin with
`failure_event` when the write fails, so both sides spell reasons and messages the same way.
"""

from __future__ import annotations

import dataclasses

from kubetrain.controller.plan import Event

SUCCESSFUL_CREATE_POD = "SuccessfulCreatePod"
FAILED_CREATE_POD = "FailedCreatePod"
SUCCESSFUL_DELETE_POD = "SuccessfulDeletePod"
FAILED_DELETE_POD = "FailedDeletePod"
SUCCESSFUL_CREATE_SERVICE = "SuccessfulCreateService"
FAILED_CREATE_SERVICE = "FailedCreateService"
SUCCESSFUL_DELETE_SERVICE = "SuccessfulDeleteService"
FAILED_DELETE_SERVICE = "FailedDeleteService"
SUCCESSFUL_DELETE_POD_GROUP = "SuccessfulDeletePodGroup"
FAILED_DELETE_POD_GROUP = "FailedDeletePodGroup"
SUCCESSFUL_DELETE_JOB = "SuccessfulDeleteJob"
FAILED_DELETE_JOB = "FailedDeleteJob"
JOB_TERMINATED = "JobTerminated"
EXITED_WITH_CODE = "ExitedWithCode"
SET_RESTART_POLICY = "SetPodTemplateRestartPolicy"
SET_SCHEDULER_NAME = "SetPodTemplateSchedulerName"

RESTART_POLICY_OVERWRITTEN = (
    "Restart policy in pod template will be overwritten by restart policy in replica spec"
)
SCHEDULER_NOT_OVERWRITTEN = (
    "Another scheduler is specified when gang-scheduling is enabled and it will not be overwritten"
)
JOB_TERMINATED_MESSAGE = "Job has been terminated. Deleting PodGroup"
PORT_NOT_FOUND = "failed to find the port"

_FAILURE_TWIN = {
    SUCCESSFUL_CREATE_POD: FAILED_CREATE_POD,
    SUCCESSFUL_DELETE_POD: FAILED_DELETE_POD,
    SUCCESSFUL_CREATE_SERVICE: FAILED_CREATE_SERVICE,
    SUCCESSFUL_DELETE_SERVICE: FAILED_DELETE_SERVICE,
    SUCCESSFUL_DELETE_POD_GROUP: FAILED_DELETE_POD_GROUP,
    SUCCESSFUL_DELETE_JOB: FAILED_DELETE_JOB,
}
_CREATE_REASONS = {SUCCESSFUL_CREATE_POD, SUCCESSFUL_CREATE_SERVICE}


def created_pod(name: str) -> str:
    return f"Created pod: {name}"


def deleted_pod(name: str) -> str:
    return f"Deleted pod: {name}"


def created_service(name: str) -> str:
    return f"Created service: {name}"


def deleted_service(name: str) -> str:
    return f"Deleted service: {name}"


def deleted_pod_group(name: str) -> str:
    return f"Deleted PodGroup: {name}"


def deleted_job(name: str) -> str:
    return f"Deleted job: {name}"


def error_creating(error: object) -> str:
    return f"Error creating: {error}"


def error_deleting(error: object) -> str:
    return f"Error deleting: {error}"


def exited_with_code(namespace: str, pod: str, code: int) -> str:
    return f"Pod: {namespace}.{pod} exited with code {code}"


def failure_event(event: Event, error: object) -> Event | None:
    """The Warning the runtime records instead of `event` when its write failed; None if `event`
    does not announce a write (then the runtime keeps it as it is)."""
    twin = _FAILURE_TWIN.get(event.reason)
    if twin is None:
        return None
    message = error_creating(error) if event.reason in _CREATE_REASONS else error_deleting(error)
    return dataclasses.replace(event, type="Warning", reason=twin, message=message)
