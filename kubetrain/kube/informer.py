"""A list+watch mirror of one resource, calling back on every change.

Level-triggered consumers (the node agent's pod workers, the binder, the embedded controllers)
only need "this object now looks like this" and "this object is gone", with a relist when the
watch expires (410 Gone) or drops. A relist reports objects that vanished while no watch was
open as deletions, so nothing leaks. The loop is `kubetrain.kube.reflector`'s; the operator keeps
its own trimmed, indexed caches on the same loop (`kubetrain.runtime.informer`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

from kubetrain.kube.backoff import Backoff
from kubetrain.kube.client import KubeAPI
from kubetrain.kube.reflector import Reflector

log = logging.getLogger(__name__)

JsonDict = dict[str, Any]
JsonList = list[JsonDict]
Handler = Callable[[str, JsonDict], Awaitable[None] | None]


def object_key(obj: JsonDict) -> str:
    """ "<namespace>/<name>", or "<name>" for cluster-scoped objects."""
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace") or ""
    return f"{ns}/{meta.get('name')}" if ns else str(meta.get("name"))


class PathListerWatcher:
    """List and watch one collection URL (with its selectors) through a KubeAPI."""

    def __init__(self, api: KubeAPI, path: str, params: dict[str, str]) -> None:
        self.api = api
        self.path = path
        self.params = params

    def list_pages(self, page_size: int) -> AsyncGenerator[tuple[JsonList, str], None]:
        return self.api.list_pages(self.path, {**self.params, "limit": str(page_size)})

    def watch(self, resource_version: str | None, timeout_seconds: int) -> AsyncGenerator[JsonDict, None]:
        query = {**self.params, "timeoutSeconds": str(timeout_seconds)}
        if resource_version:
            query["resourceVersion"] = resource_version
        return self.api.watch(self.path, query)


class Informer:
    """Mirrors `path` (with optional selectors) into `items`; `handler(type, obj)` sees each change.

    `type` is ``ADDED``, ``MODIFIED`` or ``DELETED``; a relist calls it for every object (MODIFIED
    for those it had). `synced` is set after the first list. `optional` resources (a CRD that may
    not be installed) are retried quietly on 404, every `retry_delay` seconds at the most.
    """

    def __init__(
        self,
        api: KubeAPI,
        path: str,
        handler: Handler,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        optional: bool = False,
        retry_delay: float = 1.0,
    ) -> None:
        params: dict[str, str] = {}
        if label_selector:
            params["labelSelector"] = label_selector
        if field_selector:
            params["fieldSelector"] = field_selector
        self.path = path
        self.handler = handler
        self.items: dict[str, JsonDict] = {}
        self.reflector = _Mirror(
            self,
            PathListerWatcher(api, path, params),
            f"informer {path}",
            page_size=500,
            backoff=Backoff(base=min(0.2, retry_delay), cap=retry_delay),
            quiet_statuses=frozenset({404}) if optional else frozenset(),
        )
        self.synced = self.reflector.synced
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self.reflector.run(), name=f"informer {self.path}")

    async def stop(self) -> None:
        self.reflector.stop()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def _replaced(self, items: JsonList) -> None:
        fresh = {object_key(o): o for o in items}
        for key in list(self.items):
            if key not in fresh:
                await self._emit("DELETED", self.items.pop(key))
        for key, obj in fresh.items():
            kind = "MODIFIED" if key in self.items else "ADDED"
            self.items[key] = obj
            await self._emit(kind, obj)

    async def _changed(self, event_type: str, obj: JsonDict) -> None:
        key = object_key(obj)
        if event_type == "DELETED":
            self.items.pop(key, None)
        else:
            self.items[key] = obj
        await self._emit(event_type, obj)
        # A burst of buffered events is read without suspending: yield between them so that
        # 10,000 Service events do not hold the one event loop for their whole run.
        await asyncio.sleep(0)

    async def _emit(self, kind: str, obj: JsonDict) -> None:
        try:
            result = self.handler(kind, obj)
            if result is not None:
                await result
        except Exception:
            log.exception("handler for %s failed on %s", self.path, object_key(obj))


class _Mirror(Reflector):
    """The reflector of an Informer: what it lists and watches goes to the informer."""

    def __init__(self, informer: Informer, source: PathListerWatcher, name: str, **kwargs: Any) -> None:
        super().__init__(source, name, **kwargs)
        self.informer = informer

    def replaced(self, items: JsonList) -> Awaitable[None]:
        return self.informer._replaced(items)

    def changed(self, event_type: str, obj: JsonDict) -> Awaitable[None]:
        return self.informer._changed(event_type, obj)
