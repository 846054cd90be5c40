"""Pods the node's previous process was running: accounted for as a restarted kubelet does.

When `kubetrain up` stops or is killed, its node's container processes die with it (the guardian
of `process` kills what a SIGKILL leaves), but the pods stay in the API server's state, with
containers still shown running. A new node process finds them bound to it. As the kubelet after a
restart that lost the pod's sandbox: with ``restartPolicy`` Always or OnFailure the containers are
started again (init containers first), each one that had been created with ``restartCount`` + 1
and the lost instance in ``lastState``; a container that already completed under OnFailure stays
completed. With Never nothing is restarted: the pod is Failed, every container not already
terminated is reported as the kubelet reports a container it cannot find any more
(``ContainerStatusUnknown``, exit code 137), and the job's controller applies its own policy.
A pod whose containers were never created simply starts.
"""

from __future__ import annotations

import time
from typing import Any

from kubetrain.kube.timefmt import parse_epoch

from .status import ContainerStatus, Terminated

JsonDict = dict[str, Any]

LOST_REASON = "ContainerStatusUnknown"
LOST_MESSAGE = "The container could not be located when the pod was terminated"
LOST_EXIT_CODE = 137
POD_LOST_MESSAGE = (
    "The pod's containers were lost when its node process stopped; restartPolicy Never: not restarted"
)


def _time(text: Any, default: float) -> float:
    parsed = parse_epoch(text)
    return default if parsed is None else parsed


def _terminated(raw: Any, now: float) -> Terminated | None:
    if not isinstance(raw, dict):
        return None
    return Terminated(
        int(raw.get("exitCode") or 0),
        str(raw.get("reason") or ""),
        _time(raw.get("startedAt"), now),
        _time(raw.get("finishedAt"), now),
        str(raw.get("message") or ""),
        str(raw.get("containerID") or ""),
    )


def _lost(started_at: float, now: float, container_id: str) -> Terminated:
    return Terminated(LOST_EXIT_CODE, LOST_REASON, started_at, now, LOST_MESSAGE, container_id)


def _previous(pod: JsonDict, field: str) -> dict[str, JsonDict]:
    statuses = (pod.get("status") or {}).get(field) or ()
    return {str(s.get("name")): s for s in statuses if isinstance(s, dict)}


def ran_before(pod: JsonDict) -> bool:
    """Whether a node already created containers of this pod (they carry a containerID)."""
    return any(
        s.get("containerID")
        for field in ("initContainerStatuses", "containerStatuses")
        for s in _previous(pod, field).values()
    )


def start_time(pod: JsonDict, default: float) -> float:
    """The pod's first start, kept across node restarts (activeDeadlineSeconds counts from it)."""
    return _time((pod.get("status") or {}).get("startTime"), default)


def carry_over(pod: JsonDict, inits: list[ContainerStatus], containers: list[ContainerStatus]) -> bool:
    """Fill the fresh statuses from what the previous node process reported.

    Returns True when the pod must not run again (restartPolicy Never): its containers are then
    all terminated. Call only when `ran_before`.
    """
    now = time.time()
    policy = (pod.get("spec") or {}).get("restartPolicy") or "Always"
    for statuses, field, init in (
        (inits, "initContainerStatuses", True),
        (containers, "containerStatuses", False),
    ):
        previous = _previous(pod, field)
        for st in statuses:
            old = previous.get(st.name)
            if old is None or not old.get("containerID"):
                if policy == "Never":
                    st.set_terminated(_lost(now, now, ""))
                continue
            _carry(st, old, policy, init, now)
    return policy == "Never"


def _carry(st: ContainerStatus, old: JsonDict, policy: str, init: bool, now: float) -> None:
    state = old.get("state") or {}
    count = int(old.get("restartCount") or 0)
    container_id = str(old.get("containerID") or "")
    last = _terminated((old.get("lastState") or {}).get("terminated"), now)
    if isinstance(state.get("running"), dict):
        ended: Terminated | None = _lost(_time(state["running"].get("startedAt"), now), now, container_id)
    else:
        ended = _terminated(state.get("terminated"), now)
    st.container_id = container_id
    if policy == "Never":
        st.restart_count, st.last_terminated = count, last
        st.set_terminated(ended or _lost(now, now, container_id))
        return
    if ended is not None and ended.exit_code == 0 and policy == "OnFailure" and not init:
        st.restart_count, st.last_terminated = count, last
        st.set_terminated(ended)  # completed for good: OnFailure does not run it again
        return
    st.restart_count = count + 1
    st.last_terminated = ended or last


def completed(st: ContainerStatus, policy: str) -> bool:
    """A container the restarted pod does not run again (it completed under OnFailure)."""
    return policy == "OnFailure" and st.terminated is not None and st.terminated.exit_code == 0
