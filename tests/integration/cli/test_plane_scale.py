"""A big job on the local plane: every pod created, the node filled to its pod limit, the rest
Pending with the scheduler's reason, and a clean delete (issue 17: a 5,000-replica job livelocked
the plane; on main a 1,000-replica job took ~4 minutes to place and more to delete).

The waits are generous deadlines against a livelock, not measurements (benchmarks/scale_bench.py
has the figures).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kubetrain.cli.plane import LocalPlane
from kubetrain.client.aio import AsyncClient

REPLICAS = 2000
DEADLINE = 300.0
TOO_MANY_PODS = "0/1 nodes are available: 1 Too many pods."


def big_jaxjob(name: str) -> dict[str, Any]:
    container = {"name": "jax", "image": "busybox:1", "command": ["sleep", "600"]}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "JAXJob",
        "metadata": {"name": name},
        "spec": {
            "jaxReplicaSpecs": {
                "Worker": {
                    "replicas": REPLICAS,
                    "restartPolicy": "Never",
                    "template": {"spec": {"containers": [container], "terminationGracePeriodSeconds": 1}},
                }
            }
        },
    }


def unschedulable(pod: dict[str, Any]) -> str | None:
    for c in (pod.get("status") or {}).get("conditions") or []:
        if (
            c.get("type") == "PodScheduled"
            and c.get("status") == "False"
            and c.get("reason") == "Unschedulable"
        ):
            return str(c.get("message"))
    return None


async def until(
    client: AsyncClient, name: str, done: Callable[[list[dict[str, Any]]], bool], what: str
) -> list[dict[str, Any]]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEADLINE
    pods: list[dict[str, Any]] = []
    while loop.time() < deadline:
        pods = await client.pods("jaxjob", name)
        if done(pods):
            return pods
        await asyncio.sleep(2)
    phases = sorted({(p.get("status") or {}).get("phase", "") for p in pods})
    raise AssertionError(f"no {what} within {DEADLINE:.0f} s: {len(pods)} pods, phases {phases}")


async def test_a_2000_replica_job_is_created_fills_the_node_and_deletes_cleanly(tmp_path: Path) -> None:
    plane = LocalPlane(working_dir=tmp_path)
    await plane.start()
    try:
        client = plane.client()
        name = "big"
        await client.create(big_jaxjob(name))
        await until(client, name, lambda pods: len(pods) == REPLICAS, "pod for every replica")
        assert plane.agent is not None
        capacity = plane.agent.config.max_pods

        def placed(pods: list[dict[str, Any]]) -> bool:
            running = sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Running")
            waiting = sum(1 for p in pods if unschedulable(p) is not None)
            return running == capacity and waiting == REPLICAS - capacity

        pods = await until(client, name, placed, f"{capacity} Running and the rest Unschedulable")
        waiting = [p for p in pods if unschedulable(p) is not None]
        assert {unschedulable(p) for p in waiting} == {TOO_MANY_PODS}
        assert all(not (p.get("spec") or {}).get("nodeName") for p in waiting)
        assert len(plane.pod_pids()) == capacity

        await client.delete("jaxjob", name)
        await client.wait_deleted("jaxjob", name, timeout=DEADLINE)
        await until(client, name, lambda pods: not pods, "pod left")
        assert plane.pod_pids() == []
    finally:
        await plane.stop()
