"""Kubernetes Event recording with client-go's EventCorrelator semantics.

Why correlate: a job with N replicas would otherwise write N+ Events per lifecycle step. Like
client-go (tools/record/events_cache.go):

* the same event (source, object, type, reason, message) seen again becomes a PATCH of the
  existing Event's count/lastTimestamp instead of a new object;
* more than `max_similar` (10) events differing only in message within `similar_window` (10 min)
  are folded into one Event whose message starts with "(combined from similar events): ";
* a token bucket per source+object (burst 25, then 1 per 5 minutes) drops the rest.

Recording never blocks a reconcile: `record` puts onto a bounded queue and returns; when the
queue is full the event is dropped and counted.

Unlike client-go, an event that names the fact it reports (`once`, e.g. one container's
termination) is recorded once: upstream records ExitedWithCode in every pass, and those repeats
spend the object's spam-filter burst until `<Kind>Succeeded` is dropped
(docs/differences.md#transitions-counted).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from kubetrain.kube.errors import ApiError
from kubetrain.kube.events import core_event
from kubetrain.kube.tasks import cancel_and_wait
from kubetrain.runtime.ratelimit import Clock, TokenBucket
from kubetrain.runtime.transport import KubeClient

log = logging.getLogger(__name__)

JsonDict = dict[str, Any]
WallClock = Callable[[], datetime]

COMBINED_PREFIX = "(combined from similar events): "
MAX_LRU = 4096
MAX_ONCE = 65536
"""The `once` facts remembered (a job's pods times its restarts); one forgotten is recorded again."""


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _involved_key(event: JsonDict) -> tuple[str, ...]:
    inv = event.get("involvedObject") or {}
    src = event.get("source") or {}
    return (
        src.get("component", ""),
        src.get("host", ""),
        inv.get("kind", ""),
        inv.get("namespace", ""),
        inv.get("name", ""),
        inv.get("uid", ""),
        inv.get("apiVersion", ""),
    )


class _LRU(OrderedDict[Any, Any]):
    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    def touch(self, key: Any, value: Any) -> None:
        self[key] = value
        self.move_to_end(key)
        while len(self) > self.size:
            self.popitem(last=False)


@dataclass
class _Aggregate:
    messages: set[str] = field(default_factory=set)
    last: float = 0.0


@dataclass
class _Observation:
    name: str
    count: int
    first_timestamp: str


@dataclass(frozen=True)
class Correlation:
    """What to write: `event` (new or combined) to create, or `patch` to apply to `event`'s name.

    `skip` means the spam filter dropped it.
    """

    event: JsonDict
    patch: JsonDict | None = None
    skip: bool = False


class EventCorrelator:
    """Pure decision logic (no I/O), so it is unit-testable with a fake clock."""

    def __init__(
        self,
        *,
        spam_burst: int = 25,
        spam_qps: float = 1.0 / 300.0,
        max_similar: int = 10,
        similar_window: float = 600.0,
        clock: Clock = time.monotonic,
    ) -> None:
        self.spam_burst = spam_burst
        self.spam_qps = spam_qps
        self.max_similar = max_similar
        self.similar_window = similar_window
        self._clock = clock
        self._spam: _LRU = _LRU(MAX_LRU)
        self._aggregates: _LRU = _LRU(MAX_LRU)
        self._observed: _LRU = _LRU(MAX_LRU)

    def correlate(self, event: JsonDict) -> Correlation:
        if not self._allow(event):
            return Correlation(event, skip=True)
        event, key = self._aggregate(event)
        return self._observe(event, key)

    def recreated(self, event: JsonDict) -> None:
        """The Event object was gone (a PATCH got 404) and was created again with count 1."""
        for seen in self._observed.values():
            if seen.name == event["metadata"]["name"]:
                seen.count = 1
                seen.first_timestamp = event.get("lastTimestamp", "")

    def _allow(self, event: JsonDict) -> bool:
        key = _involved_key(event)
        bucket = self._spam.get(key)
        if bucket is None:
            bucket = TokenBucket(self.spam_qps, self.spam_burst, self._clock)
        self._spam.touch(key, bucket)
        return bucket.allow()

    def _aggregate(self, event: JsonDict) -> tuple[JsonDict, tuple[str, ...]]:
        base = (*_involved_key(event), event.get("type", ""), event.get("reason", ""))
        message = event.get("message", "")
        now = self._clock()
        agg: _Aggregate | None = self._aggregates.get(base)
        if agg is None or now - agg.last > self.similar_window:
            agg = _Aggregate()
        agg.messages.add(message)
        agg.last = now
        self._aggregates.touch(base, agg)
        if len(agg.messages) <= self.max_similar:
            return event, (*base, message)
        combined = dict(event)
        combined["message"] = COMBINED_PREFIX + message
        return combined, base

    def _observe(self, event: JsonDict, key: tuple[str, ...]) -> Correlation:
        seen: _Observation | None = self._observed.get(key)
        if seen is None:
            self._observed.touch(
                key, _Observation(event["metadata"]["name"], 1, event.get("firstTimestamp", ""))
            )
            return Correlation(event)
        seen.count += 1
        self._observed.touch(key, seen)
        updated = dict(event)
        updated["metadata"] = {**event["metadata"], "name": seen.name}
        updated["count"] = seen.count
        updated["firstTimestamp"] = seen.first_timestamp
        patch = {
            "count": seen.count,
            "lastTimestamp": event.get("lastTimestamp"),
            "message": event.get("message", ""),
        }
        return Correlation(updated, patch=patch)


def involved_object(obj: JsonDict) -> JsonDict:
    """An ObjectReference for an object dict (apiVersion, kind, namespace, name, uid)."""
    meta = obj.get("metadata") or {}
    ref = {
        "apiVersion": obj.get("apiVersion", ""),
        "kind": obj.get("kind", ""),
        "namespace": meta.get("namespace", ""),
        "name": meta.get("name", ""),
    }
    if meta.get("uid"):
        ref["uid"] = meta["uid"]
    return ref


class EventRecorder:
    """Writes core/v1 Events with `source.component` = the controller name, asynchronously."""

    def __init__(
        self,
        client: KubeClient | None,
        *,
        max_pending: int = 10000,
        writers: int = 8,
        correlator: EventCorrelator | None = None,
        host: str | None = None,
        wall_clock: WallClock = _utcnow,
    ) -> None:
        self.client = client
        self.correlator = correlator or EventCorrelator()
        self.host = host if host is not None else os.environ.get("HOSTNAME", "")
        self._wall_clock = wall_clock
        # One queue per writer, chosen by involved object: the writes about one object stay in
        # order (a count PATCH must never overtake the CREATE or a later PATCH), while different
        # objects are written in parallel.
        self._queues: list[asyncio.Queue[JsonDict]] = [asyncio.Queue() for _ in range(max(1, writers))]
        self.max_pending = max_pending
        self._pending = 0
        self._tasks: list[asyncio.Task[None]] = []
        self._seq = 0
        self._once: _LRU = _LRU(MAX_ONCE)
        self.dropped = 0
        self.repeats = 0
        self.filtered = 0
        self.written = 0
        self.failed = 0

    def record(
        self,
        component: str,
        involved: JsonDict,
        type: str,
        reason: str,
        message: str,
        *,
        once: str = "",
    ) -> bool:
        """Queue an Event about `involved` (an ObjectReference dict); False if it was dropped.
        With `once`, an event of the same component, object, reason and fact as one already
        queued is not queued again."""
        if once:
            fact = (component, _involved_key({"involvedObject": involved}), reason, once)
            if fact in self._once:
                self.repeats += 1
                self._once.move_to_end(fact)
                return True
        event = self.build(component, involved, type, reason, message)
        if self._pending >= self.max_pending:
            self.dropped += 1
            return False
        if once:
            self._once.touch(fact, None)
        self._pending += 1
        self._queues[hash(_involved_key(event)) % len(self._queues)].put_nowait(event)
        return True

    def build(self, component: str, involved: JsonDict, type: str, reason: str, message: str) -> JsonDict:
        now = self._wall_clock()
        self._seq += 1
        # client-go names events "<object>.<unix nanos in hex>"; the sequence keeps names unique
        # when many events are built within one clock tick.
        nanos = int(now.timestamp() * 1e9) + self._seq
        name = f"{involved.get('name', '')}.{nanos:x}"
        return core_event(involved, type, reason, message, component, now, host=self.host, name=name)

    def start(self) -> None:
        if not self._tasks:
            self._tasks = [
                asyncio.create_task(self._writer(q), name=f"event-writer-{i}")
                for i, q in enumerate(self._queues)
            ]

    async def flush(self) -> None:
        """Wait until every queued event has been written or given up on."""
        for queue in self._queues:
            await queue.join()

    async def stop(self, flush_timeout: float = 2.0) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.flush(), flush_timeout)
        await cancel_and_wait(self._tasks)
        self._tasks = []

    @property
    def pending(self) -> int:
        return self._pending

    async def _writer(self, queue: asyncio.Queue[JsonDict]) -> None:
        while True:
            event = await queue.get()
            try:
                await self.write(event)
            except asyncio.CancelledError:
                raise
            except Exception:
                self.failed += 1
                log.exception("writing event failed")
            finally:
                self._pending -= 1
                queue.task_done()

    async def write(self, event: JsonDict) -> None:
        """Correlate and write one event now (the writers call this)."""
        result = self.correlator.correlate(event)
        if result.skip:
            self.filtered += 1
            return
        if self.client is None:
            return
        ev = result.event
        ns = ev["metadata"]["namespace"]
        try:
            if result.patch is not None:
                try:
                    await self.client.merge_patch("v1", "Event", ns, ev["metadata"]["name"], result.patch)
                except ApiError as err:
                    if not err.not_found:
                        raise
                    fresh = {**ev, "count": 1, "firstTimestamp": ev["lastTimestamp"]}
                    await self.client.create(fresh)
                    self.correlator.recreated(fresh)
            else:
                await self.client.create(ev)
            self.written += 1
        except ApiError as err:
            if err.already_exists:
                self.written += 1
                return
            self.failed += 1
            log.info("event %s/%s not written: %s", ns, ev["metadata"]["name"], err)
