"""Why a job's pods are not running, in the node's and the scheduler's own words, one line each.

Pure functions of a pod (and the nodes, for "can never fit"): `kubetrain run` prints each finding
once as it appears and stops a job that no retry can help; `describe` lists the current ones. The
messages are the ones kubelet and kube-scheduler put in the pod status, so the same YAML says the
same thing locally and on a cluster.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from kubetrain.client.jobstate import replica_label
from kubetrain.kube.podresources import pod_requests, quantities
from kubetrain.kube.quantity import format_quantity

JsonDict = dict[str, Any]

CANNOT_START = frozenset(
    {
        "StartError",
        "RunContainerError",
        "CreateContainerError",
        "CreateContainerConfigError",
        "ErrImagePull",
        "ImagePullBackOff",
        "InvalidImageName",
    }
)
"""Container waiting/terminated reasons meaning "the process never ran" (kubelet's reasons)."""
DEFAULT_SCHEDULERS = frozenset({"", "default-scheduler"})


@dataclass(frozen=True)
class Finding:
    """One thing a user should know about a pod; `key` makes a repeat of it no news."""

    key: tuple[str, ...]
    replica: str
    message: str
    fatal: bool = False
    """No retry can help (a request no node can ever hold, a start error that repeats)."""


def pod_findings(
    pod: JsonDict, job_name: str, nodes: Sequence[JsonDict] = (), job_pods: int | None = None
) -> list[Finding]:
    """What is wrong with `pod` now; `nodes` lets "waits for room" be told from "never fits", and
    `job_pods` (how many pods the job will ever have) a gang that waits from one that never fills."""
    replica = replica_label(pod, job_name)
    uid = str((pod.get("metadata") or {}).get("uid", ""))
    findings = _scheduling(pod, replica, uid, nodes, job_pods)
    for cs in _container_statuses(pod):
        findings += _container(pod, cs, replica, uid)
    return findings


def _scheduling(
    pod: JsonDict, replica: str, uid: str, nodes: Sequence[JsonDict], job_pods: int | None
) -> list[Finding]:
    for cond in (pod.get("status") or {}).get("conditions") or ():
        if cond.get("type") != "PodScheduled" or cond.get("status") != "False":
            continue
        if cond.get("reason") != "Unschedulable":
            continue
        message = str(cond.get("message") or "no node fits it")
        never = never_fits(pod, nodes)
        if never is not None:  # the scheduler's message says which flag (locally) or what is short
            text = f"{replica} can never be scheduled ({never}): {message}"
            return [Finding(("never-fits", uid), replica, text, fatal=True)]
        need = gang_needs(message)
        if need is not None and job_pods is not None and need > job_pods:
            why = f"its gang needs {need} pods, the job has {job_pods}: lower schedulingPolicy.minAvailable"
            text = f"{replica} can never be scheduled ({why}): {message}"
            return [Finding(("gang-never-fills", uid), replica, text, fatal=True)]
        return [Finding(("unschedulable", uid, message), replica, f"{replica} is not scheduled: {message}")]
    return []


_GANG_SHORT = (
    re.compile(r"current pods number: \d+, minMember of group: (\d+)"),  # scheduler-plugins
    re.compile(r"Not enough valid tasks for gang-scheduling, valid: \d+, min: (\d+)"),  # Volcano
)


def gang_needs(message: str) -> int | None:
    """The gang's minMember, from a coscheduling scheduler's "not enough pods" message."""
    for pattern in _GANG_SHORT:
        match = pattern.search(message)
        if match:
            return int(match.group(1))
    return None


def never_fits(pod: JsonDict, nodes: Sequence[JsonDict]) -> str | None:
    """`it requests 64 cpu; the node has 2` when no node could hold the pod even empty; None when
    one could (or no node is known: then nothing can be said)."""
    if not nodes:
        return None
    wanted = {name: value for name, value in pod_requests(pod).items() if value > 0}
    best: tuple[str, Fraction, Fraction] | None = None
    for node in nodes:
        status = node.get("status") or {}
        allocatable = quantities(status.get("allocatable") or status.get("capacity"))
        short = [(name, value, allocatable.get(name, Fraction(0))) for name, value in wanted.items()]
        short = [item for item in short if item[1] > item[2]]
        if not short:
            return None
        if best is None or short[0][2] > best[2]:
            best = short[0]
    assert best is not None
    name, want, has = best
    where = "the node has" if len(nodes) == 1 else "the largest node has"
    return f"it requests {_amount(want, name)} {name}; {where} {_amount(has, name)}"


def _amount(value: Fraction, resource: str) -> str:
    return format_quantity(value, binary=resource in ("memory", "ephemeral-storage"))


def _container_statuses(pod: JsonDict) -> list[JsonDict]:
    status = pod.get("status") or {}
    return [*(status.get("initContainerStatuses") or ()), *(status.get("containerStatuses") or ())]


def _container(pod: JsonDict, cs: JsonDict, replica: str, uid: str) -> list[Finding]:
    name = str(cs.get("name", ""))
    state = cs.get("state") or {}
    last = (cs.get("lastState") or {}).get("terminated") or {}
    restarts = int(cs.get("restartCount") or 0)
    findings = []
    failed_start = _start_failure(state, last)
    if failed_start is not None:
        # The same start error after a restart: the next attempt will meet it too.
        last_failed_alike = last.get("reason") in CANNOT_START and last.get("message") == failed_start
        repeated = restarts >= 1 and last_failed_alike
        findings.append(
            Finding(
                ("cannot-start", uid, name, failed_start),
                replica,
                f"{replica} cannot start container {name}: {failed_start}",
                fatal=repeated,
            )
        )
    if restarts and last and last.get("reason") not in CANNOT_START:
        policy = (pod.get("spec") or {}).get("restartPolicy") or "Always"
        findings.append(
            Finding(
                ("restart", uid, name, str(restarts)),
                replica,
                f"{_who(replica, name, pod)} exited with code {last.get('exitCode')}, "
                f"restart {restarts} ({policy})",
            )
        )
    return findings


def _start_failure(state: JsonDict, last: JsonDict) -> str | None:
    """The node's message when the container's process could not be started."""
    for current in (state.get("waiting"), state.get("terminated")):
        if current and current.get("reason") in CANNOT_START:
            return str(current.get("message") or current.get("reason"))
    backing_off = (state.get("waiting") or {}).get("reason") == "CrashLoopBackOff"
    if backing_off and last.get("reason") in CANNOT_START:
        return str(last.get("message") or last.get("reason"))
    return None


def _who(replica: str, container: str, pod: JsonDict) -> str:
    containers = (pod.get("spec") or {}).get("containers") or ()
    return replica if len(containers) <= 1 else f"{replica}/{container}"


def waiting_for(pod: JsonDict) -> str:
    """Why a pod that is not running is not: `Pending: 0/1 nodes are available: ...`, etc."""
    status = pod.get("status") or {}
    phase = str(status.get("phase") or "Pending")
    for cond in status.get("conditions") or ():
        if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
            return f"{phase}: {cond.get('message') or cond.get('reason')}"
    spec = pod.get("spec") or {}
    scheduler = str(spec.get("schedulerName") or "")
    if not spec.get("nodeName") and scheduler not in DEFAULT_SCHEDULERS:
        return f"{phase}: waits for the scheduler {scheduler!r}"
    for cs in _container_statuses(pod):
        waiting = (cs.get("state") or {}).get("waiting")
        if waiting:
            return f"{phase}: {cs.get('name')} {waiting.get('reason')}" + (
                f" ({waiting['message']})" if waiting.get("message") else ""
            )
    return phase


def is_running(pod: JsonDict) -> bool:
    status = pod.get("status") or {}
    if status.get("phase") != "Running":
        return False
    return all((cs.get("state") or {}).get("running") for cs in status.get("containerStatuses") or ())
