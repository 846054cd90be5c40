"""The binder: capacity queueing with the real Unschedulable message, gangs all-or-nothing."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from kubetrain.embedded import scheduler
from kubetrain.embedded.apiserver import EmbeddedAPIServer
from kubetrain.embedded.node import KubeAPI, NodeAgent
from kubetrain.embedded.scheduler import Binder
from kubetrain.kube.client import core_path

from .conftest import container, create, get_pod, make_agent, pod, wait_for, wait_phase

SLEEP = "import time; time.sleep(60)"


@pytest.fixture
async def small_node(server: EmbeddedAPIServer, api: KubeAPI, tmp_path: Path) -> AsyncIterator[NodeAgent]:
    node = await make_agent(server, api, tmp_path, cpu=2, shutdown_grace=0.5)
    binder = Binder(api)
    await binder.start()
    yield node
    await binder.stop()
    await node.stop()


def sleeper(name: str, cpu: str | None = None, **meta: Any) -> dict:
    resources = {"requests": {"cpu": cpu}} if cpu else {}
    body = pod(
        name, container("main", SLEEP, resources=resources), node=None, terminationGracePeriodSeconds=0
    )
    body["metadata"].update(meta)
    return body


async def node_of(api: KubeAPI, name: str) -> str | None:
    p = await get_pod(api, name)
    return ((p or {}).get("spec") or {}).get("nodeName")


async def unschedulable(api: KubeAPI, name: str) -> str | None:
    p = await get_pod(api, name)
    for c in ((p or {}).get("status") or {}).get("conditions") or []:
        if c["type"] == "PodScheduled" and c["status"] == "False" and c.get("reason") == "Unschedulable":
            return str(c["message"])
    return None


async def test_pods_without_requests_fit_and_big_requests_queue(api: KubeAPI, small_node: NodeAgent) -> None:
    for i in range(3):  # a 3-replica job with no requests on a 2-CPU machine
        await create(api, sleeper(f"free-{i}"))
    for i in range(3):
        await wait_phase(api, f"free-{i}", "Running")
    await create(api, sleeper("big", cpu="3"))
    msg = await wait_for(lambda: unschedulable(api, "big"), what="Unschedulable")
    assert msg == "0/1 nodes are available: 1 Insufficient cpu."
    await create(api, sleeper("half-a", cpu="1500m"))
    await wait_phase(api, "half-a", "Running")
    await create(api, sleeper("half-b", cpu="1500m"))
    assert await wait_for(lambda: unschedulable(api, "half-b"), what="half-b queued")
    await api.delete(core_path("pods", "default", "half-a"))
    await wait_for(lambda: node_of(api, "half-b"), what="half-b bound after half-a left")
    assert await node_of(api, "big") is None


async def test_other_schedulers_pods_are_left_alone(api: KubeAPI, small_node: NodeAgent) -> None:
    body = sleeper("volcano-pod")
    body["spec"]["schedulerName"] = "volcano"
    await create(api, body)
    await create(api, sleeper("mine"))
    await wait_for(lambda: node_of(api, "mine"), what="mine bound")
    assert await node_of(api, "volcano-pod") is None


async def test_gang_is_all_or_nothing(server: EmbeddedAPIServer, api: KubeAPI, tmp_path: Path) -> None:
    # The members exist before the binder's first pass: without a PodGroup object a gang is
    # "every member that exists", so a pass between two creates would see a smaller gang.
    node = await make_agent(server, api, tmp_path, cpu=2, shutdown_grace=0.5)
    labels = {"scheduling.x-k8s.io/pod-group": "big-job"}
    for i in range(3):  # 3 x 1 CPU on 2 CPUs: none may start
        await create(api, sleeper(f"big-job-{i}", cpu="1", labels=labels))
    binder = Binder(api)
    await binder.start()
    try:
        for i in range(3):
            assert await wait_for(partial(unschedulable, api, f"big-job-{i}"), what="gang member queued")
        assert [await node_of(api, f"big-job-{i}") for i in range(3)] == [None] * 3
        annotations = {"scheduling.k8s.io/group-name": "small-job"}
        await asyncio.gather(  # a Volcano-style gang of 2 x 1 CPU fits whole
            *(create(api, sleeper(f"small-job-{i}", cpu="1", annotations=annotations)) for i in range(2))
        )
        for i in range(2):
            await wait_for(partial(node_of, api, f"small-job-{i}"), what="small gang bound")
        assert [await node_of(api, f"big-job-{i}") for i in range(3)] == [None] * 3
    finally:
        await binder.stop()
        await node.stop()


async def test_pending_pods_on_a_full_node_are_not_replaced_on_every_event(
    server: EmbeddedAPIServer, api: KubeAPI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 17: each pod event (the binder's own Unschedulable writes included) re-placed every
    pending pod and re-read its requests, O(pods) per event; now each pod's requests are read
    once and a pod that did not fit waits until room is made."""
    reads = 0
    real = scheduler.pod_requests

    def counting(p: dict) -> Any:
        nonlocal reads
        reads += 1
        return real(p)

    monkeypatch.setattr(scheduler, "pod_requests", counting)
    node = await make_agent(server, api, tmp_path, max_pods=2, shutdown_grace=0.5)
    binder = Binder(api)
    await binder.start()
    try:
        count = 150
        for i in range(count):
            await create(api, sleeper(f"many-{i}"))

        async def all_placed() -> bool:
            pods, _ = await api.list(core_path("pods", "default"), {})
            bound = [p for p in pods if (p.get("spec") or {}).get("nodeName")]
            waiting = [
                p
                for p in pods
                if any(c.get("reason") == "Unschedulable" for c in p["status"].get("conditions") or [])
            ]
            return len(bound) == 2 and len(waiting) == count - 2

        await wait_for(all_placed, timeout=120, what="2 pods bound and the rest Unschedulable")
        assert reads <= count, f"{reads} reads of pod requests for {count} pods"
    finally:
        await binder.stop()
        await node.stop()


def _unschedulable_now(p: dict) -> bool:
    return any(c.get("reason") == "Unschedulable" for c in (p.get("status") or {}).get("conditions") or [])
