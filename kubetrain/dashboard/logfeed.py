"""A job's logs, streamed live from the API for the pages that show the job, and its metric curves.

One feed per job, shared by every page open on it: `kubetrain.client.joblogs.JobLogFollower`
streams each container instance once (`pods/log?follow=true`, a crashed instance's output with
`previous=true`), fed the job's pods by the live state instead of a watch of its own. Every line
lands in a bounded buffer per instance and is read for metrics (`series`), so curves grow as the
job prints. A feed outlives its last page by `LINGER_SECONDS` (a reload finds it warm); then its
streams are closed.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kubetrain.client.joblogs import JobLogFollower, Stream, streams_to_start
from kubetrain.dashboard.series import SeriesSet

if TYPE_CHECKING:
    from kubetrain.client.aio import AsyncClient

JsonDict = dict[str, Any]

MAX_LINES = 5000
"""Lines kept per container instance (the newest): what a page opened late can still show."""
LINGER_SECONDS = 60.0


@dataclass
class LogBuffer:
    id: int
    replica: str
    pod: str
    container: str
    attempt: int
    init: bool
    lines: deque[str] = field(default_factory=lambda: deque(maxlen=MAX_LINES))
    total: int = 0
    """Lines ever appended (the buffer keeps the newest MAX_LINES)."""

    def append(self, line: str) -> int:
        """Add a line; its number in the instance's log, from 0."""
        self.lines.append(line)
        self.total += 1
        return self.total - 1

    def since(self, read: int) -> tuple[list[str], int]:
        """The lines after the first `read`, and how many before them were dropped unread."""
        first = self.total - len(self.lines)
        start = max(read, first)
        return list(self.lines)[start - first :], start - read

    def head(self) -> JsonDict:
        return {
            "id": self.id,
            "replica": self.replica,
            "pod": self.pod,
            "container": self.container,
            "attempt": self.attempt,
            "init": self.init,
        }


class JobLogFeed:
    def __init__(self, client: AsyncClient, job_name: str, max_lines: int = MAX_LINES) -> None:
        self.job_name = job_name
        self.max_lines = max_lines
        self.follower = JobLogFollower(client, job_name, self._emit)
        self.buffers: dict[tuple[str, str, str], LogBuffer] = {}
        self._attempts: dict[tuple[str, str, str], int] = {}
        self.series = SeriesSet()
        self.listeners: set[asyncio.Event] = set()
        self.readers = 0
        self.closer: asyncio.TimerHandle | None = None

    def consider(self, pods: list[JsonDict]) -> None:
        """Start streaming every container instance these pods show started (each only once)."""
        for pod in pods:
            restarts = _restart_counts(pod)
            for stream, previous in streams_to_start(pod, self.job_name):
                key = (stream.uid, stream.container, stream.instance)
                count = restarts.get(stream.container, 0)
                self._attempts.setdefault(key, max(0, count - 1) if previous else count)
            self.follower.consider(pod)

    def _emit(self, stream: Stream, line: str) -> None:
        key = (stream.uid, stream.container, stream.instance)
        buffer = self.buffers.get(key)
        if buffer is None:
            buffer = self.buffers[key] = LogBuffer(
                len(self.buffers),
                stream.replica,
                stream.pod,
                stream.container,
                self._attempts.get(key, 0),
                stream.init,
                deque(maxlen=self.max_lines),
            )
        number = buffer.append(line)
        self.series.add_line(buffer.replica, buffer.container, buffer.attempt, number, line)
        for wake in self.listeners:
            wake.set()

    def logs_since(self, cursors: dict[int, int]) -> list[JsonDict]:
        """New lines of each instance beyond `cursors` (updated in place)."""
        out = []
        for buffer in self.buffers.values():
            read = cursors.get(buffer.id, 0)
            if read >= buffer.total:
                continue
            lines, skipped = buffer.since(read)
            out.append({**buffer.head(), "skipped": skipped, "lines": lines})
            cursors[buffer.id] = buffer.total
        return out

    async def close(self) -> None:
        await self.follower.cancel()


class LogFeeds:
    """The feeds of the jobs pages are open on, by job key; `open`/`release` count readers."""

    def __init__(
        self,
        client_for: Callable[[str], AsyncClient],
        linger: float = LINGER_SECONDS,
        max_lines: int = MAX_LINES,
    ) -> None:
        self.client_for = client_for
        self.linger = linger
        self.max_lines = max_lines
        self.feeds: dict[str, JobLogFeed] = {}
        self._closing: set[asyncio.Task[None]] = set()

    def open(self, key: str, namespace: str, job_name: str) -> JobLogFeed:
        feed = self.feeds.get(key)
        if feed is None:
            feed = self.feeds[key] = JobLogFeed(self.client_for(namespace), job_name, self.max_lines)
        if feed.closer is not None:
            feed.closer.cancel()
            feed.closer = None
        feed.readers += 1
        return feed

    def release(self, key: str, feed: JobLogFeed) -> None:
        feed.readers -= 1
        if feed.readers <= 0 and self.feeds.get(key) is feed:
            feed.closer = asyncio.get_running_loop().call_later(self.linger, self._expire, key, feed)

    def _expire(self, key: str, feed: JobLogFeed) -> None:
        if feed.readers <= 0 and self.feeds.get(key) is feed:
            del self.feeds[key]
            task = asyncio.create_task(feed.close(), name=f"close log feed {key}")
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)

    async def close(self) -> None:
        feeds, self.feeds = list(self.feeds.values()), {}
        for feed in feeds:
            if feed.closer is not None:
                feed.closer.cancel()
            with contextlib.suppress(Exception):
                await feed.close()
        if self._closing:
            await asyncio.wait(self._closing)


def _restart_counts(pod: JsonDict) -> dict[str, int]:
    status = pod.get("status") or {}
    return {
        str(cs.get("name") or ""): int(cs.get("restartCount") or 0)
        for cs in [*(status.get("initContainerStatuses") or ()), *(status.get("containerStatuses") or ())]
    }
