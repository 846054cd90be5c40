"""Container and pod status, computed the way the kubelet reports it.

The pod worker keeps one `ContainerStatus` per container and calls `pod_status` to render the
whole ``status`` it writes through pods/status: phase from the containers (kubelet's
``getPhase``), the conditions PodReadyToStartContainers, Initialized, ContainersReady, Ready and
PodScheduled with stable transition times, and per-container state/lastState/restartCount.

Status is written as a merge patch, which replaces the whole ``conditions`` list: conditions the
kubelet does not own (PodScheduled from the scheduler, DisruptionTarget, readiness gates) are
carried over from the pod as they are, and ``qosClass``, which kube-apiserver sets at creation
and then refuses to change, is copied from the pod (computed only when absent).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from kubetrain.embedded.apiserver.defaults import qos_class
from kubetrain.kube.timefmt import format_time

JsonDict = dict[str, Any]

KUBELET_CONDITIONS = ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady")


@dataclass
class Terminated:
    exit_code: int
    reason: str
    started_at: float
    finished_at: float
    message: str = ""
    container_id: str = ""

    def render(self) -> JsonDict:
        out: JsonDict = {
            "exitCode": self.exit_code,
            "reason": self.reason,
            "startedAt": format_time(self.started_at),
            "finishedAt": format_time(self.finished_at),
        }
        if self.message:
            out["message"] = self.message
        if self.container_id:
            out["containerID"] = self.container_id
        return out


@dataclass
class ContainerStatus:
    """What the worker knows about one container; `render` gives the API's ContainerStatus."""

    name: str
    image: str
    waiting_reason: str = "ContainerCreating"
    waiting_message: str = ""
    running_since: float | None = None
    terminated: Terminated | None = None
    last_terminated: Terminated | None = None
    restart_count: int = 0
    container_id: str = ""
    allocated: list[JsonDict] = field(default_factory=list)
    """``allocatedResourcesStatus``: the devices (GPUs) the container holds for the pod's life."""

    def set_waiting(self, reason: str, message: str = "") -> None:
        self.waiting_reason, self.waiting_message = reason, message
        self.running_since = None
        if self.terminated is not None:
            self.last_terminated, self.terminated = self.terminated, None

    def set_running(self, since: float, container_id: str) -> None:
        if self.terminated is not None:
            self.last_terminated, self.terminated = self.terminated, None
        self.running_since, self.container_id = since, container_id
        self.waiting_reason = self.waiting_message = ""

    def set_terminated(self, term: Terminated) -> None:
        self.terminated, self.running_since = term, None
        self.waiting_reason = self.waiting_message = ""

    @property
    def state_name(self) -> str:
        if self.running_since is not None:
            return "running"
        return "terminated" if self.terminated is not None else "waiting"

    def render(self) -> JsonDict:
        state: JsonDict
        if self.running_since is not None:
            state = {"running": {"startedAt": format_time(self.running_since)}}
        elif self.terminated is not None:
            state = {"terminated": self.terminated.render()}
        else:
            waiting: JsonDict = {"reason": self.waiting_reason}
            if self.waiting_message:
                waiting["message"] = self.waiting_message
            state = {"waiting": waiting}
        out: JsonDict = {
            "name": self.name,
            "image": self.image,
            "imageID": "",
            "state": state,
            "lastState": {"terminated": self.last_terminated.render()} if self.last_terminated else {},
            "ready": self.running_since is not None,
            "restartCount": self.restart_count,
            "started": self.running_since is not None,
        }
        if self.container_id:
            out["containerID"] = self.container_id
        if self.allocated:
            out["allocatedResourcesStatus"] = self.allocated
        return out


@dataclass
class PodState:
    """Pod-level facts the worker tracks besides its containers."""

    pod_ip: str = ""
    host_ip: str = ""
    start_time: float = field(default_factory=time.time)
    sandbox_ready: bool = False
    initialized: bool = False
    reason: str = ""
    message: str = ""
    forced_phase: str = ""
    transitions: dict[str, tuple[str, float]] = field(default_factory=dict)

    def condition(
        self, kind: str, ok: bool, now: float, reason: str = "", message: str = "", generation: int = 0
    ) -> JsonDict:
        status = "True" if ok else "False"
        prev = self.transitions.get(kind)
        if prev is None or prev[0] != status:
            self.transitions[kind] = (status, now)
        out: JsonDict = {"type": kind, "status": status}
        if generation:
            out["observedGeneration"] = generation
        out["lastProbeTime"] = None
        out["lastTransitionTime"] = format_time(self.transitions[kind][1])
        if reason:
            out["reason"] = reason
        if message:
            out["message"] = message
        return out


def _go_list(names: list[str]) -> str:
    """A name list as Go's ``%s`` prints a []string, as in kubelet's condition messages."""
    return "[" + " ".join(names) + "]"


