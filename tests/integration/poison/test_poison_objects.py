"""A poison object never blinds a kind's controller (issue #17).

The real operator over HTTP against the embedded API server: an MPIJob whose launcher command
nests 600 deep and a PyTorchJob of ~1 MB sit in one namespace; a valid MPIJob and a valid
PyTorchJob in another namespace must still get their pods, and the poison MPIJob is reported on
the object itself (a Warning event and a Failed condition naming the path).
"""

from __future__ import annotations

import asyncio
from typing import Any

from kubetrain.kinds.registry import crd_manifests
from kubetrain.runtime.crds import install_crds
from tests.integration.operator.harness import Cluster, default_job, wait_for

JsonDict = dict[str, Any]

POISON_NS = "poison"
GOOD_NS = "good"
BIG_VALUE = 1024 * 1024


def nested(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


def mpi_job(name: str, namespace: str, command: Any = None) -> JsonDict:
    launcher: JsonDict = {"name": "launcher", "image": "mpioperator/mpi-pi:openmpi"}
    if command is not None:
        launcher["command"] = command
    worker = {"name": "worker", "image": "mpioperator/mpi-pi:openmpi"}
    return {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "slotsPerWorker": 1,
            "mpiReplicaSpecs": {
                "Launcher": {"replicas": 1, "template": {"spec": {"containers": [launcher]}}},
                "Worker": {"replicas": 1, "template": {"spec": {"containers": [worker]}}},
            },
        },
    }


def pytorch_job(name: str, namespace: str, env_bytes: int = 0, command: Any = None) -> JsonDict:
    obj = default_job("PyTorchJob", name, replicas=1).build()
    obj["metadata"]["namespace"] = namespace
    master = obj["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]
    if env_bytes:
        master["env"] = [{"name": "BIG", "value": "b" * env_bytes}]
    if command is not None:
        master["command"] = command
    return obj


async def pod_names(cluster: Cluster, namespace: str) -> set[str]:
    items, _ = await cluster.client.list("v1", "Pod", namespace)
    return {p["metadata"]["name"] for p in items}


async def events_of(cluster: Cluster, namespace: str, name: str) -> list[JsonDict]:
    items, _ = await cluster.client.list("v1", "Event", namespace)
    return [e for e in items if (e.get("involvedObject") or {}).get("name") == name]


async def test_poison_and_huge_jobs_do_not_blind_their_kinds() -> None:
    async with Cluster.start(start_operator=False) as cluster:
        await install_crds(cluster.client, crd_manifests(["MPIJob"]))
        for ns in (POISON_NS, GOOD_NS):
            await cluster.client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        await cluster.client.create(mpi_job("deep", POISON_NS, command=nested(600)))
        await cluster.client.create(pytorch_job("huge", POISON_NS, env_bytes=BIG_VALUE))
        await cluster.client.create(pytorch_job("deep", POISON_NS, command=nested(600)))
        await asyncio.wait_for(cluster.operator.start(), 30)
        await cluster.client.create(mpi_job("fine", GOOD_NS))
        await cluster.client.create(pytorch_job("fine", GOOD_NS))

        # The MPIJob's workers are pods; its launcher is a batch/v1 Job (no Job controller here).
        want = {"fine-worker-0", "fine-master-0"}
        await wait_for(
            lambda: _superset(pod_names(cluster, GOOD_NS), want), timeout=20, message="pods of the good jobs"
        )
        await wait_for(
            lambda: _exists(cluster, "batch/v1", "Job", GOOD_NS, "fine-launcher"), message="the launcher Job"
        )
        # The huge job is valid: its pods come too, carried by >1 MB watch events.
        await wait_for(
            lambda: _superset(pod_names(cluster, POISON_NS), {"huge-master-0", "huge-worker-0"}),
            timeout=20,
            message="pods of the 1 MB job",
        )

        path = "mpiReplicaSpecs.Launcher.template.spec.containers[0].command[0][0]"
        await wait_for(
            lambda: _reported(cluster, "deep", f"spec.{path}"),
            timeout=20,
            message="a Warning on the deep MPIJob",
        )
        # PyTorchJob: the generic kinds also fail the job, with the reason in the condition.
        path = "pytorchReplicaSpecs.Master.template.spec.containers[0].command[0][0]"
        events = await wait_for(
            lambda: _reported(cluster, "deep", f"spec.{path}", "PyTorchJobFailedValidation"),
            timeout=20,
            message="a Warning on the deep PyTorchJob",
        )
        deep = await cluster.client.get("kubeflow.org/v1", "PyTorchJob", POISON_NS, "deep")
        failed = [c for c in (deep.get("status") or {}).get("conditions") or () if c["type"] == "Failed"]
        assert failed and "nesting too deep" in failed[0]["message"], deep.get("status")
        assert events[0]["involvedObject"]["kind"] == "PyTorchJob"
        assert not {n for n in await pod_names(cluster, POISON_NS) if n.startswith("deep-")}

        # The poison objects can be deleted like any other, and the operator goes on.
        await cluster.client.delete("kubeflow.org/v2beta1", "MPIJob", POISON_NS, "deep")
        await cluster.client.delete("kubeflow.org/v1", "PyTorchJob", POISON_NS, "deep")
        await cluster.client.create(mpi_job("after", GOOD_NS))
        await wait_for(
            lambda: _superset(pod_names(cluster, GOOD_NS), {"after-worker-0"}), message="later job"
        )


async def _reported(cluster: Cluster, name: str, path: str, reason: str | None = None) -> list[JsonDict]:
    return [
        e
        for e in await events_of(cluster, POISON_NS, name)
        if e.get("type") == "Warning"
        and "nesting too deep" in e.get("message", "")
        and path in e.get("message", "")
        and (reason is None or e.get("reason") == reason)
    ]


async def _exists(cluster: Cluster, api_version: str, kind: str, namespace: str, name: str) -> bool:
    items, _ = await cluster.client.list(api_version, kind, namespace)
    return any(i["metadata"]["name"] == name for i in items)


async def _superset(names_coro: Any, want: set[str]) -> bool:
    return set(await names_coro) >= want
