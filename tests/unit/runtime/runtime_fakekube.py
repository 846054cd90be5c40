"""An in-memory stand-in for KubeClient that records every call and can inject failures.

Used by unit tests of the reflector and the manager ("given this cache, expect these API calls").
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import uuid
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

from kubetrain.kube.errors import ApiError
from kubetrain.kube.labels import matches
from kubetrain.kube.resources import ResourceType
from kubetrain.runtime.resources import default_registry

JsonDict = dict[str, Any]
_END = object()


def _status(code: int, reason: str, message: str = "") -> ApiError:
    return ApiError(code, reason, message, {"kind": "Status", "code": code, "reason": reason})


class FakeKube:
    def __init__(self) -> None:
        self.registry = default_registry()
        self.objects: dict[str, dict[str, JsonDict]] = {}
        self._rv = itertools.count(100)
        self.calls: list[tuple[Any, ...]] = []
        self.faults: dict[str, list[ApiError]] = {}
        self.watchers: list[tuple[ResourceType, str | None, str | None, asyncio.Queue[Any]]] = []
        self.list_rv_override: str | None = None

    # -- helpers for tests -------------------------------------------------------------------

    def resource(self, api_version: str, kind: str) -> ResourceType:
        return self.registry.lookup(api_version, kind)

    def fail_next(self, verb: str, *errors: ApiError) -> None:
        self.faults.setdefault(verb, []).extend(errors)

    def _fault(self, verb: str) -> None:
        pending = self.faults.get(verb)
        if pending:
            raise pending.pop(0)

    def _bucket(self, rt: ResourceType) -> dict[str, JsonDict]:
        return self.objects.setdefault(rt.key, {})

    def put(self, obj: JsonDict, notify: bool = True) -> JsonDict:
        """Store (create or replace) directly, as another client would."""
        obj = copy.deepcopy(obj)
        rt = self.resource(obj["apiVersion"], obj["kind"])
        meta = obj.setdefault("metadata", {})
        meta.setdefault("uid", str(uuid.uuid4()))
        meta.setdefault("creationTimestamp", "2024-01-01T00:00:00Z")
        meta["resourceVersion"] = str(next(self._rv))
        key = f"{meta.get('namespace', '')}/{meta['name']}"
        etype = "MODIFIED" if key in self._bucket(rt) else "ADDED"
        self._bucket(rt)[key] = obj
        if notify:
            self.emit(rt, etype, obj)
        return copy.deepcopy(obj)

    def remove(self, api_version: str, kind: str, namespace: str, name: str) -> None:
        rt = self.resource(api_version, kind)
        obj = self._bucket(rt).pop(f"{namespace}/{name}")
        obj["metadata"]["resourceVersion"] = str(next(self._rv))
        self.emit(rt, "DELETED", obj)

    def emit(self, rt: ResourceType, etype: str, obj: JsonDict) -> None:
        meta = obj.get("metadata", {})
        for wrt, ns, sel, queue in self.watchers:
            if wrt.key != rt.key or (ns and meta.get("namespace") != ns):
                continue
            if etype in ("ADDED", "MODIFIED", "DELETED") and not matches(sel, meta.get("labels")):
                continue
            queue.put_nowait({"type": etype, "object": copy.deepcopy(obj)})

    def send_raw(self, kind_key: str, event: Any) -> None:
        for wrt, _, _, queue in self.watchers:
            if wrt.key == kind_key:
                queue.put_nowait(event)

    def close_watches(self) -> None:
        for *_, queue in self.watchers:
            queue.put_nowait(_END)

    def verbs(self) -> list[str]:
        return [c[0] for c in self.calls]

    # -- the KubeClient surface --------------------------------------------------------------

    async def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int = 500,
        resource_version: str | None = None,
    ) -> tuple[list[JsonDict], str]:
        rt = self.resource(api_version, kind)
        self.calls.append(("list", rt.key, namespace, label_selector))
        self._fault("list")
        items = [
            copy.deepcopy(o)
            for o in self._bucket(rt).values()
            if (not namespace or o["metadata"].get("namespace") == namespace)
            and matches(label_selector, o["metadata"].get("labels"))
        ]
        return items, self.list_rv_override or str(next(self._rv))

    async def list_pages(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int = 500,
        resource_version: str | None = None,
    ) -> AsyncIterator[tuple[list[JsonDict], str]]:
        """The whole list as pages of `limit` items (the last page carries the rv, as served)."""
        items, rv = await self.list(api_version, kind, namespace, label_selector=label_selector)
        step = limit or len(items) or 1
        for start in range(0, max(len(items), 1), step):
            yield items[start : start + step], rv

    async def watch(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        *,
        resource_version: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        timeout_seconds: int | None = None,
        allow_bookmarks: bool = True,
        read_timeout: float | None = None,
    ) -> AsyncGenerator[JsonDict, None]:
        rt = self.resource(api_version, kind)
        self.calls.append(("watch", rt.key, namespace, resource_version, allow_bookmarks))
        self._fault("watch")
        queue: asyncio.Queue[Any] = asyncio.Queue()
        entry = (rt, namespace, label_selector, queue)
        self.watchers.append(entry)
        try:
            while True:
                item = await queue.get()
                if item is _END:
                    return
                if isinstance(item, ApiError):
                    raise item
                yield item
        finally:
            self.watchers.remove(entry)

    async def get(self, api_version: str, kind: str, namespace: str | None, name: str) -> JsonDict:
        rt = self.resource(api_version, kind)
        self.calls.append(("get", rt.key, namespace, name))
        self._fault("get")
        obj = self._bucket(rt).get(f"{namespace or ''}/{name}")
        if obj is None:
            raise _status(404, "NotFound")
        return copy.deepcopy(obj)

    async def create(
        self, obj: JsonDict, *, namespace: str | None = None, read_back: bool = True
    ) -> JsonDict:
        obj = copy.deepcopy(obj)
        obj["metadata"].setdefault("namespace", namespace)
        rt = self.resource(obj["apiVersion"], obj["kind"])
        self.calls.append(("create", rt.key, obj["metadata"]["namespace"], obj["metadata"]["name"]))
        self._fault("create")
        if f"{obj['metadata']['namespace']}/{obj['metadata']['name']}" in self._bucket(rt):
            raise _status(409, "AlreadyExists")
        stored = self.put(obj)
        return stored if read_back else {}

    async def delete(
        self,
        api_version: str,
        kind: str,
        namespace: str | None,
        name: str,
        *,
        uid: str | None = None,
        resource_version: str | None = None,
        propagation_policy: str | None = None,
        grace_period_seconds: int | None = None,
    ) -> JsonDict:
        rt = self.resource(api_version, kind)
        self.calls.append(("delete", rt.key, namespace, name, uid, propagation_policy))
        self._fault("delete")
        obj = self._bucket(rt).get(f"{namespace or ''}/{name}")
        if obj is None:
            raise _status(404, "NotFound")
        if uid and obj["metadata"]["uid"] != uid:
            raise _status(409, "Conflict", "Precondition failed: UID")
        self.remove(api_version, kind, namespace or "", name)
        return {"kind": "Status", "status": "Success"}

    async def merge_patch(
        self, api_version: str, kind: str, namespace: str | None, name: str, patch: JsonDict, **_: Any
    ) -> JsonDict:
        rt = self.resource(api_version, kind)
        self.calls.append(("patch", rt.key, namespace, name, patch))
        self._fault("patch")
        obj = self._bucket(rt).get(f"{namespace or ''}/{name}")
        if obj is None:
            raise _status(404, "NotFound")
        merged = {**obj, **{k: v for k, v in patch.items() if k != "metadata"}}
        return self.put(merged)

    async def replace_status(self, obj: JsonDict) -> JsonDict:
        rt = self.resource(obj["apiVersion"], obj["kind"])
        meta = obj["metadata"]
        self.calls.append(("status", rt.key, meta.get("namespace"), meta["name"], obj.get("status")))
        self._fault("status")
        current = self._bucket(rt).get(f"{meta.get('namespace', '')}/{meta['name']}")
        if current is None:
            raise _status(404, "NotFound")
        if meta.get("resourceVersion") != current["metadata"]["resourceVersion"]:
            raise _status(409, "Conflict", "the object has been modified")
        return self.put({**current, "status": obj.get("status")})