def kubelet_conditions(
    state: PodState,
    phase: str,
    inits: list[ContainerStatus],
    containers: list[ContainerStatus],
    pod: JsonDict,
    now: float,
) -> list[JsonDict]:
    """PodReadyToStartContainers, Initialized, Ready, ContainersReady as kubelet's ``status``
    package generates them (readiness = running: there are no readiness probes here)."""
    generation = int((pod.get("metadata") or {}).get("generation") or 0)
    spec = pod.get("spec") or {}

    def cond(kind: str, ok: bool, reason: str = "", message: str = "") -> JsonDict:
        return state.condition(kind, ok, now, reason, message, generation)

    terminal = phase in ("Succeeded", "Failed")
    started = any(c.state_name != "waiting" for c in containers)
    incomplete = [c.name for c in inits if c.terminated is None or c.terminated.exit_code != 0]
    if phase == "Succeeded":
        initialized = cond("Initialized", True, "PodCompleted")
    elif started or not incomplete:
        initialized = cond("Initialized", True)
    else:
        message = f"containers with incomplete status: {_go_list(incomplete)}"
        initialized = cond("Initialized", False, "ContainersNotInitialized", message)
    unready = [c.name for c in containers if c.state_name != "running"]
    if terminal:
        ready_args: tuple[bool, str, str] = (
            False,
            "PodCompleted" if phase == "Succeeded" else "PodFailed",
            "",
        )
    elif unready:
        ready_args = (False, "ContainersNotReady", f"containers with unready status: {_go_list(unready)}")
    else:
        ready_args = (True, "", "")
    containers_ready = cond("ContainersReady", *ready_args)
    if ready_args[0]:
        present = {c.get("type"): c.get("status") for c in (pod.get("status") or {}).get("conditions") or ()}
        gates: list[str] = []
        for gate in spec.get("readinessGates") or ():
            kind = gate.get("conditionType", "")
            if kind not in present:
                gates.append(f'corresponding condition of pod readiness gate "{kind}" does not exist.')
            elif present[kind] != "True":
                gates.append(f'the status of pod readiness gate "{kind}" is not "True", but {present[kind]}')
        if gates:
            ready_args = (False, "ReadinessGatesNotReady", ", ".join(gates))
    return [
        cond("PodReadyToStartContainers", state.sandbox_ready and not terminal),
        initialized,
        cond("Ready", *ready_args),
        containers_ready,
    ]


def phase_of(
    restart_policy: str, containers: list[ContainerStatus], initialized: bool, init_failed: bool
) -> str:
    """kubelet's ``getPhase``: a container waiting to restart counts as stopped, not waiting."""
    if init_failed:
        return "Failed"
    if not initialized:
        return "Pending"
    waiting = running = stopped = succeeded = 0
    for c in containers:
        if c.state_name == "running":
            running += 1
        elif c.state_name == "terminated":
            stopped += 1
            succeeded += int(c.terminated is not None and c.terminated.exit_code == 0)
        elif c.last_terminated is not None:
            stopped += 1
        else:
            waiting += 1
    if waiting:
        return "Pending"
    if running:
        return "Running"
    if stopped:
        if restart_policy == "Always":
            return "Running"
        if stopped == succeeded:
            return "Succeeded"
        return "Failed" if restart_policy == "Never" else "Running"
    return "Pending"


def pod_status(
    state: PodState,
    restart_policy: str,
    inits: list[ContainerStatus],
    containers: list[ContainerStatus],
    init_failed: bool,
    now: float | None = None,
    pod: JsonDict | None = None,
) -> JsonDict:
    """The ``status`` to write for the pod `pod` (whose spec and current status it reads)."""
    now = time.time() if now is None else now
    current = (pod or {}).get("status") or {}
    phase = state.forced_phase or phase_of(restart_policy, containers, state.initialized, init_failed)
    conditions = kubelet_conditions(state, phase, inits, containers, pod or {}, now)
    others = [c for c in current.get("conditions") or () if c.get("type") not in KUBELET_CONDITIONS]
    if not any(c.get("type") == "PodScheduled" for c in others):
        others.insert(0, state.condition("PodScheduled", True, now))  # bound by hand, no scheduler
    conditions += others
    status: JsonDict = {
        "phase": phase,
        "conditions": conditions,
        "hostIP": state.host_ip,
        "startTime": format_time(state.start_time),
        "containerStatuses": [c.render() for c in containers],
        "qosClass": current.get("qosClass") or qos_class((pod or {}).get("spec") or {}),
    }
    if state.host_ip:
        status["hostIPs"] = [{"ip": state.host_ip}]
    if state.pod_ip:
        status["podIP"] = state.pod_ip
        status["podIPs"] = [{"ip": state.pod_ip}]
    if inits:
        status["initContainerStatuses"] = [c.render() for c in inits]
    if state.reason:
        status["reason"] = state.reason
    if state.message:
        status["message"] = state.message
    generation = int(((pod or {}).get("metadata") or {}).get("generation") or 0)
    if generation:  # PodObservedGenerationTracking, GA in 1.35
        status["observedGeneration"] = generation
    return status
