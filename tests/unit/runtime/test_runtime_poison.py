"""The operator's cache path survives deep nesting, odd strings and huge watch events (issue #17).

An MPIJob nested 600 deep made `trim.compact` raise RecursionError on every list/watch of the kind;
one object over 512 KiB made aiohttp's line reader raise LineTooLong on every watch event.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest

from kubetrain.kube import jsonsafe
from kubetrain.kube.client import watch_event, watch_lines
from kubetrain.kube.errors import ApiError
from kubetrain.runtime.cache import Store
from kubetrain.runtime.transport import _decode, _encode
from kubetrain.runtime.trim import compact, trim_for, trim_generic, trim_pod

DEPTHS = (600, 5000)


def nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = [value]
    return value


def depth_of(value: Any) -> int:
    level = 0
    while isinstance(value, list):
        value = value[0]
        level += 1
    return level


def deep_mpijob(depth: int) -> dict[str, Any]:
    launcher = {"name": "launcher", "image": "x", "command": [nested(depth)]}
    return {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": "deep", "namespace": "default", "resourceVersion": "1", "managedFields": [{}]},
        "spec": {"mpiReplicaSpecs": {"Launcher": {"template": {"spec": {"containers": [launcher]}}}}},
    }


@pytest.mark.parametrize("depth", DEPTHS)
def test_compact_and_trim_any_depth(depth: int) -> None:
    assert depth_of(compact(nested(depth))) == depth
    trimmed = trim_generic(deep_mpijob(depth))
    assert "managedFields" not in trimmed["metadata"]
    command = trimmed["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["command"]
    assert depth_of(command[0]) == depth


def test_compact_interns_short_strings_below_the_recursive_levels() -> None:
    deep = nested(100)
    leaf = "".join(["le", "af"])
    node = deep
    for _ in range(99):
        node = node[0]
    node[0] = leaf
    out = compact(deep)
    for _ in range(99):
        out = out[0]
    assert out[0] is sys.intern("leaf")  # interned: the identity is the point


@pytest.mark.parametrize("depth", DEPTHS)
def test_store_accepts_a_deep_object(depth: int) -> None:
    store = Store(trim_for("kubeflow.org/v2beta1", "MPIJob"))
    change = store.upsert(deep_mpijob(depth))
    assert change is not None and store.get("default", "deep") is not None


def test_trims_never_raise_on_odd_strings_and_shapes() -> None:
    pod = {
        "metadata": {"name": "\ud800", "labels": {"\udfff": "\ud800"}, "annotations": ["x"]},
        "spec": {"containers": [{"name": 5}, "x", {"name": "\ud800"}], "initContainers": {"a": 1}},
        "status": {"phase": "\ud800"},
    }
    out = trim_pod(pod)
    assert out["spec"]["containers"] == [{"name": "\ud800"}]
    trim_generic({"metadata": {"annotations": "x"}, "spec": "\ud800"})


@pytest.mark.parametrize("depth", DEPTHS)
def test_transport_encodes_and_decodes_any_depth(depth: int) -> None:
    body = {"spec": nested(depth), "s": "\ud800"}
    raw = _encode(body)
    back = _decode(raw)
    assert depth_of(back["spec"]) == depth and back["s"] == "\ufffd"
    assert _decode(b'{"s": "\\ud800"}') == {"s": "\ufffd"}  # orjson alone refuses this
    with pytest.raises(orjson.JSONDecodeError):
        _decode(b"{not json")


class _Content:
    """aiohttp.StreamReader's `iter_any()`: the chunks as the socket delivered them."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    async def iter_any(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            yield chunk


def _frames(*objects: dict[str, Any]) -> bytes:
    return b"".join(orjson.dumps({"type": "MODIFIED", "object": o}) + b"\n" for o in objects)


async def _events(chunks: list[bytes], limit: int = 64 << 20) -> list[dict[str, Any]]:
    """The frames as the operator decodes them (jsonsafe: deeper than orjson, lone surrogates)."""
    return [watch_event(line, jsonsafe.loads) async for line in watch_lines(_Content(chunks), limit)]  # type: ignore[arg-type]


async def test_watch_reads_events_of_several_megabytes_in_any_chunking() -> None:
    big = {"metadata": {"name": "big"}, "data": "b" * (3 << 20)}
    small = {"metadata": {"name": "small"}}
    stream = _frames(small, big, small) + b"\n"
    for size in (1, 7, 65536, len(stream)):
        chunks = [stream[i : i + size] for i in range(0, len(stream), size)] if size > 1 else None
        if chunks is None:  # byte by byte is too slow for 3 MiB: split around the big frame instead
            cut = stream.index(b"bbbb")
            chunks = [stream[:cut], stream[cut : cut + 1], stream[cut + 1 :]]
        events = await _events(chunks)
        assert [e["object"]["metadata"]["name"] for e in events] == ["small", "big", "small"]
        assert len(events[1]["object"]["data"]) == 3 << 20


async def test_watch_reads_deep_and_surrogate_events() -> None:
    frame = b'{"type":"ADDED","object":{"metadata":{"name":"\\ud800"},"spec":' + jsonsafe.dumps(nested(5000))
    events = await _events([frame + b"}}\n"])
    assert events[0]["object"]["metadata"]["name"] == "\ufffd"
    assert depth_of(events[0]["object"]["spec"]) == 5000


async def test_watch_bounds_an_endless_event_and_reports_garbage() -> None:
    with pytest.raises(ApiError):
        await _events([b"x" * 1000, b"y" * 1000], limit=1500)
    with pytest.raises(ApiError):
        await _events([b"{garbage\n"])
