"""The real Manager over HTTP against the embedded API server, for the MPI family's suites.

Reproduces the shape of mpi-operator's envtest suite (`test/integration`): the test creates
jobs through the API, plays the kubelet with `KubeletSim` (pods/status writes) and plays the
batch/v1 Job controller itself where it needs exact control (it creates the launcher Job's pod
from the Job's template and writes the Job's status), then waits for what the operator wrote.

    async with MPICluster.start() as c:
        job = await c.create(v2_job("pi"))
        await c.wait_for(lambda: c.get_or_none("batch/v1", "Job", "pi-launcher"))
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import itertools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml
from prometheus_client import CollectorRegistry

from kubetrain.embedded.apiserver import EmbeddedAPIServer
from kubetrain.kinds.registry import crd_manifests
from kubetrain.runtime import ApiError, KubeClient, Manager, RuntimeConfig
from kubetrain.runtime.crds import install_crds
from tests.kubelet_sim import KubeletSim

log = logging.getLogger(__name__)

JsonDict = dict[str, Any]
T = TypeVar("T")

NS = "default"
V1 = "kubeflow.org/v1"
V2 = "kubeflow.org/v2beta1"
EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
TIMEOUT = 8.0

VOLCANO = ("scheduling.volcano.sh", "v1beta1")
SCHEDULER_PLUGINS = ("scheduling.x-k8s.io", "v1alpha1")


def example(path: str) -> JsonDict:
    doc = yaml.safe_load((EXAMPLES / path).read_text(encoding="utf-8"))
    assert isinstance(doc, dict)
    return doc


def podgroup_crd(group: str, version: str) -> JsonDict:
    """A stand-in PodGroup CRD (schema-less), as envtest installs the schedulers' CRDs."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"podgroups.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"kind": "PodGroup", "plural": "podgroups", "singular": "podgroup"},
            "versions": [
                {
                    "name": version,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {
                        "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                    },
                }
            ],
        },
    }


def conditions(obj: JsonDict | None) -> list[tuple[str, str, str]]:
    """(type, status, reason) of every condition, in order."""
    return [
        (c.get("type", ""), c.get("status", ""), c.get("reason", ""))
        for c in ((obj or {}).get("status") or {}).get("conditions") or ()
    ]


def has_condition(obj: JsonDict | None, cond_type: str, status: str = "True") -> bool:
    return any(t == cond_type and s == status for t, s, _ in conditions(obj))


def replica_statuses(obj: JsonDict | None) -> JsonDict:
    return dict(((obj or {}).get("status") or {}).get("replicaStatuses") or {})


NAMESPACE_DEFAULTS = frozenset({("ServiceAccount", "default"), ("ConfigMap", "kube-root-ca.crt")})
"""Objects kube-controller-manager (and the embedded API server) put in every namespace."""


