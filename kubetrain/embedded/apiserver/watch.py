"""Watch fan-out: per-watcher bounded queues fed synchronously by store events.

Writers never wait for watchers: an event is filtered and appended to each matching watcher's
queue (its wire form is serialized once and shared). A watcher whose queue overflows is closed
with a 410 Expired error, so its client relists instead of slowing the server down.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from typing import Any

from kubetrain.kube.labels import LabelSelector

from .errors import APIError, expired
from .jsonutil import dumps
from .resources import ResourceType
from .selection import FieldSelector
from .store import Event, Store, meta_of

INITIAL_EVENTS_END = "k8s.io/initial-events-end"


class Watcher:
    """One open watch request: its filter and its pending output lines."""

    def __init__(
        self,
        rt: ResourceType,
        namespace: str | None,
        labels: LabelSelector,
        fields: FieldSelector,
        bookmarks: bool,
        max_queue: int,
        transform: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    ) -> None:
        self.rt = rt
        self.namespace = namespace
        self.labels = labels
        self.fields = fields
        self.bookmarks = bookmarks
        self.max_queue = max_queue
        self.transform = transform
        self.pending: deque[bytes] = deque()
        self.wakeup = asyncio.Event()
        self.error: APIError | None = None
        self.closed = False
        self.last_rv = 0
        self.min_rv = 0  # a watch from a future resourceVersion sees only events after it

    def matches(self, obj: dict[str, Any] | None) -> bool:
        if obj is None:
            return False
        if self.namespace is not None and meta_of(obj).get("namespace", "") != self.namespace:
            return False
        return self.labels.matches_object(obj) and self.fields.matches(obj)

    def line(self, ev: Event, type_: str, use_old: bool = False) -> bytes:
        if self.transform is None:
            return ev.wire(type_, self.rt.api_version if self.rt.custom else None, use_old)
        obj = ev.old if use_old and ev.old is not None else ev.obj
        if use_old:
            obj = {**obj, "metadata": {**obj["metadata"], "resourceVersion": str(ev.rv)}}
        return dumps({"type": type_, "object": self.transform(obj)}) + b"\n"

    def offer(self, ev: Event) -> None:
        """Translate a store event into what this watcher sees (selector transitions included)."""
        if self.closed or ev.rv <= self.min_rv:
            return
        if ev.type == "MODIFIED":
            now_in, was_in = self.matches(ev.obj), self.matches(ev.old)
            if now_in and was_in:
                self.push(self.line(ev, "MODIFIED"), ev.rv)
            elif now_in:
                self.push(self.line(ev, "ADDED"), ev.rv)
            elif was_in:
                self.push(self.line(ev, "DELETED", use_old=True), ev.rv)
        elif self.matches(ev.obj):
            self.push(self.line(ev, ev.type), ev.rv)

    def push(self, line: bytes, rv: int) -> None:
        if self.closed:
            return
        if len(self.pending) >= self.max_queue:
            self.fail(expired(f"too old resource version: {self.last_rv} ({rv})"))
            return
        self.pending.append(line)
        self.last_rv = rv
        self.wakeup.set()

    def bookmark(self, rv: int, initial_end: bool = False) -> None:
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if initial_end:
            meta["annotations"] = {INITIAL_EVENTS_END: "true"}
        obj = {"kind": self.rt.kind, "apiVersion": self.rt.api_version, "metadata": meta}
        self.push(dumps({"type": "BOOKMARK", "object": obj}) + b"\n", rv)

    def fail(self, err: APIError) -> None:
        """End the watch with an ERROR event (after nothing else: pending lines are dropped)."""
        self.pending.clear()
        self.error = err
        self.close()

    def close(self) -> None:
        self.closed = True
        self.wakeup.set()


class WatchHub:
    """Routes store events to the watchers of their resource; sends periodic bookmarks."""

    def __init__(self, store: Store, bookmark_interval: float = 60.0, max_queue: int = 10_000) -> None:
        self._store = store
        self._watchers: dict[str, set[Watcher]] = {}
        self.bookmark_interval = bookmark_interval
        self.max_queue = max_queue
        store.add_listener(self.dispatch)

    def dispatch(self, ev: Event) -> None:
        watchers = self._watchers.get(ev.key)
        if watchers:
            for w in list(watchers):
                w.offer(ev)

    def register(self, key: str, watcher: Watcher) -> None:
        self._watchers.setdefault(key, set()).add(watcher)

    def unregister(self, key: str, watcher: Watcher) -> None:
        watchers = self._watchers.get(key)
        if watchers is not None:
            watchers.discard(watcher)

    def watchers(self) -> list[Watcher]:
        return [w for ws in self._watchers.values() for w in ws]

    def break_all(self, error: APIError | None = None) -> int:
        """Close every open watch (a dropped connection, or ``error`` as a final ERROR event)."""
        all_watchers = self.watchers()
        for w in all_watchers:
            if error is not None:
                w.fail(error)
            else:
                w.close()
        return len(all_watchers)

    async def run_bookmarks(self) -> None:
        while True:
            await asyncio.sleep(self.bookmark_interval)
            rv = self._store.resource_version
            for w in self.watchers():
                if w.bookmarks and not w.closed:
                    w.bookmark(rv)
