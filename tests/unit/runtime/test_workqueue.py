import asyncio
import random

import pytest

from kubetrain.runtime.ratelimit import ItemExponentialRateLimiter
from kubetrain.runtime.workqueue import QueueShutDown, WorkQueue


async def test_add_dedups_until_taken() -> None:
    q: WorkQueue[str] = WorkQueue()
    q.add("a")
    q.add("a")
    q.add("b")
    assert len(q) == 2
    assert await q.get() == "a"
    assert await q.get() == "b"
    assert len(q) == 0


async def test_key_added_while_processing_is_requeued_on_done() -> None:
    q: WorkQueue[str] = WorkQueue()
    q.add("a")
    key = await q.get()
    q.add("a")
    assert len(q) == 0, "must not be handed to a second worker while processing"
    q.done(key)
    assert len(q) == 1
    assert await q.get() == "a"
    q.done("a")
    assert len(q) == 0


async def test_get_waits_for_add() -> None:
    q: WorkQueue[str] = WorkQueue()
    task = asyncio.create_task(q.get())
    await asyncio.sleep(0)
    assert not task.done()
    q.add("x")
    assert await asyncio.wait_for(task, 1) == "x"


async def test_cancelled_getter_does_not_swallow_a_wakeup() -> None:
    q: WorkQueue[str] = WorkQueue()
    g1 = asyncio.create_task(q.get())
    g2 = asyncio.create_task(q.get())
    await asyncio.sleep(0)
    q.add("x")  # wakes g1 ...
    g1.cancel()  # ... which is cancelled before it runs
    assert await asyncio.wait_for(g2, 1) == "x"


async def test_no_two_workers_hold_the_same_key_under_concurrency() -> None:
    q: WorkQueue[int] = WorkQueue()
    in_flight: set[int] = set()
    processed: dict[int, int] = {}
    violations: list[int] = []
    rng = random.Random(7)

    async def worker() -> None:
        while True:
            try:
                key = await q.get()
            except QueueShutDown:
                return
            if key in in_flight:
                violations.append(key)
            in_flight.add(key)
            await asyncio.sleep(rng.random() * 0.002)
            if rng.random() < 0.3:
                q.add(key)  # an event for the key while it is being processed
            in_flight.discard(key)
            processed[key] = processed.get(key, 0) + 1
            q.done(key)

    async def producer() -> None:
        for _ in range(2000):
            q.add(rng.randrange(20))
            if rng.random() < 0.2:
                await asyncio.sleep(0)

    workers = [asyncio.create_task(worker()) for _ in range(16)]
    await producer()
    while len(q) or q.processing:
        await asyncio.sleep(0.01)
    q.shutdown()
    await asyncio.gather(*workers)
    assert violations == []
    assert set(processed) == set(range(20))


async def test_add_after_delays_and_keeps_earliest_deadline() -> None:
    q: WorkQueue[str] = WorkQueue()
    q.add_after("a", 0.2)
    q.add_after("a", 0.05)  # earlier wins
    q.add_after("a", 5)  # later is ignored
    assert len(q) == 0 and q.waiting == 1
    assert await asyncio.wait_for(q.get(), 1) == "a"
    assert q.waiting == 0


async def test_add_after_zero_is_immediate() -> None:
    q: WorkQueue[str] = WorkQueue()
    q.add_after("a", 0)
    assert len(q) == 1


async def test_rate_limited_backoff_grows_and_forget_resets() -> None:
    q: WorkQueue[str] = WorkQueue(ItemExponentialRateLimiter(0.01, 10))
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    q.add_rate_limited("a")
    await q.get()
    q.done("a")
    q.add_rate_limited("a")
    await q.get()
    q.done("a")
    assert loop.time() - t0 >= 0.03 - 0.005  # 10 ms + 20 ms
    assert q.num_requeues("a") == 2
    q.forget("a")
    assert q.num_requeues("a") == 0


async def test_shutdown_wakes_getters_and_drops_pending() -> None:
    q: WorkQueue[str] = WorkQueue()
    getter = asyncio.create_task(q.get())
    await asyncio.sleep(0)
    q.add_after("later", 10)
    q.shutdown()
    with pytest.raises(QueueShutDown):
        await getter
    q.add("x")
    assert len(q) == 0
    with pytest.raises(QueueShutDown):
        await q.get()
    assert q.waiting == 0


async def test_wait_idle_waits_for_in_flight_keys() -> None:
    q: WorkQueue[str] = WorkQueue()
    q.add("a")
    key = await q.get()
    waiter = asyncio.create_task(q.wait_idle())
    await asyncio.sleep(0.01)
    assert not waiter.done()
    q.done(key)
    await asyncio.wait_for(waiter, 1)
