"""CPU and memory of a job's pods, where something knows them.

* The local plane's pods are local processes: the node tells which process started each
  container (`pod_processes`); each container runs in its own session (setsid), so what it forked
  (torchrun's workers, a shell's children) is summed with it, from one scan of /proc. CPU is the
  cores used since the previous sample, memory the resident set.
* On a cluster, metrics-server's `metrics.k8s.io` PodMetrics, when the cluster serves it.

Either gives `{pod uid: {"cpu": cores, "memory": bytes}}`; a pod nothing knows about is absent.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from kubetrain.kube.client import KubeAPI
from kubetrain.kube.errors import ApiError
from kubetrain.kube.quantity import quantity_value

JsonDict = dict[str, Any]
Usage = dict[str, dict[str, float]]
PodProcesses = Callable[[], Mapping[str, Mapping[str, int]]]
"""pod uid -> container name -> the pid of its running process."""

PAGE_BYTES = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
MIN_INTERVAL = 1.0
"""Samples closer than this return the previous one (many pages, one /proc scan)."""


class UsageSource(Protocol):
    async def usage(self, pods: list[JsonDict]) -> Usage: ...


def read_sessions() -> dict[int, tuple[float, int]]:
    """session id -> (CPU seconds, resident bytes) of every process, from /proc/<pid>/stat."""
    totals: dict[int, tuple[float, int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return totals
    for name in entries:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                raw = fh.read()
        except OSError:
            continue
        # The command name (field 2) may hold spaces and parentheses: fields follow the last ')'.
        fields = raw[raw.rfind(b")") + 2 :].split()
        try:
            session = int(fields[3])
            cpu = (int(fields[11]) + int(fields[12])) / TICKS
            rss = int(fields[21]) * PAGE_BYTES
        except (IndexError, ValueError):
            continue
        before = totals.get(session, (0.0, 0))
        totals[session] = (before[0] + cpu, before[1] + rss)
    return totals


class LocalProcesses:
    """The local node's pods, from the processes it runs."""

    def __init__(self, pod_processes: PodProcesses, clock: Callable[[], float] = time.monotonic) -> None:
        self.pod_processes = pod_processes
        self.clock = clock
        self._last: dict[int, tuple[float, float]] = {}
        """session -> (CPU seconds, when) at the previous sample."""
        self._sample: Usage = {}
        self._at = -MIN_INTERVAL
        self._lock = asyncio.Lock()

    async def usage(self, pods: list[JsonDict]) -> Usage:
        wanted = {str((p.get("metadata") or {}).get("uid") or "") for p in pods}
        async with self._lock:
            if self.clock() - self._at >= MIN_INTERVAL:
                self._sample = await asyncio.to_thread(self._measure)
                self._at = self.clock()
        return {uid: value for uid, value in self._sample.items() if uid in wanted}

    def _measure(self) -> Usage:
        processes = {uid: dict(containers) for uid, containers in self.pod_processes().items()}
        sessions = read_sessions()
        now = self.clock()
        seen: dict[int, tuple[float, float]] = {}
        out: Usage = {}
        for uid, containers in processes.items():
            cores, memory = 0.0, 0.0
            for pid in containers.values():
                if pid not in sessions:
                    continue
                cpu, rss = sessions[pid]
                memory += rss
                before = self._last.get(pid)
                if before is not None and now > before[1]:
                    cores += max(0.0, cpu - before[0]) / (now - before[1])
                seen[pid] = (cpu, now)
            if containers:
                out[uid] = {"cpu": round(cores, 3), "memory": memory}
        self._last = seen
        return out


class PodMetricsAPI:
    """metrics.k8s.io/v1beta1 PodMetrics of the pods' namespaces; off once the API says 404."""

    def __init__(self, api: KubeAPI) -> None:
        self.api = api
        self.available = True

    async def usage(self, pods: list[JsonDict]) -> Usage:
        if not self.available or not pods:
            return {}
        out: Usage = {}
        by_name = {
            ((p.get("metadata") or {}).get("namespace"), (p.get("metadata") or {}).get("name")): str(
                (p.get("metadata") or {}).get("uid") or ""
            )
            for p in pods
        }
        for namespace in {ns for ns, _ in by_name}:
            try:
                listed = await self.api.get(f"/apis/metrics.k8s.io/v1beta1/namespaces/{namespace}/pods")
            except ApiError as err:
                if err.status in (403, 404, 503):
                    self.available = err.status != 404
                return out
            for item in listed.get("items") or ():
                uid = by_name.get((namespace, (item.get("metadata") or {}).get("name")))
                if uid:
                    out[uid] = pod_metrics_usage(item)
        return out


def pod_metrics_usage(item: JsonDict) -> dict[str, float]:
    cpu = memory = 0.0
    for container in item.get("containers") or ():
        usage = container.get("usage") or {}
        try:
            cpu += float(quantity_value(usage.get("cpu") or "0"))
            memory += float(quantity_value(usage.get("memory") or "0"))
        except (ValueError, TypeError, ArithmeticError):
            continue
    return {"cpu": round(cpu, 3), "memory": memory}
