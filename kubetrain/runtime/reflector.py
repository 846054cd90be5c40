"""List + watch one resource into a Store, the way client-go's Reflector does.

* LIST (paginated) gives a consistent snapshot and a resourceVersion; the store is replaced and
  the difference is reported as ADDED/MODIFIED/DELETED changes (so a relist after a gap also
  reports objects deleted during the gap).
* WATCH from that resourceVersion with bookmarks, so an idle watch still advances its
  resourceVersion and a reconnect does not fall behind compaction.
* A watch that ends or breaks is resumed from the last seen resourceVersion; 410 Gone (as HTTP
  status or as an ERROR event) means that version was compacted, so we relist. Python clients
  do not do this by themselves (kubernetes-client/python-base#57, kubernetes_asyncio#327).
* Failures back off with jitter (0.8 s .. 30 s like client-go); a healthy watch resets it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Callable
from typing import Any

from kubetrain.kube.resources import ResourceType
from kubetrain.runtime.backoff import Backoff
from kubetrain.runtime.cache import Change, Store
from kubetrain.runtime.errors import ApiError
from kubetrain.runtime.transport import KubeClient

log = logging.getLogger(__name__)

JsonDict = dict[str, Any]
ChangeHandler = Callable[[Change], None]

_HEALTHY_WATCH_SECONDS = 5.0


class Reflector:
    """Keeps `store` equal to the server's view of one resource (optionally filtered)."""

    def __init__(
        self,
        client: KubeClient,
        resource: ResourceType,
        store: Store,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        on_change: ChangeHandler | None = None,
        page_size: int = 100,  # a decoded page of 500 pods left ~20 MB of RSS behind (fragmentation)
        watch_timeout: int = 300,
        backoff: Backoff | None = None,
    ) -> None:
        self.client = client
        self.resource = resource
        self.store = store
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.on_change = on_change
        self.page_size = page_size
        self.watch_timeout = watch_timeout
        self.backoff = backoff or Backoff(base=0.8, cap=30.0)
        self.resource_version: str | None = None
        self.synced = asyncio.Event()
        self.lists = 0
        self.watches = 0
        self.errors = 0
        self._stopped = False

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
                if time.monotonic() - started >= _HEALTHY_WATCH_SECONDS:
                    self.backoff.reset()
                continue  # server closed the watch (timeoutSeconds): resume from our resourceVersion
            except ApiError as err:
                self.errors += 1
                if err.gone:
                    log.info("%s: resourceVersion %s is gone, relisting", self._name, self.resource_version)
                    need_list = True
                    continue
                if err.status == 0 or err.too_many_requests or err.server_error:
                    log.info("%s: watch/list failed (%s), retrying", self._name, err)
                else:
                    log.warning("%s: watch/list failed (%s), relisting", self._name, err)
                    need_list = True
            except asyncio.CancelledError:
                raise
            except Exception:
                self.errors += 1
                log.exception("%s: unexpected reflector error, relisting", self._name)
                need_list = True
            if self._stopped:
                break
            await asyncio.sleep(self.backoff.next())

    @property
    def _name(self) -> str:
        scope = self.namespace or "*"
        return f"reflector {self.resource.key} ns={scope} sel={self.label_selector or ''}"

    async def _list(self) -> None:
        # Trimmed page by page: 10,000 full pods at once would cost ~200 MB at the peak.
        items: list[JsonDict] = []
        rv = ""
        pages = self.client.list_pages(
            self.resource.api_version,
            self.resource.plural,
            self.namespace,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            limit=self.page_size,
        )
        async with contextlib.aclosing(pages):
            async for page, page_rv in pages:
                items.extend(kept for obj in page if (kept := self._trimmed(obj)) is not None)
                rv = page_rv
        self.lists += 1
        for change in self.store.replace(items, trimmed=True):
            self._emit(change)
        self.resource_version = rv
        self.synced.set()

    async def _watch(self) -> None:
        self.watches += 1
        timeout = random.randint(self.watch_timeout, 2 * self.watch_timeout)
        events = self.client.watch(
            self.resource.api_version,
            self.resource.plural,
            self.namespace,
            resource_version=self.resource_version,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            timeout_seconds=timeout,
            allow_bookmarks=True,
        )
        async with contextlib.aclosing(events):  # release the connection even on early exit
            async for event in events:
                if self._stopped:
                    return
                self._apply(event)

    def _apply(self, event: JsonDict) -> None:
        etype = event.get("type")
        obj = event.get("object") or {}
        if etype == "ERROR":
            raise ApiError.from_status(int(obj.get("code") or 500), obj)
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        if etype == "ADDED" or etype == "MODIFIED":
            kept = self._trimmed(obj)
            change = None if kept is None else self.store.upsert(kept, trimmed=True)
        elif etype == "DELETED":
            change = self.store.remove(obj)
        elif etype == "BOOKMARK":
            change = None
        else:
            log.warning("%s: unknown watch event type %r", self._name, etype)
            return
        if rv:
            self.resource_version = rv
        if change is not None:
            self._emit(change)

    def _trimmed(self, obj: JsonDict) -> JsonDict | None:
        """The object as the store keeps it, or None (logged) if it cannot be: one object the
        trim cannot handle must not fail every list and watch of its kind (issue #17)."""
        try:
            return self.store.trimmed(obj)
        except Exception:
            self.errors += 1
            meta = obj.get("metadata") if isinstance(obj, dict) else None
            name = f"{meta.get('namespace')}/{meta.get('name')}" if isinstance(meta, dict) else "?"
            log.exception("%s: cannot cache %.200s, leaving it out", self._name, name)
            return None

    def _emit(self, change: Change) -> None:
        if self.on_change is None:
            return
        try:
            self.on_change(change)
        except Exception:
            log.exception("%s: event handler failed", self._name)
