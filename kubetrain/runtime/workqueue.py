"""A client-go style rate-limited work queue for asyncio.

Keys, not objects, are queued: a key added many times before a worker takes it is processed once
(dirty set), and a key is never handed to two workers at once (processing set) -- a key added while
it is being processed is queued again when the worker calls `done`. This is what makes N workers
safe for a level-triggered reconciler.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Hashable
from typing import Generic, TypeVar

from kubetrain.runtime.ratelimit import RateLimiter, default_controller_rate_limiter

K = TypeVar("K", bound=Hashable)


class QueueShutDown(Exception):
    """Raised by `get` once the queue is shut down, so workers leave their loop."""


class WorkQueue(Generic[K]):
    """Dedup + processing set + delayed adds + per-key rate limiting, in one event loop."""

    def __init__(self, rate_limiter: RateLimiter | None = None, name: str = "") -> None:
        self.name = name
        self.rate_limiter: RateLimiter = rate_limiter or default_controller_rate_limiter()
        self._queue: deque[K] = deque()
        self._dirty: set[K] = set()
        self._processing: set[K] = set()
        self._getters: deque[asyncio.Future[None]] = deque()
        self._timers: dict[K, tuple[float, asyncio.TimerHandle]] = {}
        self._idle: asyncio.Event | None = None
        self._shutting_down = False

    # -- basic queue -------------------------------------------------------------------------

    def add(self, key: K) -> None:
        """Mark `key` as needing work; a no-op if it is already queued."""
        if self._shutting_down or key in self._dirty:
            return
        self._dirty.add(key)
        if key in self._processing:
            return  # re-queued by done()
        self._queue.append(key)
        self._wake_one()

    async def get(self) -> K:
        """Wait for a key and mark it processing; raises QueueShutDown when shut down."""
        while True:
            if self._shutting_down:
                raise QueueShutDown(self.name)
            if self._queue:
                key = self._queue.popleft()
                self._processing.add(key)
                self._dirty.discard(key)
                return key
            fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._getters.append(fut)
            try:
                await fut
            except asyncio.CancelledError:
                if fut.done() and not fut.cancelled():
                    self._wake_one()  # pass the wake-up we consumed on to another getter
                else:
                    self._remove_getter(fut)
                raise

    def done(self, key: K) -> None:
        """The worker finished `key`; queue it again if it was added meanwhile."""
        self._processing.discard(key)
        if key in self._dirty and not self._shutting_down:
            self._queue.append(key)
            self._wake_one()
        if not self._processing and self._idle is not None:
            self._idle.set()

    def __len__(self) -> int:
        """Keys waiting for a worker (the queue depth metric); excludes delayed and in-flight keys."""
        return len(self._queue)

    @property
    def processing(self) -> int:
        return len(self._processing)

    @property
    def waiting(self) -> int:
        """Keys scheduled by add_after / add_rate_limited that are not ready yet."""
        return len(self._timers)

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    # -- delayed and rate-limited adds -------------------------------------------------------

    def add_after(self, key: K, delay: float) -> None:
        """Add `key` after `delay` seconds; an earlier pending deadline for the same key wins."""
        if self._shutting_down:
            return
        if delay <= 0:
            self.add(key)
            return
        loop = asyncio.get_running_loop()
        ready_at = loop.time() + delay
        existing = self._timers.get(key)
        if existing is not None:
            if existing[0] <= ready_at:
                return
            existing[1].cancel()
        self._timers[key] = (ready_at, loop.call_at(ready_at, self._fire, key))

    def add_rate_limited(self, key: K) -> None:
        """Add `key` after the rate limiter's delay (per-key backoff and the overall bucket)."""
        self.add_after(key, self.rate_limiter.when(key))

    def forget(self, key: K) -> None:
        """Reset the key's backoff after a success (does not remove it from the queue)."""
        self.rate_limiter.forget(key)

    def num_requeues(self, key: K) -> int:
        return self.rate_limiter.num_requeues(key)

    # -- shutdown ----------------------------------------------------------------------------

    def shutdown(self) -> None:
        """Stop handing out keys: queued and delayed keys are dropped, in-flight ones may finish.

        A stopping operator must not start new reconciles; whoever runs next relists and rebuilds
        the queue from the caches.
        """
        self._shutting_down = True
        for _, handle in self._timers.values():
            handle.cancel()
        self._timers.clear()
        self._queue.clear()
        self._dirty.clear()
        while self._getters:
            fut = self._getters.popleft()
            if not fut.done():
                fut.set_result(None)

    async def wait_idle(self) -> None:
        """Wait until no key is being processed (used to drain workers on shutdown)."""
        while self._processing:
            if self._idle is None or self._idle.is_set():
                self._idle = asyncio.Event()
            await self._idle.wait()

    # -- internals ---------------------------------------------------------------------------

    def _fire(self, key: K) -> None:
        self._timers.pop(key, None)
        self.add(key)

    def _wake_one(self) -> None:
        while self._getters:
            fut = self._getters.popleft()
            if not fut.done():
                fut.set_result(None)
                return

    def _remove_getter(self, fut: asyncio.Future[None]) -> None:
        with contextlib.suppress(ValueError):
            self._getters.remove(fut)
