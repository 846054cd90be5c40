"""The keyed reconcile loop the embedded Job, StatefulSet and JobSet controllers share: dedup of
keys, one reconcile per key at a time, requeue-after (coalescing or not), error retries, stop."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest

from kubetrain.embedded.keyedloop import KeyedLoop, controller_keys
from kubetrain.kube.errors import ApiError
from kubetrain.kube.informer import Informer

JsonDict = dict[str, Any]
log = logging.getLogger("tests.keyedloop")


def _obj(key: str) -> JsonDict:
    namespace, name = key.split("/")
    return {"metadata": {"namespace": namespace, "name": name}}


class FakeSource:
    """An informer without an API server: `items` is set by hand, `start` syncs at once unless told."""

    def __init__(self, *keys: str, syncs: bool = True) -> None:
        self.items: dict[str, JsonDict] = {key: _obj(key) for key in keys}
        self.synced = asyncio.Event()
        self.syncs = syncs
        self.started = self.stopped = False

    def start(self) -> None:
        self.started = True
        if self.syncs:
            self.synced.set()

    async def stop(self) -> None:
        self.stopped = True


class Recorder:
    """A reconcile that records each call, optionally blocks until released, or raises."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.times: list[float] = []
        self.running: set[str] = set()
        self.overlaps = 0
        self.gate: asyncio.Event | None = None
        self.raises: list[BaseException] = []
        self.called = asyncio.Event()

    async def __call__(self, obj: JsonDict) -> None:
        meta = obj["metadata"]
        key = f"{meta['namespace']}/{meta['name']}"
        if key in self.running:
            self.overlaps += 1
        self.running.add(key)
        try:
            self.calls.append(key)
            self.times.append(asyncio.get_running_loop().time())
            self.called.set()
            if self.gate is not None:
                await self.gate.wait()
            if self.raises:
                raise self.raises.pop(0)
        finally:
            self.running.discard(key)

    async def wait_calls(self, n: int, timeout: float = 5.0) -> None:
        async def reached() -> None:
            while len(self.calls) < n:
                self.called.clear()
                await self.called.wait()

        await asyncio.wait_for(reached(), timeout)


async def _settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


@contextlib.asynccontextmanager
async def started(loop: KeyedLoop) -> AsyncIterator[KeyedLoop]:
    await loop.start()
    try:
        yield loop
    finally:
        await loop.stop()


def _loop(rec: Recorder, *keys: str, **kwargs: Any) -> tuple[KeyedLoop, FakeSource]:
    loop = KeyedLoop("test loop", "thing", rec, log=log, **kwargs)
    return loop, loop.add(FakeSource(*keys), primary=True)


async def test_a_key_enqueued_many_times_is_reconciled_once() -> None:
    rec = Recorder()
    loop, _ = _loop(rec, "ns/a", "ns/b")
    for _ in range(5):
        loop.enqueue("ns/b")
        loop.enqueue("ns/a")
    async with started(loop):
        await rec.wait_calls(2)
        await _settle()
        assert rec.calls == ["ns/a", "ns/b"]  # once each, in sorted order


async def test_handler_enqueues_the_keys_an_event_maps_to() -> None:
    rec = Recorder()
    loop, _ = _loop(rec, "ns/a", "ns/b")
    changed = loop.handler(lambda kind, obj: [] if kind == "DELETED" else ["ns/a", "ns/b", "ns/a"])
    changed("DELETED", _obj("ns/x"))
    async with started(loop):
        await _settle()
        assert rec.calls == []
        changed("MODIFIED", _obj("ns/x"))
        await rec.wait_calls(2)
        await _settle()
        assert rec.calls == ["ns/a", "ns/b"]


async def test_watch_builds_an_informer_whose_events_enqueue_keys() -> None:
    rec = Recorder()
    loop = KeyedLoop("test loop", "thing", rec, log=log)
    informer = loop.watch(None, "/api/v1/pods", lambda kind, obj: ["ns/owner"])
    assert isinstance(informer, Informer)
    assert informer.handler("ADDED", _obj("ns/pod")) is None
    assert loop._dirty == {"ns/owner"}


async def test_a_key_missing_from_the_primary_cache_is_skipped() -> None:
    rec = Recorder()
    loop, source = _loop(rec, "ns/a")
    async with started(loop):
        loop.enqueue("ns/gone")
        loop.enqueue("ns/a")
        await rec.wait_calls(1)
        await _settle()
        assert rec.calls == ["ns/a"]
        source.items["ns/gone"] = _obj("ns/gone")  # it appears: the next enqueue reconciles it
        loop.enqueue("ns/gone")
        await rec.wait_calls(2)
        assert rec.calls == ["ns/a", "ns/gone"]


