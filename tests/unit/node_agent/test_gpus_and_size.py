"""The GPU allocator, the --gpus/--node-* parsing and what the node then declares."""

from __future__ import annotations

import argparse
import asyncio
from fractions import Fraction

import pytest

from kubetrain.cli.nodesize import add_node_size_options, never_fits_hint, node_size
from kubetrain.embedded.node import NodeConfig
from kubetrain.embedded.node.gpus import DevicesUnavailable, GPUAllocator, parse_gpus
from kubetrain.embedded.node.nodestatus import NodeStatusReporter


def c(name: str, gpus: int) -> dict:
    return {"name": name, "resources": {"limits": {"nvidia.com/gpu": gpus}}}


def test_parse_gpus_count_ids_and_none() -> None:
    assert parse_gpus("3") == ("0", "1", "2")
    assert parse_gpus("1, 3") == ("1", "3")
    assert parse_gpus("none") == parse_gpus("0") == ()
    with pytest.raises(ValueError, match="twice"):
        parse_gpus("0,0")


def test_app_containers_get_their_own_devices_init_containers_reuse_them() -> None:
    gpus = GPUAllocator(["a", "b", "c", "d"])
    given = gpus.allocate("pod-1", {"initContainers": [c("setup", 1)], "containers": [c("x", 2), c("y", 1)]})
    assert given.by_container == {"x": ("a", "b"), "y": ("c",), "setup": ("a",)}
    assert gpus.free == ["d"]
    assert gpus.container_env(given, "y") == {"CUDA_VISIBLE_DEVICES": "c", "NVIDIA_VISIBLE_DEVICES": "c"}
    assert gpus.container_env(given, "sidecar") == {"CUDA_VISIBLE_DEVICES": "", "NVIDIA_VISIBLE_DEVICES": ""}
    with pytest.raises(DevicesUnavailable) as err:
        gpus.allocate("pod-2", {"containers": [c("z", 2)]})
    assert str(err.value) == (
        "Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. "
        "Requested: 2, Available: 1, which is unexpected"
    )
    gpus.release("pod-1")
    assert gpus.allocate("pod-2", {"containers": [c("z", 2)]}).by_container == {"z": ("a", "b")}


def test_a_node_without_gpus_leaves_the_env_alone() -> None:
    gpus = GPUAllocator([])
    assert gpus.container_env(gpus.allocate("p", {"containers": [{"name": "x"}]}), "x") == {}


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_node_size_options(parser)
    return parser.parse_args(list(argv))


def test_declared_size_and_overcommit_reach_the_node_status() -> None:
    args = parse("--node-cpu", "2", "--node-memory", "4Gi", "--node-overcommit", "1.5", "--gpus", "2")
    config = node_size(args).apply(NodeConfig())
    resources = NodeStatusReporter(config, "127.0.0.1", "127.244.0.0/16").resources()
    assert resources["cpu"] == "3"
    assert resources["memory"] == f"{6 * 2**20}Ki"
    assert resources["nvidia.com/gpu"] == "2"
    assert config.allocatable()["cpu"] == Fraction(3)


def test_bad_sizes_are_usage_errors() -> None:
    for argv in (["--node-cpu", "0"], ["--node-memory", "lots"], ["--node-overcommit", "-1"]):
        with pytest.raises(SystemExit):
            parse(*argv)


def test_hint_names_the_flag_of_each_resource() -> None:
    hint = never_fits_hint(["cpu", "nvidia.com/gpu"])
    assert "--node-cpu or --node-overcommit for cpu" in hint
    assert "--gpus for nvidia.com/gpu" in hint
    plain = never_fits_hint(["example.com/fpga"])
    assert plain == "The pod asks more example.com/fpga than the node has in all."


async def test_admission_waits_for_devices_a_stopping_pod_gives_back() -> None:
    gpus = GPUAllocator(["a"])
    gpus.allocate("old", {"containers": [c("x", 1)]})
    with pytest.raises(DevicesUnavailable):  # nobody is giving it back: the kubelet's admission error
        await gpus.admit("new", {"containers": [c("y", 1)]})
    gpus.stopping("old")
    waiting = asyncio.create_task(gpus.admit("new", {"containers": [c("y", 1)]}))
    await asyncio.sleep(0.05)
    assert not waiting.done()  # the old process still has the device
    gpus.release("old")
    assert (await asyncio.wait_for(waiting, 5)).by_container == {"y": ("a",)}
