"""The process node agent: a kubelet whose containers are local processes.

It registers a Node (`nodestatus`: capacity, conditions, addresses, nodeInfo), keeps it alive
with a Lease in ``kube-node-lease`` (`lease`) and periodic status posts, watches the pods bound
to it (``spec.nodeName``) and the Services of every namespace (for pod names, see `network`), and
gives each pod a `PodWorker`. It talks to the API server only through the Kubernetes HTTP API, so
it can join any cluster that lets it register a node. Logs and exec reach its pods two ways: on a
real cluster through the kubelet API it serves (`kubeletapi`, when ``config.kubelet_api`` is set),
which the API server calls for pods/log and pods/exec; next to the embedded API server through
the in-process `log_provider`.

Stopping the agent kills every process it started (SIGTERM, then SIGKILL after the grace) and
waits for them to be gone: nothing is left behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import subprocess
import time
from pathlib import Path
from typing import Any

from kubetrain.kube.client import KubeAPI, core_path
from kubetrain.kube.errors import ApiError
from kubetrain.kube.informer import Informer

from .config import NodeConfig
from .context import NodeContext
from .exec import ExecService
from .gpus import GPUAllocator
from .kubeletapi import KubeletServer
from .lease import NodeLease
from .logs import ContainerLogs, NodeLogProvider
from .network import DEFAULT_POD_CIDR, HOST_IP, PodCIDRLease, PodNetwork, ServiceEntry
from .nodestatus import NodeStatusReporter
from .podworker import PodWorker
from .process import GUARDIAN
from .sandbox import NodeRoot

log = logging.getLogger(__name__)

GUARDIAN_EXIT_SECONDS = 5.0
"""How long a clean stop waits for the guardian's last sweep (it takes milliseconds)."""

JsonDict = dict[str, Any]


class NodeAgent:
    """``await agent.start()`` registers the node and starts running its pods; ``await agent.stop()``."""

    def __init__(self, api: KubeAPI, config: NodeConfig | None = None) -> None:
        self.api = api
        self.config = config or NodeConfig()
        self.name = self.config.node_name
        self.workers: dict[str, PodWorker] = {}
        self.log_provider = NodeLogProvider(self._logs_of)
        # Its own temporary root, unless configured; the roots of killed nodes are removed first.
        self._own_root: NodeRoot | None = None
        if self.config.root_dir is None:
            self._own_root = NodeRoot()
            self.root = self._own_root.path
        else:
            self.root = Path(self.config.root_dir)
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
        self.ctx = NodeContext(
            api,
            self.config,
            self.network,
            self.root,
            HOST_IP,
            env_provider=self.exec_service,
            gpus=GPUAllocator(self.config.gpu_devices()),
        )
        self._pods = Informer(
            api, core_path("pods"), self._on_pod, field_selector=f"spec.nodeName={self.name}"
        )
        self._services = Informer(api, core_path("services"), self._on_service)
        self.reporter = NodeStatusReporter(self.config, HOST_IP, self.network.pod_cidr)
        self.lease = NodeLease(api, self.name, self.config.lease_duration_seconds)
        self.kubelet_server: KubeletServer | None = None
        if self.config.kubelet_api is not None:
            self.kubelet_server = KubeletServer(
                self.config.kubelet_api,
                self.name,
                self.log_provider,
                self._worker_by_name,
                api,
                self.root / "pki",
            )
        self._node_uid = ""
        self._status_posted = 0.0
        self._tasks: list[asyncio.Task[None]] = []
        self._lock = asyncio.Lock()
        self._removals: set[asyncio.Task[None]] = set()
        self._stopped = False

    # -- public ---------------------------------------------------------------------------------

    async def start(self) -> None:
        self.config.log_policy  # noqa: B018 -- a bad log setting fails here, not at a pod's start
        await self.exec_service.start()
        if self.kubelet_server is not None:
            await self.kubelet_server.start(self.exec_service.socket_path)
            self.reporter.kubelet_port = self.kubelet_server.port
            self.reporter.websockets = True
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
        if self.kubelet_server is not None:
            await self.kubelet_server.stop()
        await self.exec_service.stop()
        guardian = GUARDIAN.retire()
        if guardian is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                await asyncio.to_thread(guardian.wait, GUARDIAN_EXIT_SECONDS)
        with contextlib.suppress(Exception):
            await self._post_status(
                {"conditions": self.reporter.conditions(False, "kubetrain node agent stopped")}
            )
        if self._own_root is not None:
            self._own_root.release()
        if self._cidr_lease is not None:
            self._cidr_lease.release()

    def pids(self) -> list[int]:
        """Process ids of the running container processes (for tests and diagnostics)."""
        running = [p.pid for w in self.workers.values() for p in w.procs.values() if p.running]
        return running + self.exec_service.pids()

    # -- node object ---------------------------------------------------------------------------

    async def _register(self) -> None:
        """Create the Node (or adopt one of the same name), then write its full status."""
        node = self.reporter.node()
        try:
            created = await self.api.create(core_path("nodes"), node)
        except ApiError as err:
            if err.status != 409:
                raise
            existing = await self.api.get(core_path("nodes", None, self.name))
            patch: JsonDict = {"metadata": {"labels": node["metadata"]["labels"]}}
            if not (existing.get("spec") or {}).get("podCIDR"):  # immutable once set
                patch["spec"] = node["spec"]
            created = await self.api.merge_patch(core_path("nodes", None, self.name), patch)
        self._node_uid = str((created.get("metadata") or {}).get("uid") or "")
        await self._post_status(self.reporter.status())

    async def _post_status(self, status: JsonDict) -> None:
        await self.api.merge_patch(core_path("nodes", None, self.name, "status"), {"status": status})
        self._status_posted = time.monotonic()

    async def _heartbeat(self) -> None:
        """Renew the Lease every interval (kubelet: 10 s) and post the node status periodically."""
        while True:
            try:
                await self.lease.renew(self._node_uid)
                if time.monotonic() - self._status_posted >= self.config.status_report_interval:
                    await self._post_status({"conditions": self.reporter.conditions()})
            except asyncio.CancelledError:
                raise
            except Exception as err:
                log.warning("node heartbeat failed: %r", err)
            await asyncio.sleep(self.config.heartbeat_interval)

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

    def _worker_by_name(self, namespace: str, name: str) -> PodWorker | None:
        """The newest worker of pod `namespace/name` (a re-created pod has a new uid)."""
        found = [w for w in self.workers.values() if w.namespace == namespace and w.name == name]
        return found[-1] if found else None

    def _logs_of(self, uid: str) -> dict[str, ContainerLogs] | None:
        worker = self.workers.get(uid)
        return worker.logs if worker is not None else None
