"""The Node object and its status, shaped as a 1.36 kubelet reports them.

The scheduler needs ``pods`` (and ``ephemeral-storage`` for pods that request it) in allocatable;
the node-lifecycle controller reads the Ready condition and the Lease (see `lease`), and removes
the ``node.kubernetes.io/not-ready`` taint once Ready is True. Conditions keep their
``lastTransitionTime`` across heartbeats (only ``lastHeartbeatTime`` moves), in kubelet's order
with Ready last. ``daemonEndpoints.kubeletEndpoint.Port`` is where the API server reaches the
kubelet API (`kubeletapi`), and ``declaredFeatures`` lists ``ExtendWebSocketsToKubelet`` when that
API speaks WebSockets, so a 1.36 API server proxies ``kubectl exec``'s WebSocket to us unchanged
instead of translating it to SPDY.
"""

from __future__ import annotations

import platform
import time
from dataclasses import dataclass, field
from typing import Any

from kubetrain.kube.quantity import format_quantity
from kubetrain.kube.timefmt import format_time

from .config import NodeConfig

JsonDict = dict[str, Any]

KUBELET_VERSION = "v1.36.3-kubetrain"
RUNTIME_VERSION = "kubetrain-process://0.1.0"
WEBSOCKETS_FEATURE = "ExtendWebSocketsToKubelet"

_PRESSURE = (
    ("MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
    ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
)
READY_MESSAGE = "kubelet is posting ready status"


def _arch() -> str:
    machine = platform.machine()
    return {"x86_64": "amd64", "aarch64": "arm64"}.get(machine, machine)


def _read(path: str) -> str:
    try:
        with open(path, encoding="ascii") as fh:
            return fh.read().strip()
    except OSError:
        return ""


def _os_image() -> str:
    for line in _read("/etc/os-release").splitlines():
        key, _, value = line.partition("=")
        if key == "PRETTY_NAME":
            return value.strip('"')
    return platform.platform()


@dataclass
class NodeStatusReporter:
    """Renders the Node and its status; remembers when each condition last changed."""

    config: NodeConfig
    host_ip: str
    pod_cidr: str
    kubelet_port: int = 0
    websockets: bool = False
    _transitions: dict[str, tuple[str, float]] = field(default_factory=dict)

    def resources(self) -> dict[str, str]:
        """Capacity and allocatable (the same: nothing is reserved for system daemons here)."""
        alloc = self.config.allocatable()
        out = {
            "cpu": format_quantity(alloc.pop("cpu")),
            "memory": f"{int(alloc.pop('memory')) // 1024}Ki",
            "ephemeral-storage": f"{int(alloc.pop('ephemeral-storage')) // 1024}Ki",
        }
        out.update({name: format_quantity(value) for name, value in alloc.items()})
        out["pods"] = str(self.config.max_pods)
        return out

    def labels(self) -> dict[str, str]:
        return {
            "beta.kubernetes.io/arch": _arch(),
            "beta.kubernetes.io/os": "linux",
            "kubernetes.io/arch": _arch(),
            "kubernetes.io/hostname": self.config.node_name,
            "kubernetes.io/os": "linux",
            "node.kubernetes.io/instance-type": "kubetrain-local",
            **self.config.labels,
        }

    def node(self) -> JsonDict:
        """The object to register (the kubelet's ``initialNode``)."""
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": self.config.node_name,
                "labels": self.labels(),
                "annotations": {
                    "kubetrain.io/network-mode": self.config.network,
                    "volumes.kubernetes.io/controller-managed-attach-detach": "true",
                },
            },
            "spec": {"podCIDR": self.pod_cidr, "podCIDRs": [self.pod_cidr]},
            "status": self.status(),
        }

    def condition(self, kind: str, ok: bool, reason: str, message: str, now: float) -> JsonDict:
        status = "True" if ok else "False"
        prev = self._transitions.get(kind)
        if prev is None or prev[0] != status:
            self._transitions[kind] = (status, now)
        return {
            "type": kind,
            "status": status,
            "reason": reason,
            "message": message,
            "lastHeartbeatTime": format_time(now),
            "lastTransitionTime": format_time(self._transitions[kind][1]),
        }

    def conditions(
        self, ready: bool = True, not_ready_message: str = "", now: float | None = None
    ) -> list[JsonDict]:
        now = time.time() if now is None else now
        pressure = [self.condition(kind, False, reason, msg, now) for kind, reason, msg in _PRESSURE]
        if ready:
            last = self.condition("Ready", True, "KubeletReady", READY_MESSAGE, now)
        else:
            last = self.condition("Ready", False, "KubeletNotReady", not_ready_message, now)
        return [*pressure, last]

    def status(self) -> JsonDict:
        resources = self.resources()
        status: JsonDict = {
            "capacity": resources,
            "allocatable": resources,
            "conditions": self.conditions(),
            "addresses": [
                {"type": "InternalIP", "address": self.host_ip},
                {"type": "Hostname", "address": self.config.hostname_address},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": self.kubelet_port}},
            "nodeInfo": {
                "machineID": _read("/etc/machine-id"),
                "systemUUID": _read("/sys/class/dmi/id/product_uuid") or _read("/etc/machine-id"),
                "bootID": _read("/proc/sys/kernel/random/boot_id"),
                "kernelVersion": platform.release(),
                "osImage": _os_image(),
                "containerRuntimeVersion": RUNTIME_VERSION,
                "kubeletVersion": KUBELET_VERSION,
                "kubeProxyVersion": "",
                "operatingSystem": "linux",
                "architecture": _arch(),
            },
        }
        if self.websockets:
            status["declaredFeatures"] = [WEBSOCKETS_FEATURE]
        return status
