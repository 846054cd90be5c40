"""The dashboard's URLs: pages, static assets, JSON and the live streams. All GET.

Pages (one HTML shell; the front end draws the page its path names):
``/`` jobs, ``/jobs/<namespace>/<kind>/<name>`` a job, ``/history`` past jobs, ``/history/<uid>``.

JSON: ``/api/info``; ``/api/jobs`` and ``/api/jobs/<ns>/<kind>/<name>`` (the live state);
``/api/history[?namespace=&kind=&name=]`` and ``/api/history/<uid>`` (the history store).

Streams (Server-Sent Events): ``/api/jobs/stream`` (a ``snapshot``, then ``jobs`` batches of
upserts and removals) and ``/api/jobs/<ns>/<kind>/<name>/stream`` (``job``, ``pods``, ``events``,
``logs``, ``series``, ``usage``; ``gone`` when the job is deleted).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import orjson
from aiohttp import web

from kubetrain.dashboard.assets import Assets
from kubetrain.dashboard.history import HistoryReader
from kubetrain.dashboard.livestate import JOBS, LiveState, job_topic
from kubetrain.dashboard.logfeed import JobLogFeed, LogFeeds
from kubetrain.dashboard.sse import PING_SECONDS, EventStream
from kubetrain.dashboard.usage import UsageSource
from kubetrain.dashboard.views import (
    JobKey,
    event_rows,
    job_detail,
    job_summary,
    key_text,
    merged_conditions,
    pod_rows,
)

JsonDict = dict[str, Any]

COALESCE_SECONDS = 0.2
"""A stream waits this long after a change before it sends: a burst becomes one message."""
USAGE_SECONDS = 2.0


def _json(data: Any, status: int = 200) -> web.Response:
    return web.Response(body=orjson.dumps(data), status=status, content_type="application/json")


def _not_found(message: str) -> web.Response:
    return _json({"error": message}, 404)


class Routes:
    def __init__(
        self,
        assets: Assets,
        state: LiveState | None,
        feeds: LogFeeds | None,
        history: HistoryReader | None,
        usage: UsageSource | None,
        title: str,
    ) -> None:
        self.assets = assets
        self.state = state
        self.feeds = feeds
        self.history = history
        self.usage = usage
        self.title = title
        self.streams: set[asyncio.Task[Any]] = set()
        """The handler tasks of open streams: `stop` ends them."""

    def register(self, app: web.Application) -> None:
        add = app.router.add_get
        for page in ("/", "/jobs/{namespace}/{kind}/{name}", "/history", "/history/{uid}"):
            add(page, self.page)
        add("/static/{file}", self.static)
        add("/api/info", self.info)
        add("/api/jobs", self.jobs)
        add("/api/jobs/stream", self.jobs_stream)
        add("/api/jobs/{namespace}/{kind}/{name}", self.job)
        add("/api/jobs/{namespace}/{kind}/{name}/stream", self.job_stream)
        add("/api/history", self.history_jobs)
        add("/api/history/{uid}", self.history_job)

    # -- pages and assets ------------------------------------------------------------------------

    async def page(self, request: web.Request) -> web.Response:
        return self.assets.response("index.html")

    async def static(self, request: web.Request) -> web.Response:
        name = request.match_info["file"]
        if name not in self.assets or name == "index.html":
            raise web.HTTPNotFound(text="no such asset\n")
        return self.assets.response(name)

    async def info(self, request: web.Request) -> web.Response:
        return _json(
            {
                "title": self.title,
                "live": self.state is not None,
                "history": self.history is not None and self.history.available,
                "usage": self.usage is not None,
            }
        )

    # -- live state ------------------------------------------------------------------------------

    def _summaries(self) -> list[JsonDict]:
        assert self.state is not None
        state = self.state
        return [job_summary(job, state.info(key[1])) for key, job in sorted(state.jobs.items())]

    async def jobs(self, request: web.Request) -> web.Response:
        if self.state is None:
            return _not_found("this dashboard shows no live cluster")
        await self.state.synced.wait()
        return _json({"jobs": self._summaries()})

    @staticmethod
    def _key(request: web.Request) -> JobKey:
        info = request.match_info
        return (info["namespace"], info["kind"], info["name"])

    async def job(self, request: web.Request) -> web.Response:
        if self.state is None:
            return _not_found("this dashboard shows no live cluster")
        await self.state.synced.wait()
        key = self._key(request)
        job = self.state.job(key)
        if job is None:
            return _not_found(f"no job {key_text(key)}")
        return _json(
            {
                "job": await live_detail(self.state, self.history, key, job),
                "pods": pod_rows(self.state.pods_of(key), key[2]),
                "events": event_rows(self.state.events_of(key)),
            }
        )

    def _track(self) -> asyncio.Task[Any] | None:
        task = asyncio.current_task()
        if task is not None:
            self.streams.add(task)
        return task

    async def jobs_stream(self, request: web.Request) -> web.StreamResponse:
        if self.state is None:
            return _not_found("this dashboard shows no live cluster")
        state = self.state
        task = self._track()
        stream = await EventStream.open(request)
        try:
            with state.changes.subscribe(JOBS) as sub:
                await state.synced.wait()
                sub.take()
                await stream.send("snapshot", {"jobs": self._summaries(), "now": time.time()})
                while True:
                    if not await _wait(sub.wake, PING_SECONDS):
                        await stream.ping()
                        continue
                    await asyncio.sleep(COALESCE_SECONDS)
                    upsert, remove = [], []
                    for text in sorted(sub.take()):
                        namespace, kind, name = text.split("/", 2)
                        job = state.job((namespace, kind, name))
                        if job is None:
                            remove.append(text)
                        else:
                            upsert.append(job_summary(job, state.info(kind)))
                    await stream.send("jobs", {"upsert": upsert, "remove": remove})
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            if task is not None:
                self.streams.discard(task)
        return stream.response

    async def job_stream(self, request: web.Request) -> web.StreamResponse:
        if self.state is None or self.feeds is None:
            return _not_found("this dashboard shows no live cluster")
        task = self._track()
        stream = await EventStream.open(request)
        key = self._key(request)
        try:
            await JobStream(self, key, stream).run()
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            if task is not None:
                self.streams.discard(task)
        return stream.response

    # -- history ---------------------------------------------------------------------------------

    async def history_jobs(self, request: web.Request) -> web.Response:
        if self.history is None:
            return _json({"jobs": [], "available": False})
        rows = await self.history.jobs()
        for field in ("namespace", "kind", "name"):
            wanted = request.query.get(field)
            if wanted:
                rows = [r for r in rows if r[field] == wanted]
        return _json({"jobs": rows, "available": self.history.available})

    async def history_job(self, request: web.Request) -> web.Response:
        uid = request.match_info["uid"]
        found = await self.history.job(uid) if self.history is not None else None
        if found is None:
            return _not_found(f"no job of uid {uid} in the history")
        return _json(found)


class JobStream:
    """One page's stream of one job: what changed since the last message, until the page goes."""

    def __init__(self, routes: Routes, key: JobKey, stream: EventStream) -> None:
        assert routes.state is not None and routes.feeds is not None
        self.state = routes.state
        self.feeds = routes.feeds
        self.history = routes.history
        self.usage = routes.usage
        self.key = key
        self.text = key_text(key)
        self.stream = stream
        self.feed: JobLogFeed | None = None
        self.wake: asyncio.Event | None = None
        self.log_cursors: dict[int, int] = {}
        self.series_cursors: dict[int, tuple[int, int]] = {}
        self.next_usage = 0.0

    async def run(self) -> None:
        with self.state.changes.subscribe(job_topic(self.text)) as sub:
            try:
                await self.state.synced.wait()
                dirty = {"job", "pods", "events"}
                gone_sent = False
                while True:
                    job = self.state.job(self.key)
                    if job is None:
                        self._release()
                        if not gone_sent:
                            await self._gone()
                            gone_sent = True
                    else:
                        gone_sent = False
                        await self._send(job, dirty, sub.wake)
                    timeout = USAGE_SECONDS if self.usage is not None and job is not None else PING_SECONDS
                    if not await _wait(sub.wake, timeout):
                        if self.usage is None or job is None:
                            await self.stream.ping()
                        dirty = set()
                        continue
                    await asyncio.sleep(COALESCE_SECONDS)
                    dirty = sub.take()
            finally:
                self._release()

    async def _send(self, job: JsonDict, dirty: set[str], wake: asyncio.Event) -> None:
        namespace, _, name = self.key
        if self.feed is None:
            self.feed = self.feeds.open(self.text, namespace, name)
            self.feed.listeners.add(wake)
            self.wake = wake
        if "job" in dirty:
            await self.stream.send("job", await live_detail(self.state, self.history, self.key, job))
        pods = self.state.pods_of(self.key)
        if "pods" in dirty:
            await self.stream.send("pods", pod_rows(pods, name))
            self.feed.consider(pods)
        if "events" in dirty:
            await self.stream.send("events", event_rows(self.state.events_of(self.key)))
        logs = self.feed.logs_since(self.log_cursors)
        if logs:
            await self.stream.send("logs", logs)
        series = self.feed.series.since(self.series_cursors)
        if series:
            await self.stream.send("series", series)
        if self.usage is not None and time.monotonic() >= self.next_usage:
            self.next_usage = time.monotonic() + USAGE_SECONDS
            running = [p for p in pods if (p.get("status") or {}).get("phase") == "Running"]
            await self.stream.send("usage", await self.usage.usage(running) if running else {})

    async def _gone(self) -> None:
        namespace, kind, name = self.key
        uid = await self.history.find(namespace, kind, name) if self.history is not None else None
        await self.stream.send("gone", {"key": self.text, "history": uid})

    def _release(self) -> None:
        if self.feed is not None:
            if self.wake is not None:
                self.feed.listeners.discard(self.wake)
            self.feeds.release(self.text, self.feed)
            self.feed = None


async def live_detail(
    state: LiveState, history: HistoryReader | None, key: JobKey, job: JsonDict
) -> JsonDict:
    """The job page's header and timeline: with the transitions the history recorded, when it has
    them (the live status keeps only the latest of each condition type)."""
    detail = job_detail(job, state.info(key[1]))
    if history is not None and detail["uid"]:
        recorded = await history.conditions(detail["uid"])
        detail["conditions"] = merged_conditions(detail["conditions"], recorded)
    return detail


async def _wait(event: asyncio.Event, timeout: float) -> bool:
    """Whether `event` was set within `timeout` seconds."""
    if event.is_set():
        return True
    try:
        await asyncio.wait_for(event.wait(), timeout)
    except TimeoutError:
        return False
    return True
