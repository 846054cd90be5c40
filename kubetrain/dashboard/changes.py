"""Who is told what changed: each open page holds a `Subscription` and wakes when its topics change.

A topic is a string (``jobs`` for the list, a job's key for its page). Changes are
level-triggered: a subscription collects the keys that changed since it last looked, and the
page's stream reads the current state of each, so a burst of 50 status writes to one job costs
one update of it, not 50.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable


class Subscription:
    """The keys that changed since `take`, and an event set when there are any."""

    def __init__(self, hub: Changes, topics: Iterable[str]) -> None:
        self.hub = hub
        self.topics = tuple(topics)
        self.dirty: set[str] = set()
        self.wake = asyncio.Event()

    def mark(self, key: str) -> None:
        self.dirty.add(key)
        self.wake.set()

    def take(self) -> set[str]:
        dirty, self.dirty = self.dirty, set()
        self.wake.clear()
        return dirty

    def close(self) -> None:
        self.hub.unsubscribe(self)

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Changes:
    def __init__(self) -> None:
        self._subscribers: dict[str, set[Subscription]] = {}

    def subscribe(self, *topics: str) -> Subscription:
        sub = Subscription(self, topics)
        for topic in topics:
            self._subscribers.setdefault(topic, set()).add(sub)
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        for topic in sub.topics:
            subs = self._subscribers.get(topic)
            if subs is not None:
                subs.discard(sub)
                if not subs:
                    del self._subscribers[topic]

    def publish(self, topic: str, key: str) -> None:
        for sub in self._subscribers.get(topic, ()):
            sub.mark(key)

    def subscribers(self, topic: str) -> int:
        return len(self._subscribers.get(topic, ()))
