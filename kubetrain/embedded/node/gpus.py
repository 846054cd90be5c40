"""GPUs on the local node: the inventory it advertises as ``nvidia.com/gpu``, and who holds which.

The kubelet learns devices from a device plugin and gives each container the devices it asked
for (``resources.limits["nvidia.com/gpu"]``) for the pod's life, never one device to two
pods; NVIDIA's plugin passes them as ``NVIDIA_VISIBLE_DEVICES``. Here the inventory comes from
``--gpus`` (a count: a fake inventory ``0..N-1``, or a list of ids), ``$KUBETRAIN_GPUS``, or
discovery (``nvidia-smi``'s UUIDs, else ``/proc/driver/nvidia/gpus``), and each container gets
its ids as ``CUDA_VISIBLE_DEVICES`` (what CUDA reads for a local process) and
``NVIDIA_VISIBLE_DEVICES``. A container that asks for none, on a node that has some, sees none
(``CUDA_VISIBLE_DEVICES=""``), as in a pod without a GPU request.

A pod's devices are freed once its processes are gone; a pod admitted while a stopping pod
still holds the devices it needs waits for them (a GPU's memory is the old process's until it
exits). When they are not free and nobody is giving them back (the binder counts them, so only
another scheduler can cause it), the pod fails as the kubelet fails it: reason
``UnexpectedAdmissionError``.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

GPU_RESOURCE = "nvidia.com/gpu"
VISIBLE_ENV = ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES")
ADMISSION_REASON = "UnexpectedAdmissionError"
DISCOVERY_TIMEOUT = 10.0

JsonDict = dict[str, Any]


def parse_gpus(text: str) -> tuple[str, ...]:
    """``--gpus``: ``4`` (a fake inventory 0..3), ``0,2`` or ``GPU-ab..,GPU-cd..`` (these ids),
    ``none``/``0`` (no GPUs)."""
    text = text.strip()
    if text.lower() in ("", "none", "0"):
        return ()
    if text.isdigit():
        return tuple(str(i) for i in range(int(text)))
    ids = tuple(part.strip() for part in text.split(",") if part.strip())
    if len(set(ids)) != len(ids):
        raise ValueError(f"--gpus {text!r} names a device twice")
    return ids


def discover_gpus() -> tuple[str, ...]:
    """This machine's NVIDIA GPUs: ``$KUBETRAIN_GPUS`` if set, else nvidia-smi's UUIDs, else the
    driver's /proc entries (indexes); none when there is no NVIDIA driver."""
    explicit = os.environ.get("KUBETRAIN_GPUS")
    if explicit is not None:
        return parse_gpus(explicit)
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            done = subprocess.run(
                [smi, "--query-gpu=uuid", "--format=csv,noheader"],
                capture_output=True,
                text=True,
                timeout=DISCOVERY_TIMEOUT,
                check=False,
            )
        except (OSError, subprocess.SubprocessError):
            done = None
        if done is not None and done.returncode == 0:
            return tuple(line.strip() for line in done.stdout.splitlines() if line.strip())
    try:
        count = len(os.listdir("/proc/driver/nvidia/gpus"))
    except OSError:
        return ()
    return tuple(str(i) for i in range(count))


def _count(container: Mapping[str, Any]) -> int:
    """The container's GPUs: its limit (extended resources are set by limits; a request equals it)."""
    res = container.get("resources") or {}
    raw = (res.get("limits") or {}).get(GPU_RESOURCE, (res.get("requests") or {}).get(GPU_RESOURCE, 0))
    try:
        return int(Fraction(str(raw)))
    except (ValueError, ZeroDivisionError):
        return 0


def _need(spec: Mapping[str, Any]) -> int:
    """The pod's devices: its app containers' sum, or its largest init container's if more."""
    apps = sum(_count(c) for c in spec.get("containers") or [])
    return max(apps, max((_count(c) for c in spec.get("initContainers") or []), default=0))


class DevicesUnavailable(RuntimeError):
    """The pod asks for more devices than are free: the kubelet's admission error."""


@dataclass
class PodDevices:
    """The devices given to one pod, per container name (init containers reuse the pod's)."""

    by_container: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def all(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(d for ids in self.by_container.values() for d in ids))


class GPUAllocator:
    """The node's inventory and which pod holds each device."""

    def __init__(self, devices: Sequence[str]) -> None:
        self.devices = tuple(devices)
        self._holder: dict[str, str] = {}  # device -> pod uid
        self._stopping: set[str] = set()  # uids whose processes are being stopped
        self._released = asyncio.Event()

    @property
    def free(self) -> list[str]:
        return [d for d in self.devices if d not in self._holder]

    def stopping(self, uid: str) -> None:
        """The pod's processes are being stopped: its devices come back soon (see `admit`)."""
        self._stopping.add(uid)

    async def admit(self, uid: str, spec: Mapping[str, Any]) -> PodDevices:
        """`allocate`, waiting while stopping pods hold devices the pod needs."""
        while True:
            try:
                return self.allocate(uid, spec)
            except DevicesUnavailable:
                returning = sum(1 for holder in self._holder.values() if holder in self._stopping)
                if _need(spec) > len(self.free) + returning:
                    raise
            self._released.clear()
            await self._released.wait()

    def allocate(self, uid: str, spec: Mapping[str, Any]) -> PodDevices:
        """Devices for each container of a pod: app containers get their own, init containers
        the first of the pod's (kubelet reuses init containers' devices for app containers)."""
        apps = [(str(c.get("name", "")), _count(c)) for c in spec.get("containers") or []]
        inits = [(str(c.get("name", "")), _count(c)) for c in spec.get("initContainers") or []]
        need = _need(spec)
        if need == 0:
            return PodDevices()
        free = self.free
        if need > len(free):
            raise DevicesUnavailable(
                f"Allocate failed due to requested number of devices unavailable for {GPU_RESOURCE}. "
                f"Requested: {need}, Available: {len(free)}, which is unexpected"
            )
        mine = free[:need]
        for device in mine:
            self._holder[device] = uid
        given: dict[str, tuple[str, ...]] = {}
        start = 0
        for name, n in apps:
            given[name] = tuple(mine[start : start + n])
            start += n
        for name, n in inits:
            given[name] = tuple(mine[:n])
        return PodDevices(given)

    def release(self, uid: str) -> None:
        self._stopping.discard(uid)
        for device in [d for d, holder in self._holder.items() if holder == uid]:
            del self._holder[device]
        self._released.set()

    def container_env(self, devices: PodDevices, container: str) -> dict[str, str]:
        """``CUDA_VISIBLE_DEVICES``/``NVIDIA_VISIBLE_DEVICES`` for a container (none on a node
        without GPUs: the machine's own setting is left alone)."""
        if not self.devices:
            return {}
        ids = ",".join(devices.by_container.get(container, ()))
        return {name: ids for name in VISIBLE_ENV}


def allocated_status(devices: PodDevices, container: str) -> list[JsonDict]:
    """A container's ``allocatedResourcesStatus`` (the kubelet's, ResourceHealthStatus): which
    devices it holds."""
    ids = devices.by_container.get(container, ())
    if not ids:
        return []
    return [{"name": GPU_RESOURCE, "resources": [{"resourceID": d, "health": "Unknown"} for d in ids]}]
