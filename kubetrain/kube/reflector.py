"""List + watch one resource, the way client-go's Reflector does, for whatever keeps the objects.

* LIST (paginated) gives a consistent snapshot and a resourceVersion; `replaced()` gets it whole
  (so a relist after a gap also shows what was deleted during the gap).
* WATCH from that resourceVersion with bookmarks, so an idle watch still advances its
  resourceVersion and a reconnect does not fall behind compaction.
* A watch that ends or breaks is resumed from the last seen resourceVersion; 410 Gone (as HTTP
  status or as an ERROR event) means that version was compacted, so we relist. Python clients
  do not do this by themselves (kubernetes-client/python-base#57, kubernetes_asyncio#327).
* Failures back off with jitter (0.8 s .. 30 s like client-go); a healthy watch resets it.

What is done with the objects is the subclass's (a failure there is a bug: it costs a relist, so
subclasses guard their own handlers): the operator's informer keeps trimmed, indexed
copies (`kubetrain.runtime.reflector`), the node agent and the embedded controllers a plain mirror
with a callback (`kubetrain.kube.informer`). Where the objects come from is a `ListerWatcher`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncGenerator, Awaitable
from typing import Any, Protocol

from kubetrain.kube.backoff import Backoff
from kubetrain.kube.errors import ApiError
from kubetrain.kube.rng import RNG

log = logging.getLogger(__name__)

JsonDict = dict[str, Any]
JsonList = list[JsonDict]

HEALTHY_WATCH_SECONDS = 5.0
"""A watch that lasted this long was healthy: the failure backoff starts again from its base."""


class ListerWatcher(Protocol):
    """The two calls a reflector makes for its resource (client-go's `cache.ListerWatcher`)."""

    def list_pages(self, page_size: int) -> AsyncGenerator[tuple[JsonList, str], None]:
        """Each page's items with the list's resourceVersion (final on the last page)."""
        ...

    def watch(self, resource_version: str | None, timeout_seconds: int) -> AsyncGenerator[JsonDict, None]:
        """Raw watch events `{"type", "object"}` from `resource_version`, bookmarks requested."""
        ...


class Reflector:
    """Keeps a subclass's copy of one resource equal to the server's view of it."""

    def __init__(
        self,
        source: ListerWatcher,
        name: str,
        *,
        page_size: int = 100,  # a decoded page of 500 pods left ~20 MB of RSS behind (fragmentation)
        watch_timeout: int = 300,
        backoff: Backoff | None = None,
        quiet_statuses: frozenset[int] = frozenset(),
    ) -> None:
        self.source = source
        self.name = name
        self.page_size = page_size
        self.watch_timeout = watch_timeout
        self.backoff = backoff or Backoff(base=0.8, cap=30.0)
        self.quiet_statuses = quiet_statuses
        """Failures expected while the resource does not exist yet (404 of an optional CRD): retried
        without a warning."""
        self.resource_version: str | None = None
        self.synced = asyncio.Event()
        self.lists = 0
        self.watches = 0
        self.errors = 0
        self._stopped = False

    # -- what a subclass does with the objects ---------------------------------------------------

    def keep(self, obj: JsonDict) -> JsonDict:
        """The object as it is kept (trimmed, say); raising leaves just this object out."""
        return obj

    def replaced(self, items: JsonList) -> Awaitable[None] | None:
        """A list landed: `items` (each through `keep`) is now the whole resource."""
        return None

    def changed(self, event_type: str, obj: JsonDict) -> Awaitable[None] | None:
        """A watch event: ADDED or MODIFIED (`obj` through `keep`), or DELETED (as the server sent it)."""
        return None

    # -- the loop --------------------------------------------------------------------------------

    @property
    def has_synced(self) -> bool:
        return self.synced.is_set()

    def stop(self) -> None:
        self._stopped = True

    async def run(self) -> None:
        """Run until `stop()` or cancellation."""
        need_list = True
        while not self._stopped:
            try:
                if need_list:
                    await self._list()
                    need_list = False
                started = time.monotonic()
                await self._watch()
                if time.monotonic() - started >= HEALTHY_WATCH_SECONDS:
                    self.backoff.reset()
                continue  # server closed the watch (timeoutSeconds): resume from our resourceVersion
            except ApiError as err:
                self.errors += 1
                if err.gone:
                    log.info("%s: resourceVersion %s is gone, relisting", self.name, self.resource_version)
                    need_list = True
                    continue
                if err.status == 0 or err.too_many_requests or err.server_error:
                    log.info("%s: watch/list failed (%s), retrying", self.name, err)
                elif err.status in self.quiet_statuses:
                    log.debug("%s: not there yet (%s), relisting", self.name, err)
                    need_list = True
                else:
                    log.warning("%s: watch/list failed (%s), relisting", self.name, err)
                    need_list = True
            except asyncio.CancelledError:
                raise
            except Exception:
                self.errors += 1
                log.exception("%s: unexpected reflector error, relisting", self.name)
                need_list = True
            if self._stopped:
                break
            await asyncio.sleep(self.backoff.next())

    async def _list(self) -> None:
        # Kept page by page: 10,000 full pods at once would cost ~200 MB at the peak.
        items: JsonList = []
        rv = ""
        pages = self.source.list_pages(self.page_size)
        async with contextlib.aclosing(pages):
            async for page, page_rv in pages:
                items.extend(kept for obj in page if (kept := self._kept(obj)) is not None)
                rv = page_rv
        self.lists += 1
        pending = self.replaced(items)
        if pending is not None:
            await pending
        self.resource_version = rv
        self.synced.set()

    async def _watch(self) -> None:
        self.watches += 1
        timeout = RNG.randint(self.watch_timeout, 2 * self.watch_timeout)
        events = self.source.watch(self.resource_version, timeout)
        async with contextlib.aclosing(events):  # release the connection even on early exit
            async for event in events:
                if self._stopped:
                    return
                pending = self._apply(event)
                if pending is not None:
                    await pending

    def _apply(self, event: JsonDict) -> Awaitable[None] | None:
        etype = event.get("type")
        obj = event.get("object") or {}
        if etype == "ERROR":
            raise ApiError.from_status(int(obj.get("code") or 500), obj)
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        if rv:
            self.resource_version = rv
        if etype == "ADDED" or etype == "MODIFIED":
            kept = self._kept(obj)
            return None if kept is None else self.changed(etype, kept)
        if etype == "DELETED":
            return self.changed(etype, obj)
        if etype != "BOOKMARK":
            log.warning("%s: unknown watch event type %r", self.name, etype)
        return None

    def _kept(self, obj: JsonDict) -> JsonDict | None:
        """`keep(obj)`, or None (logged): one object that cannot be kept must not fail every list
        and watch of its kind (issue #17)."""
        try:
            return self.keep(obj)
        except Exception:
            self.errors += 1
            meta = obj.get("metadata") if isinstance(obj, dict) else None
            name = f"{meta.get('namespace')}/{meta.get('name')}" if isinstance(meta, dict) else "?"
            log.exception("%s: cannot keep %.200s, leaving it out", self.name, name)
            return None
