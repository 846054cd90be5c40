"""A list+watch mirror of one resource, calling back on every change.

Level-triggered consumers (the pod workers, the binder) only need "this object now looks like
this" and "this object is gone", with a relist when the watch expires (410 Gone) or drops. A
relist reports objects that vanished while no watch was open as deletions, so nothing leaks.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from .kubeapi import ApiError, KubeAPI

log = logging.getLogger(__name__)

JsonDict = dict[str, Any]
Handler = Callable[[str, JsonDict], Awaitable[None] | None]


def object_key(obj: JsonDict) -> str:
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace") or ""
    return f"{ns}/{meta.get('name')}" if ns else str(meta.get("name"))


class Informer:
    """Mirrors `path` (with optional selectors) into `items`; `handler(type, obj)` sees each change.

    `type` is ``ADDED``, ``MODIFIED`` or ``DELETED``. `synced` is set after the first list, and
    `optional` resources (a CRD that may not be installed) are retried quietly on 404.
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
        self.api = api
        self.path = path
        self.handler = handler
        self.params: dict[str, str] = {}
        if label_selector:
            self.params["labelSelector"] = label_selector
        if field_selector:
            self.params["fieldSelector"] = field_selector
        self.optional = optional
        self.retry_delay = retry_delay
        self.items: dict[str, JsonDict] = {}
        self.synced = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"informer {self.path}")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def _emit(self, kind: str, obj: JsonDict) -> None:
        try:
            result = self.handler(kind, obj)
            if result is not None:
                await result
        except Exception:
            log.exception("handler for %s failed on %s", self.path, object_key(obj))

    async def _relist(self) -> str:
        items, rv = await self.api.list(self.path, self.params)
        fresh = {object_key(o): o for o in items}
        for key in list(self.items):
            if key not in fresh:
                await self._emit("DELETED", self.items.pop(key))
        for key, obj in fresh.items():
            kind = "MODIFIED" if key in self.items else "ADDED"
            self.items[key] = obj
            await self._emit(kind, obj)
        self.synced.set()
        return rv

    async def _run(self) -> None:
        rv = ""
        while True:
            try:
                if not rv:
                    rv = await self._relist()
                async for event in self.api.watch(self.path, {**self.params, "resourceVersion": rv}):
                    kind, obj = event.get("type"), event.get("object") or {}
                    if kind == "ERROR":
                        if obj.get("code") == 410:
                            rv = ""
                        break
                    rv = str((obj.get("metadata") or {}).get("resourceVersion") or rv)
                    if kind == "BOOKMARK":
                        continue
                    key = object_key(obj)
                    if kind == "DELETED":
                        self.items.pop(key, None)
                    else:
                        self.items[key] = obj
                    await self._emit(str(kind), obj)
                    # A burst of buffered events is read without suspending: yield between them so
                    # that 10,000 Service events do not hold the one event loop for their whole run.
                    await asyncio.sleep(0)
            except asyncio.CancelledError:
                raise
            except ApiError as err:
                if err.status == 410:
                    rv = ""
                    continue
                if not (self.optional and err.status == 404):
                    log.warning("watch %s failed: %s", self.path, err)
                rv = ""
                await asyncio.sleep(self.retry_delay)
            except Exception as err:  # connection dropped: resume from rv, relist if it expired
                log.debug("watch %s interrupted: %r", self.path, err)
                await asyncio.sleep(min(self.retry_delay, 0.2))
