"""An informer: a Reflector feeding a trimmed, indexed Store, plus event handlers.

Handlers run synchronously on the event loop right after the store changed, so they must be
cheap (the manager only maps the object to a job key and enqueues it).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

from kubetrain.kube.resources import ResourceType
from kubetrain.runtime.cache import Change, IndexFunc, Store
from kubetrain.runtime.reflector import Reflector
from kubetrain.runtime.transport import KubeClient
from kubetrain.runtime.trim import Trim, trim_for

Handler = Callable[[Change], None]


class Informer:
    """Watches one resource; `store` is its cache, `add_handler` subscribes to its changes."""

    def __init__(
        self,
        client: KubeClient,
        resource: ResourceType,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        trim: Trim | None = None,
        indexers: dict[str, IndexFunc] | None = None,
        watch_timeout: int = 300,
    ) -> None:
        self.resource = resource
        self.store = Store(trim or trim_for(resource.api_version, resource.kind), indexers)
        self._handlers: list[Handler] = []
        self.reflector = Reflector(
            client,
            resource,
            self.store,
            namespace=namespace,
            label_selector=label_selector,
            field_selector=field_selector,
            on_change=self._dispatch,
            watch_timeout=watch_timeout,
        )
        self._task: asyncio.Task[None] | None = None

    def add_handler(self, handler: Handler) -> None:
        self._handlers.append(handler)

    @property
    def has_synced(self) -> bool:
        return self.reflector.has_synced

    async def wait_for_sync(self, timeout: float | None = None) -> bool:
        """True once the first list landed in the store; False on timeout."""
        try:
            await asyncio.wait_for(self.reflector.synced.wait(), timeout)
        except TimeoutError:
            return False
        return True

    def start(self) -> asyncio.Task[None]:
        if self._task is None:
            self._task = asyncio.create_task(self.reflector.run(), name=f"informer {self.resource.key}")
        return self._task

    async def stop(self) -> None:
        self.reflector.stop()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def _dispatch(self, change: Change) -> None:
        for handler in self._handlers:
            handler(change)
