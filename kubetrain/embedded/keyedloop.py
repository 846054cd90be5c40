"""The keyed reconcile loop the embedded plane's controllers share (batch Job, StatefulSet, JobSet).

Why one module: each of the three controllers carried its own copy of the same watch, work-queue
and loop code, and the copies had started to drift (the StatefulSet one dropped every
requeue-after of a key once a first one had fired). This is that code once, with the copies'
behaviour kept:

* watches: informers whose events map to keys (`watch`, or `add` for any informer-like source;
  `controller_keys` maps a child to its controller's key); one of them is the primary, whose
  cache holds the objects the keys name;
* a deduplicating queue: a key enqueued many times before the loop takes it is reconciled once;
* one task takes the whole queue, reconciles its keys in sorted order, one at a time, so no key
  is ever reconciled twice at once; a key enqueued meanwhile is reconciled again afterwards; a key
  whose object is no longer in the primary cache is skipped;
* errors: an `ApiError` is logged as a warning (unless 404 or 409) and the key retried after
  `retry_delay`; any other exception is logged with its traceback and retried after twice that;
* requeue-after (`enqueue_after`): by default a wake-up already pending that comes no later than
  the one asked for is kept instead (one timer per key); with ``coalesce=False`` every wake-up
  asked for fires (the Job controller's back-off, deadline and TTL timers are independent);
* background tasks (`spawn`: the controllers' event posts) are kept until done;
* `stop`: cancels the loop, then every timer, stops the informers, then awaits the background
  tasks.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping
from typing import Any, Protocol, TypeVar

from kubetrain.kube.client import KubeAPI
from kubetrain.kube.errors import ApiError
from kubetrain.kube.informer import Informer

JsonDict = dict[str, Any]
KeyMap = Callable[[str, JsonDict], Iterable[str]]
"""(event type, object) -> the keys to reconcile; it may also forget keys on ``DELETED``."""


def controller_keys(obj: JsonDict, controls: Callable[[JsonDict], bool]) -> list[str]:
    """The ``namespace/name`` keys of the controller ownerReferences of `obj` that `controls`."""
    meta = obj.get("metadata") or {}
    return [
        f"{meta.get('namespace') or 'default'}/{ref.get('name')}"
        for ref in meta.get("ownerReferences") or []
        if ref.get("controller") and controls(ref)
    ]


class Source(Protocol):
    """What the loop needs of an informer."""

    @property
    def items(self) -> Mapping[str, JsonDict]: ...

    @property
    def synced(self) -> asyncio.Event: ...

    def start(self) -> None: ...

    async def stop(self) -> None: ...


S = TypeVar("S", bound=Source)


class KeyedLoop:
    """``watch``/``add`` the sources, ``await start()``, ``enqueue`` keys, ``await stop()``.

    `name` names the loop's task, `what` starts its log messages ("job ns/x: sync failed"),
    `reconcile` is called with the primary object of each key taken from the queue.
    """

    def __init__(
        self,
        name: str,
        what: str,
        reconcile: Callable[[JsonDict], Awaitable[None]],
        *,
        log: logging.Logger,
        retry_delay: float = 0.5,
        coalesce: bool = True,
    ) -> None:
        self.name = name
        self.what = what
        self.reconcile = reconcile
        self.log = log
        self.retry_delay = retry_delay
        self.coalesce = coalesce
        self._sources: list[Source] = []
        self._wait: list[Source] = []
        self._primary: Source | None = None
        self._dirty: set[str] = set()
        self._wake = asyncio.Event()
        self._timers: dict[str, list[asyncio.TimerHandle]] = {}
        self._task: asyncio.Task[None] | None = None
        self._background: set[asyncio.Task[Any]] = set()

    # -- watches -------------------------------------------------------------------------------------

    def handler(self, keys: KeyMap) -> Callable[[str, JsonDict], None]:
        """An informer handler that enqueues the keys `keys` maps each event to."""

        def changed(kind: str, obj: JsonDict) -> None:
            for key in keys(kind, obj):
                self.enqueue(key)

        return changed

    def watch(
        self,
        api: KubeAPI,
        path: str,
        keys: KeyMap,
        *,
        primary: bool = False,
        wait: bool = True,
        optional: bool = False,
    ) -> Informer:
        """An informer of `path` whose events enqueue `keys(event, obj)` (see `add`)."""
        informer = Informer(api, path, self.handler(keys), optional=optional)
        return self.add(informer, primary=primary, wait=wait)

    def add(self, source: S, *, primary: bool = False, wait: bool = True) -> S:
        """Start and stop `source` with the loop; `start` waits for its first list if `wait`;
        the `primary` source's cache is where the loop looks each key up."""
        self._sources.append(source)
        if wait:
            self._wait.append(source)
        if primary:
            self._primary = source
        return source

    # -- lifecycle -----------------------------------------------------------------------------------

    async def start(self) -> None:
        if self._primary is None:
            raise ValueError(f"{self.name}: no primary source")
        for source in self._sources:
            source.start()
        await asyncio.gather(*(source.synced.wait() for source in self._wait))
        self._task = asyncio.create_task(self._loop(), name=self.name)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        for timers in self._timers.values():
            for timer in timers:
                timer.cancel()
        for source in self._sources:
            await source.stop()
        await asyncio.gather(*self._background, return_exceptions=True)

    def spawn(self, work: Coroutine[Any, Any, Any]) -> None:
        """Run `work` in the background (an event post), kept referenced until done; `stop` awaits it."""
        task = asyncio.create_task(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # -- queue ---------------------------------------------------------------------------------------

    def enqueue(self, key: str) -> None:
        self._dirty.add(key)
        self._wake.set()

    def enqueue_after(self, key: str, delay: float) -> None:
        """Enqueue `key` in `delay` seconds (coalescing: unless a wake-up still pending comes sooner)."""
        loop = asyncio.get_running_loop()
        now = loop.time()
        pending = [t for t in self._timers.get(key, ()) if not t.cancelled() and t.when() > now]
        if self.coalesce:
            if pending and pending[0].when() <= now + delay:
                self._timers[key] = pending  # an earlier wake-up is still pending
                return
            for timer in pending:
                timer.cancel()
            pending = []
        pending.append(loop.call_later(max(delay, 0.0), self.enqueue, key))
        self._timers[key] = pending

    def forget(self, key: str) -> None:
        """Cancel the wake-ups pending for `key` (its object is gone)."""
        for timer in self._timers.pop(key, ()):
            timer.cancel()

    # -- the loop ------------------------------------------------------------------------------------

    async def _loop(self) -> None:
        primary = self._primary
        assert primary is not None
        warning, failure = f"{self.what} %s: %s", f"{self.what} %s: sync failed"
        while True:
            await self._wake.wait()
            self._wake.clear()
            keys, self._dirty = self._dirty, set()
            for key in sorted(keys):
                obj = primary.items.get(key)
                if obj is None:
                    continue
                try:
                    await self.reconcile(obj)
                except asyncio.CancelledError:
                    raise
                except ApiError as err:
                    if err.status not in (404, 409):
                        self.log.warning(warning, key, err)
                    self.enqueue_after(key, self.retry_delay)
                except Exception:
                    self.log.exception(failure, key)
                    self.enqueue_after(key, 2 * self.retry_delay)
