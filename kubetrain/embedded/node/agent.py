"""The process node agent: a kubelet whose containers are local processes.

It registers a Node (capacity: this machine's CPUs and memory), keeps it alive with a Lease in
``kube-node-lease`` and a Ready condition, watches the pods bound to it (``spec.nodeName``) and
the Services of every namespace (for pod names, see `network`), and gives each pod a `PodWorker`.
It talks to the API server only through the Kubernetes HTTP API, so it can join any cluster that
lets it register a node; the one in-process hook is `log_provider`, which the embedded API server
uses for pods/log (on a cluster the kubelet serves logs itself).

Stopping the agent kills every process it started (SIGTERM, then SIGKILL after the grace) and
waits for them to be gone: nothing is left behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import platform
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from .config import NodeConfig
from .context import NodeContext
from .exec import ExecService
from .informer import Informer
from .kubeapi import ApiError, KubeAPI, core_path, group_path
from .logs import ContainerLogs, NodeLogProvider
from .network import DEFAULT_POD_CIDR, HOST_IP, PodCIDRLease, PodNetwork, ServiceEntry
from .podworker import PodWorker
from .status import rfc3339

log = logging.getLogger(__name__)

JsonDict = dict[str, Any]

LEASE_NAMESPACE = "kube-node-lease"
AGENT_VERSION = "v1.30.0-kubetrain"


def _micro_time(t: float) -> str:
    whole = int(t)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{int((t - whole) * 1e6):06d}Z"


class NodeAgent:
    """``await agent.start()`` registers the node and starts running its pods; ``await agent.stop()``."""

    def __init__(self, api: KubeAPI, config: NodeConfig | None = None) -> None:
        self.api = api
        self.config = config or NodeConfig()
        self.name = self.config.node_name
        self.workers: dict[str, PodWorker] = {}
        self.log_provider = NodeLogProvider(self._logs_of)
        self._own_root = self.config.root_dir is None
        self.root = Path(self.config.root_dir or tempfile.mkdtemp(prefix="kubetrain-node-"))
        self._cidr_lease: PodCIDRLease | None = None
        pod_cidr = self.config.pod_cidr
        if pod_cidr is None:
            if self.config.network == "isolated":
                self._cidr_lease = PodCIDRLease.claim()
                pod_cidr = self._cidr_lease.cidr
            else:
                pod_cidr = DEFAULT_POD_CIDR
        self.network = PodNetwork(
            self.root / "net", self.config.network, pod_cidr, self.config.cluster_domain
        )
        self.exec_service = ExecService(
            self.root / "bin", self.network, lambda: list(self.workers.values()), self.config.cluster_domain
        )
        self.ctx = NodeContext(api, self.config, self.network, self.root, HOST_IP, self.exec_service)
        self._pods = Informer(
            api, core_path("pods"), self._on_pod, field_selector=f"spec.nodeName={self.name}"
        )
        self._services = Informer(api, core_path("services"), self._on_service)
        self._tasks: list[asyncio.Task[None]] = []
        self._lock = asyncio.Lock()
        self._removals: set[asyncio.Task[None]] = set()
        self._stopped = False

    # -- public ---------------------------------------------------------------------------------

    async def start(self) -> None:
        await self.exec_service.start()
        await self._register()
        self._services.start()
        self._pods.start()
        self._tasks.append(asyncio.create_task(self._heartbeat(), name="node heartbeat"))
        await asyncio.gather(self._services.synced.wait(), self._pods.synced.wait())

    async def stop(self) -> None:
        """Kill every pod process, confirm they are gone, then mark the node not ready."""
        if self._stopped:
            return
        self._stopped = True
        await self._pods.stop()
        await self._services.stop()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        grace = self.config.shutdown_grace
        await asyncio.gather(
            *(w.stop(min(grace, w.grace_period())) for w in self.workers.values()),
            *self._removals,
            return_exceptions=True,
        )
        self.workers.clear()
        await self.exec_service.stop()
        with contextlib.suppress(Exception):
            await self.api.merge_patch(
                core_path("nodes", None, self.name, "status"),
                {"status": {"conditions": [self._ready_condition(False)]}},
            )
        if self._own_root:
            shutil.rmtree(self.root, ignore_errors=True)
        if self._cidr_lease is not None:
            self._cidr_lease.release()

    def pids(self) -> list[int]:
        """Process ids of the running container processes (for tests and diagnostics)."""
        running = [p.pid for w in self.workers.values() for p in w.procs.values() if p.running]
        return running + self.exec_service.pids()

    # -- node object ---------------------------------------------------------------------------

    def _node_object(self) -> JsonDict:
        cfg = self.config
        labels = {
            "kubernetes.io/hostname": self.name,
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": {"x86_64": "amd64", "aarch64": "arm64"}.get(
                platform.machine(), platform.machine()
            ),
            "node.kubernetes.io/instance-type": "kubetrain-local",
            **cfg.labels,
        }
        resources = {
            "cpu": str(cfg.cpu),
            "memory": f"{cfg.memory_bytes // 1024}Ki",
            "ephemeral-storage": f"{cfg.ephemeral_storage_bytes // 1024}Ki",
            "pods": str(cfg.max_pods),
        }
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": self.name,
                "labels": labels,
                "annotations": {"kubetrain.io/network-mode": cfg.network},
            },
            "spec": {"podCIDR": self.network.pod_cidr, "podCIDRs": [self.network.pod_cidr]},
            "status": self._node_status(resources),
        }

    def _node_status(self, resources: dict[str, str]) -> JsonDict:
        return {
            "capacity": resources,
            "allocatable": resources,
            "conditions": [self._ready_condition(True), *self._pressure_conditions()],
            "addresses": [
                {"type": "InternalIP", "address": HOST_IP},
                {"type": "Hostname", "address": self.name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 0}},
            "nodeInfo": {
                "machineID": "",
                "systemUUID": "",
                "bootID": "",
                "kernelVersion": platform.release(),
                "osImage": platform.platform(),
                "containerRuntimeVersion": "kubetrain-process://0.1.0",
                "kubeletVersion": AGENT_VERSION,
                "kubeProxyVersion": AGENT_VERSION,
                "operatingSystem": "linux",
                "architecture": platform.machine(),
            },
        }

    def _ready_condition(self, ready: bool) -> JsonDict:
        now = rfc3339(time.time())
        return {
            "type": "Ready",
            "status": "True" if ready else "False",
            "reason": "KubeletReady" if ready else "KubeletNotReady",
            "message": "kubetrain node agent is posting ready status"
            if ready
            else "kubetrain node agent stopped",
            "lastHeartbeatTime": now,
            "lastTransitionTime": now,
        }

    def _pressure_conditions(self) -> list[JsonDict]:
        now = rfc3339(time.time())
        return [
            {
                "type": kind,
                "status": "False",
                "reason": f"KubeletHas{reason}",
                "message": message,
                "lastHeartbeatTime": now,
                "lastTransitionTime": now,
            }
            for kind, reason, message in (
                ("MemoryPressure", "SufficientMemory", "kubelet has sufficient memory available"),
                ("DiskPressure", "NoDiskPressure", "kubelet has no disk pressure"),
                ("PIDPressure", "SufficientPID", "kubelet has sufficient PID available"),
            )
        ]

    async def _register(self) -> None:
        node = self._node_object()
        try:
            await self.api.create(core_path("nodes"), node)
        except ApiError as err:
            if err.status != 409:
                raise
            await self.api.merge_patch(
                core_path("nodes", None, self.name),
                {"metadata": {"labels": node["metadata"]["labels"]}, "spec": node["spec"]},
            )
        await self.api.merge_patch(core_path("nodes", None, self.name, "status"), {"status": node["status"]})

    async def _heartbeat(self) -> None:
        """Renew the node Lease and the Ready condition, as the kubelet does every 10 s."""
        while True:
            try:
                await self._renew_lease()
                await self.api.merge_patch(
                    core_path("nodes", None, self.name, "status"),
                    {"status": {"conditions": [self._ready_condition(True), *self._pressure_conditions()]}},
                )
            except asyncio.CancelledError:
                raise
            except Exception as err:
                log.warning("node heartbeat failed: %r", err)
            await asyncio.sleep(self.config.heartbeat_interval)

    async def _renew_lease(self) -> None:
        path = group_path("coordination.k8s.io", "v1", "leases", LEASE_NAMESPACE, self.name)
        now = _micro_time(time.time())
        try:
            await self.api.merge_patch(path, {"spec": {"renewTime": now}})
            return
        except ApiError as err:
            if err.status != 404:
                raise
        with contextlib.suppress(ApiError):
            await self.api.create(
                core_path("namespaces"),
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": LEASE_NAMESPACE}},
            )
        await self.api.create(
            group_path("coordination.k8s.io", "v1", "leases", LEASE_NAMESPACE),
            {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {
                    "name": self.name,
                    "namespace": LEASE_NAMESPACE,
                    "ownerReferences": [
                        {"apiVersion": "v1", "kind": "Node", "name": self.name, "uid": await self._node_uid()}
                    ],
                },
                "spec": {
                    "holderIdentity": self.name,
                    "leaseDurationSeconds": self.config.lease_duration_seconds,
                    "renewTime": now,
                },
            },
        )

    async def _node_uid(self) -> str:
        node = await self.api.get(core_path("nodes", None, self.name))
        return str((node.get("metadata") or {}).get("uid", ""))

    # -- watches ---------------------------------------------------------------------------------

    async def _on_service(self, kind: str, svc: JsonDict) -> None:
        meta, spec = svc.get("metadata") or {}, svc.get("spec") or {}
        ns, name = meta.get("namespace") or "default", meta.get("name", "")
        if kind == "DELETED" or not spec.get("selector"):
            self.network.remove_service(ns, name)
        else:
            self.network.set_service(ServiceEntry(ns, name, dict(spec["selector"])))

    async def _on_pod(self, kind: str, pod: JsonDict) -> None:
        if self._stopped:
            return
        meta = pod.get("metadata") or {}
        uid = meta.get("uid", "")
        async with self._lock:
            worker = self.workers.get(uid)
            if kind == "DELETED":
                if worker is not None:
                    del self.workers[uid]
                    task = asyncio.create_task(worker.removed())  # its grace must not hold up other pods
                    self._removals.add(task)
                    task.add_done_callback(self._removals.discard)
                return
            if worker is not None:
                worker.update(pod)
                return
            phase = (pod.get("status") or {}).get("phase")
            if meta.get("deletionTimestamp"):
                await self._confirm_delete(pod)
                return
            if phase in ("Succeeded", "Failed"):
                return  # finished before this agent started: nothing to run
            worker = PodWorker(pod, self.ctx)
            self.workers[uid] = worker
            worker.start()

    async def _confirm_delete(self, pod: JsonDict) -> None:
        meta = pod.get("metadata") or {}
        body = {
            "apiVersion": "v1",
            "kind": "DeleteOptions",
            "gracePeriodSeconds": 0,
            "preconditions": {"uid": meta.get("uid")},
        }
        with contextlib.suppress(ApiError):
            await self.api.delete(core_path("pods", meta.get("namespace"), meta.get("name")), body)

    def _logs_of(self, uid: str) -> dict[str, ContainerLogs] | None:
        worker = self.workers.get(uid)
        return worker.logs if worker is not None else None