async def test_one_reconcile_per_key_at_a_time_and_a_key_enqueued_meanwhile_runs_again() -> None:
    rec = Recorder()
    rec.gate = asyncio.Event()
    loop, _ = _loop(rec, "ns/a")
    async with started(loop):
        loop.enqueue("ns/a")
        await rec.wait_calls(1)
        for _ in range(3):  # while the first reconcile is blocked
            loop.enqueue("ns/a")
            await _settle()
        assert rec.calls == ["ns/a"] and rec.running == {"ns/a"}
        rec.gate.set()
        await rec.wait_calls(2)
        await _settle()
        assert rec.calls == ["ns/a", "ns/a"]  # once more, not three times
        assert rec.overlaps == 0


async def test_enqueue_after_fires_after_the_delay() -> None:
    rec = Recorder()
    loop, _ = _loop(rec, "ns/a")
    async with started(loop):
        start = asyncio.get_running_loop().time()
        loop.enqueue_after("ns/a", 0.1)
        await asyncio.sleep(0.05)
        assert rec.calls == []
        await rec.wait_calls(1)
        assert rec.times[0] - start >= 0.1


async def test_coalescing_keeps_an_earlier_pending_wakeup_and_replaces_a_later_one() -> None:
    rec = Recorder()
    loop, _ = _loop(rec, "ns/a")
    clock = asyncio.get_running_loop()
    loop.enqueue_after("ns/a", 5.0)
    loop.enqueue_after("ns/a", 50.0)  # later than the pending one: dropped
    [timer] = loop._timers["ns/a"]
    assert timer.when() - clock.time() == pytest.approx(5.0, abs=0.5)
    loop.enqueue_after("ns/a", 1.0)  # sooner: replaces it
    [sooner] = loop._timers["ns/a"]
    assert timer.cancelled() and not sooner.cancelled()
    assert sooner.when() - clock.time() == pytest.approx(1.0, abs=0.5)
    await loop.stop()
    assert sooner.cancelled()


async def test_a_requeue_after_an_earlier_wakeup_has_fired_still_fires() -> None:
    """The StatefulSet controller's copy used to keep the fired timer and drop every later one."""
    rec = Recorder()
    loop, _ = _loop(rec, "ns/a")
    async with started(loop):
        loop.enqueue_after("ns/a", 0.01)
        await rec.wait_calls(1)
        loop.enqueue_after("ns/a", 0.01)
        await rec.wait_calls(2)
        assert rec.calls == ["ns/a", "ns/a"]


async def test_without_coalescing_every_wakeup_fires() -> None:
    rec = Recorder()
    loop, _ = _loop(rec, "ns/a", coalesce=False)
    async with started(loop):
        loop.enqueue_after("ns/a", 0.02)
        loop.enqueue_after("ns/a", 0.3)  # a coalescing loop would drop this one
        await rec.wait_calls(2)
        assert rec.times[1] - rec.times[0] >= 0.2


async def test_forget_cancels_the_pending_wakeups_of_a_key() -> None:
    rec = Recorder()
    loop, _ = _loop(rec, "ns/a", "ns/b", coalesce=False)
    async with started(loop):
        loop.enqueue_after("ns/a", 0.05)
        loop.enqueue_after("ns/a", 0.06)
        loop.enqueue_after("ns/b", 0.05)
        loop.forget("ns/a")
        await rec.wait_calls(1)
        await asyncio.sleep(0.1)
        assert rec.calls == ["ns/b"]


@pytest.mark.parametrize("status", [404, 409])
async def test_a_404_or_409_is_retried_quietly(status: int, caplog: pytest.LogCaptureFixture) -> None:
    rec = Recorder()
    rec.raises = [ApiError(status, "Conflict")]
    loop, _ = _loop(rec, "ns/a", retry_delay=0.05)
    async with started(loop):
        with caplog.at_level(logging.DEBUG, logger=log.name):
            loop.enqueue("ns/a")
            await rec.wait_calls(2)
        assert rec.times[1] - rec.times[0] >= 0.05
        assert caplog.records == []


