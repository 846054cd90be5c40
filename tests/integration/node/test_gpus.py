"""GPUs on a fake 4-device inventory: one device per pod, env per container, the 5th queued."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from kubetrain.cli.nodesize import never_fits_hint
from kubetrain.embedded.apiserver import EmbeddedAPIServer
from kubetrain.embedded.node import KubeAPI, NodeAgent
from kubetrain.embedded.scheduler import Binder
from kubetrain.kube.client import core_path

from .conftest import container, create, get_pod, make_agent, pod, read_log, wait_for, wait_phase
from .test_scheduler import node_of, unschedulable

DEVICES = ("GPU-aaaa", "GPU-bbbb", "GPU-cccc", "GPU-dddd")
SHOW_AND_SLEEP = (
    "import os, time; "
    "print(repr(os.environ.get('CUDA_VISIBLE_DEVICES')), repr(os.environ.get('NVIDIA_VISIBLE_DEVICES')), "
    "flush=True); time.sleep(60)"
)


@pytest.fixture
async def gpu_node(server: EmbeddedAPIServer, api: KubeAPI, tmp_path: Path) -> AsyncIterator[NodeAgent]:
    node = await make_agent(server, api, tmp_path, gpus=DEVICES, shutdown_grace=0.5)
    binder = Binder(api, never_fits=never_fits_hint)
    await binder.start()
    yield node
    await binder.stop()
    await node.stop()


def gpu_pod(name: str, gpus: int | None) -> dict:
    resources = {"limits": {"nvidia.com/gpu": str(gpus)}} if gpus is not None else {}
    return pod(
        name,
        container("main", SHOW_AND_SLEEP, resources=resources),
        node=None,
        terminationGracePeriodSeconds=0,
    )


async def seen_devices(api: KubeAPI, name: str) -> str:
    """The pod's log line: what its process saw as CUDA_/NVIDIA_VISIBLE_DEVICES."""
    return await wait_for(lambda: _first_line(api, name), what=f"{name} printed its devices")


async def _first_line(api: KubeAPI, name: str) -> str | None:
    text = await read_log(api, name)
    return text.splitlines()[0] if text.strip() else None


def held(p: dict) -> list[str]:
    [status] = p["status"]["containerStatuses"]
    [entry] = status["allocatedResourcesStatus"]
    assert entry["name"] == "nvidia.com/gpu"
    return [r["resourceID"] for r in entry["resources"]]


async def test_four_gpus_four_pods_each_its_own_device_fifth_pending(
    api: KubeAPI, gpu_node: NodeAgent
) -> None:
    node = await api.get(core_path("nodes", None, "kubetrain-local"))
    assert node["status"]["capacity"]["nvidia.com/gpu"] == "4"
    assert node["status"]["allocatable"]["nvidia.com/gpu"] == "4"
    for i in range(4):
        await create(api, gpu_pod(f"trainer-{i}", 1))
    given = {}
    for i in range(4):
        p = await wait_phase(api, f"trainer-{i}", "Running")
        [device] = held(p)
        assert await seen_devices(api, f"trainer-{i}") == f"{device!r} {device!r}"
        given[f"trainer-{i}"] = device
    assert sorted(given.values()) == sorted(DEVICES)  # never one device to two pods

    await create(api, gpu_pod("trainer-4", 1))
    msg = await wait_for(lambda: unschedulable(api, "trainer-4"), what="5th pod Unschedulable")
    assert msg == "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."

    await api.delete(core_path("pods", "default", "trainer-2"))
    await wait_for(lambda: node_of(api, "trainer-4"), what="5th pod bound once a device freed")
    p = await wait_phase(api, "trainer-4", "Running", "Failed")
    assert p["status"]["phase"] == "Running", p["status"]
    assert held(p) == [given["trainer-2"]]  # the freed device, released with its pod


async def test_a_pod_without_gpus_sees_none_and_two_gpus_go_to_one_container(
    api: KubeAPI, gpu_node: NodeAgent
) -> None:
    await create(api, gpu_pod("cpu-only", None))
    await wait_phase(api, "cpu-only", "Running")
    assert await seen_devices(api, "cpu-only") == "'' ''"
    p = await get_pod(api, "cpu-only")
    assert "allocatedResourcesStatus" not in p["status"]["containerStatuses"][0]

    await create(api, gpu_pod("pair", 2))
    p = await wait_phase(api, "pair", "Running")
    pair = held(p)
    assert len(pair) == 2
    assert await seen_devices(api, "pair") == f"{','.join(pair)!r} {','.join(pair)!r}"


async def test_more_gpus_than_the_node_has_names_the_flag(api: KubeAPI, gpu_node: NodeAgent) -> None:
    await create(api, gpu_pod("greedy", 8))
    msg = await wait_for(lambda: unschedulable(api, "greedy"), what="greedy Unschedulable")
    assert msg.startswith("0/1 nodes are available: 1 Insufficient nvidia.com/gpu. ")
    assert "--gpus" in msg


async def test_a_node_without_gpus_keeps_gpu_pods_pending(
    server: EmbeddedAPIServer, api: KubeAPI, tmp_path: Path
) -> None:
    node = await make_agent(server, api, tmp_path, gpus=(), shutdown_grace=0.5)
    binder = Binder(api)
    try:
        await binder.start()
        status = (await api.get(core_path("nodes", None, "kubetrain-local")))["status"]
        assert "nvidia.com/gpu" not in status["capacity"]
        await create(api, gpu_pod("wants-gpu", 1))
        msg = await wait_for(lambda: unschedulable(api, "wants-gpu"), what="Unschedulable")
        assert msg == "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."
    finally:
        await binder.stop()
        await node.stop()