@dataclass
class MPICluster:
    server: EmbeddedAPIServer
    client: KubeClient
    manager: Manager
    kubelet: KubeletSim
    _uids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    @classmethod
    @contextlib.asynccontextmanager
    async def start(
        cls, *, gang: str = "", podgroups: tuple[tuple[str, str], ...] = (), **config: Any
    ) -> AsyncIterator[MPICluster]:
        server = EmbeddedAPIServer()
        await server.start(port=0)
        client = KubeClient.for_url(server.url, server.token, server.ca_file, qps=0, backoff_base=0.02)
        manager: Manager | None = None
        kubelet = KubeletSim(server.url, token=server.token, ssl_context=server.client_ssl_context())
        try:
            await install_crds(client, [*crd_manifests(), *(podgroup_crd(g, v) for g, v in podgroups)])
            manager = Manager(
                client,
                RuntimeConfig(workers=2, gang_scheduler_name=gang, **config),
                registry=CollectorRegistry(),
            )
            await manager.start()
            yield cls(server, client, manager, kubelet)
        finally:
            if manager is not None:
                await manager.stop(drain_timeout=2.0)
            await kubelet.close()
            await client.close()
            await server.stop()

    # -- objects ---------------------------------------------------------------------------

    async def create(self, obj: JsonDict) -> JsonDict:
        body = copy.deepcopy(obj)
        body.setdefault("metadata", {}).setdefault("namespace", NS)
        return await self.client.create(body, namespace=NS)

    async def get(self, api_version: str, kind: str, name: str) -> JsonDict:
        return await self.client.get(api_version, kind, NS, name)

    async def get_or_none(self, api_version: str, kind: str, name: str) -> JsonDict | None:
        try:
            return await self.get(api_version, kind, name)
        except ApiError as err:
            if err.not_found:
                return None
            raise

    async def names(self, api_version: str, kind: str) -> list[str]:
        """The names of `kind` in the test namespace, leaving out what every namespace holds on
        Kubernetes (the `default` ServiceAccount, the `kube-root-ca.crt` ConfigMap)."""
        items, _ = await self.client.list(api_version, self.client.resource(api_version, kind).plural, NS)
        return sorted(
            i["metadata"]["name"]
            for i in items
            if not i["metadata"].get("deletionTimestamp")
            and (kind, i["metadata"]["name"]) not in NAMESPACE_DEFAULTS
        )

    async def patch(self, api_version: str, kind: str, name: str, patch: JsonDict) -> JsonDict:
        return await self.client.merge_patch(api_version, kind, NS, name, patch)

    # -- playing the batch/v1 Job controller -------------------------------------------------

    async def launcher_pod(self, job_name: str, suffix: str = "") -> str:
        """Create the pod of batch Job `job_name` from its template, owned by the Job."""
        job = await self.get("batch/v1", "Job", job_name)
        template = job["spec"]["template"]
        name = f"{job_name}-{suffix or next(self._uids)}"
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": NS,
                "labels": dict((template.get("metadata") or {}).get("labels") or {}),
                "ownerReferences": [
                    {
                        "apiVersion": "batch/v1",
                        "kind": "Job",
                        "name": job_name,
                        "uid": job["metadata"]["uid"],
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": copy.deepcopy(template["spec"]),
        }
        await self.client.create(pod, namespace=NS)
        return name

    async def set_job_status(self, job_name: str, status: JsonDict) -> JsonDict:
        job = await self.get("batch/v1", "Job", job_name)
        job["status"] = status
        return await self.client.replace_status(job)

    # -- waiting -----------------------------------------------------------------------------

    async def wait_for(
        self,
        predicate: Callable[[], Awaitable[T | None] | T | None],
        timeout: float = TIMEOUT,
        what: str = "condition",
    ) -> T:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        last: Any = None
        while True:
            value = predicate()
            if asyncio.iscoroutine(value) or isinstance(value, asyncio.Future):
                value = await value
            if value:
                return value  # type: ignore[return-value]
            last = value
            if loop.time() >= deadline:
                raise AssertionError(f"timed out after {timeout:.1f}s waiting for {what}; last={last!r}")
            await asyncio.sleep(0.02)

    async def wait_job(
        self, api_version: str, kind: str, name: str, check: Callable[[JsonDict], bool], what: str
    ) -> JsonDict:
        seen: list[JsonDict] = []

        async def probe() -> JsonDict | None:
            obj = await self.get(api_version, kind, name)
            seen[:] = [obj]
            return obj if check(obj) else None

        try:
            return await self.wait_for(probe, what=what)
        except AssertionError as exc:
            status = seen[0].get("status") if seen else None
            raise AssertionError(f"{exc}\nlast status: {status}") from None

    async def events(self, name: str | None = None) -> list[JsonDict]:
        await self.manager.recorder.flush()
        items, _ = await self.client.list("v1", "events", NS)
        return [e for e in items if name is None or e["involvedObject"]["name"] == name]

    async def reasons(self, name: str) -> list[str]:
        return [e["reason"] for e in await self.events(name)]

    async def wait_event(self, name: str, reason: str) -> JsonDict:
        async def probe() -> JsonDict | None:
            return next((e for e in await self.events(name) if e["reason"] == reason), None)

        return await self.wait_for(probe, what=f"event {reason} on {name}")

    async def settle(self, seconds: float = 0.3) -> None:
        """Give the operator time to do something it must not do."""
        await asyncio.sleep(seconds)


# -- jobs ---------------------------------------------------------------------------------------


def container(name: str, image: str = "mpioperator/mpi-pi:openmpi", **extra: Any) -> JsonDict:
    return {"name": name, "image": image, **extra}


def v2_job(
    name: str,
    workers: int = 2,
    *,
    launcher: JsonDict | None = None,
    worker: JsonDict | None = None,
    run_policy: JsonDict | None = None,
    **spec: Any,
) -> JsonDict:
    """An mpi-operator v2beta1 MPIJob like its integration suite's (cleanPodPolicy Running)."""
    specs: JsonDict = {
        "Launcher": {"replicas": 1, "template": {"spec": {"containers": [container("launcher")]}}},
        "Worker": {"replicas": workers, "template": {"spec": {"containers": [container("worker")]}}},
    }
    for rtype, extra in (("Launcher", launcher), ("Worker", worker)):
        if extra:
            specs[rtype]["template"]["spec"].update(extra)
    return {
        "apiVersion": V2,
        "kind": "MPIJob",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "slotsPerWorker": 1,
            "runPolicy": {"cleanPodPolicy": "Running", **(run_policy or {})},
            "mpiReplicaSpecs": specs,
            **spec,
        },
    }


def v1_job(
    name: str,
    workers: int = 2,
    *,
    launcher: JsonDict | None = None,
    run_policy: JsonDict | None = None,
    **spec: Any,
) -> JsonDict:
    """A training-operator v1 MPIJob (kubectl-exec launcher)."""
    image = "mpioperator/tensorflow-benchmarks:latest"
    specs: JsonDict = {
        "Launcher": {"replicas": 1, "template": {"spec": {"containers": [container("mpi", image)]}}},
        "Worker": {"replicas": workers, "template": {"spec": {"containers": [container("mpi", image)]}}},
    }
    if launcher:
        specs["Launcher"]["template"]["spec"]["containers"][0].update(launcher)
    return {
        "apiVersion": V1,
        "kind": "MPIJob",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "slotsPerWorker": 1,
            "runPolicy": {"cleanPodPolicy": "Running", **(run_policy or {})},
            "mpiReplicaSpecs": specs,
            **spec,
        },
    }
