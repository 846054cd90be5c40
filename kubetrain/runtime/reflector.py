"""The operator's reflector: one resource listed and watched into a trimmed, indexed Store.

The list+watch loop (bookmarks, resume, relist on 410 Gone, backoff) is `kubetrain.kube.reflector`;
what is operator-specific is here: the objects go through the store's trim before they are kept,
a relist is reported as the difference it made, and every change goes to `on_change`.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Callable
from typing import Any

from kubetrain.kube import reflector
from kubetrain.kube.backoff import Backoff
from kubetrain.kube.resources import ResourceType
from kubetrain.runtime.cache import Change, Store
from kubetrain.runtime.transport import KubeClient

log = logging.getLogger(__name__)

JsonDict = dict[str, Any]
JsonList = list[JsonDict]
ChangeHandler = Callable[[Change], None]


class ResourceListerWatcher:
    """List and watch calls for one resource (optionally one namespace, filtered by selectors)."""

    def __init__(
        self,
        client: KubeClient,
        resource: ResourceType,
        namespace: str | None,
        label_selector: str | None,
        field_selector: str | None,
    ) -> None:
        self.client = client
        self.resource = resource
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector

    def list_pages(self, page_size: int) -> AsyncGenerator[tuple[JsonList, str], None]:
        return self.client.list_pages(
            self.resource.api_version,
            self.resource.plural,
            self.namespace,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            limit=page_size,
        )

    def watch(self, resource_version: str | None, timeout_seconds: int) -> AsyncGenerator[JsonDict, None]:
        return self.client.watch(
            self.resource.api_version,
            self.resource.plural,
            self.namespace,
            resource_version=resource_version,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            timeout_seconds=timeout_seconds,
            allow_bookmarks=True,
        )


class Reflector(reflector.Reflector):
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
        page_size: int = 100,
        watch_timeout: int = 300,
        backoff: Backoff | None = None,
    ) -> None:
        scope = namespace or "*"
        super().__init__(
            ResourceListerWatcher(client, resource, namespace, label_selector, field_selector),
            f"reflector {resource.key} ns={scope} sel={label_selector or ''}",
            page_size=page_size,
            watch_timeout=watch_timeout,
            backoff=backoff,
        )
        self.client = client
        self.resource = resource
        self.store = store
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.on_change = on_change

    def keep(self, obj: JsonDict) -> JsonDict:
        return self.store.trimmed(obj)

    def replaced(self, items: JsonList) -> None:
        for change in self.store.replace(items, trimmed=True):
            self._emit(change)

    def changed(self, event_type: str, obj: JsonDict) -> None:
        if event_type == "DELETED":
            change = self.store.remove(obj)
        else:
            change = self.store.upsert(obj, trimmed=True)
        if change is not None:
            self._emit(change)

    def _emit(self, change: Change) -> None:
        if self.on_change is None:
            return
        try:
            self.on_change(change)
        except Exception:
            log.exception("%s: event handler failed", self.name)