async def test_an_api_error_is_a_warning_and_retried_after_retry_delay(
    caplog: pytest.LogCaptureFixture,
) -> None:
    rec = Recorder()
    rec.raises = [ApiError(500, "InternalError", "boom")]
    loop, _ = _loop(rec, "ns/a", retry_delay=30.0)
    async with started(loop):
        with caplog.at_level(logging.DEBUG, logger=log.name):
            loop.enqueue("ns/a")
            await rec.wait_calls(1)
            await _settle()
        [timer] = loop._timers["ns/a"]
        assert timer.when() - rec.times[0] == pytest.approx(30.0, abs=0.5)
        [record] = caplog.records
        assert record.name == log.name and record.levelno == logging.WARNING
        assert record.getMessage() == "thing ns/a: 500 InternalError: boom"


async def test_any_other_error_is_logged_with_its_traceback_and_retried_after_twice_the_delay(
    caplog: pytest.LogCaptureFixture,
) -> None:
    rec = Recorder()
    rec.raises = [ValueError("bad")]
    loop, _ = _loop(rec, "ns/a", "ns/b", retry_delay=30.0)
    async with started(loop):
        with caplog.at_level(logging.DEBUG, logger=log.name):
            loop.enqueue("ns/a")
            loop.enqueue("ns/b")
            await rec.wait_calls(2)  # the loop goes on with the next key
            await _settle()
        [timer] = loop._timers["ns/a"]
        assert timer.when() - rec.times[0] == pytest.approx(60.0, abs=0.5)
        assert "ns/b" not in loop._timers
        [record] = caplog.records
        assert record.levelno == logging.ERROR and record.getMessage() == "thing ns/a: sync failed"
        assert record.exc_info is not None and isinstance(record.exc_info[1], ValueError)


async def test_start_waits_for_the_sources_it_should_and_stop_cleans_up() -> None:
    rec = Recorder()
    rec.gate = asyncio.Event()  # never set: stop must cancel a reconcile in flight
    loop, primary = _loop(rec, "ns/a")
    lazy = loop.add(FakeSource(syncs=False), wait=False)
    needed = loop.add(FakeSource(syncs=False))
    starting = asyncio.create_task(loop.start())
    await _settle()
    assert primary.started and lazy.started and needed.started
    assert not starting.done()  # waits for `needed`, not for `lazy`
    needed.synced.set()
    await asyncio.wait_for(starting, 5)
    loop.enqueue("ns/a")
    await rec.wait_calls(1)
    loop.enqueue_after("ns/a", 0.05)
    await loop.stop()
    assert rec.running == set()  # the blocked reconcile was cancelled
    assert loop._task is not None and loop._task.done()
    assert all(t.cancelled() for t in loop._timers["ns/a"])
    assert primary.stopped and lazy.stopped and needed.stopped
    await asyncio.sleep(0.1)
    assert rec.calls == ["ns/a"]


async def test_start_without_a_primary_source_is_an_error() -> None:
    loop = KeyedLoop("test loop", "thing", Recorder(), log=log)
    loop.add(FakeSource())
    with pytest.raises(ValueError, match="no primary source"):
        await loop.start()


async def test_stop_awaits_the_background_tasks_after_the_sources() -> None:
    loop, source = _loop(Recorder(), "ns/a")
    order: list[str] = []
    release = asyncio.Event()

    async def post() -> None:
        await release.wait()
        order.append(f"posted, sources stopped: {source.stopped}")

    await loop.start()
    loop.spawn(post())
    stopping = asyncio.create_task(loop.stop())
    await _settle()
    assert source.stopped and not stopping.done()  # still waiting for the post
    release.set()
    await asyncio.wait_for(stopping, 5)
    assert order == ["posted, sources stopped: True"]


async def test_a_failed_background_task_does_not_fail_stop() -> None:
    loop, _ = _loop(Recorder(), "ns/a")

    async def fails() -> None:
        raise RuntimeError("post failed")

    await loop.start()
    loop.spawn(fails())
    await loop.stop()


def test_controller_keys_are_the_accepted_controller_references() -> None:
    pod = {
        "metadata": {
            "namespace": "ns",
            "ownerReferences": [
                {"kind": "Job", "name": "a", "controller": True},
                {"kind": "Job", "name": "b"},  # not the controller
                {"kind": "ReplicaSet", "name": "c", "controller": True},
            ],
        }
    }
    assert controller_keys(pod, lambda ref: ref.get("kind") == "Job") == ["ns/a"]
    assert controller_keys({"metadata": {"ownerReferences": [{"name": "d", "controller": True}]}}, bool) == [
        "default/d"
    ]
    assert controller_keys({}, bool) == []
