"""Helpers shared by the API server conformance tests."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp


class Http:
    """Raw HTTP for what typed clients hide: status codes, bodies, headers, stream framing."""

    def __init__(self, base: str, session: aiohttp.ClientSession) -> None:
        self.base = base
        self.session = session

    async def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str = "application/json",
        params: dict[str, str] | None = None,
        raw: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, Any, dict[str, str]]:
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        hdrs = {"Content-Type": content_type, **(headers or {})}
        async with self.session.request(
            method, self.base + path, data=data, params=params, headers=hdrs
        ) as resp:
            text = await resp.text()
            try:
                parsed = json.loads(text) if text else None
            except ValueError:
                parsed = text
            return resp.status, parsed, dict(resp.headers)

    async def get(self, path: str, **kw: Any) -> tuple[int, Any, dict[str, str]]:
        return await self.request("GET", path, **kw)

    async def post(self, path: str, body: Any, **kw: Any) -> tuple[int, Any, dict[str, str]]:
        return await self.request("POST", path, body, **kw)

    async def put(self, path: str, body: Any, **kw: Any) -> tuple[int, Any, dict[str, str]]:
        return await self.request("PUT", path, body, **kw)

    async def patch(
        self, path: str, body: Any, content_type: str = "application/merge-patch+json", **kw: Any
    ) -> tuple[int, Any, dict[str, str]]:
        if isinstance(body, str):
            return await self.request("PATCH", path, raw=body.encode(), content_type=content_type, **kw)
        return await self.request("PATCH", path, body, content_type=content_type, **kw)

    async def delete(self, path: str, body: Any = None, **kw: Any) -> tuple[int, Any, dict[str, str]]:
        return await self.request("DELETE", path, body, **kw)

    async def watch(self, path: str, params: dict[str, str]) -> WatchStream:
        resp = await self.session.get(self.base + path, params={"watch": "1", **params})
        return WatchStream(resp)


class WatchStream:
    """Reads newline-delimited watch events with a timeout per event."""

    def __init__(self, resp: aiohttp.ClientResponse) -> None:
        self.resp = resp

    async def next(self, timeout: float = 3.0) -> dict[str, Any] | None:
        line = await asyncio.wait_for(self.resp.content.readline(), timeout)
        if not line:
            return None
        return json.loads(line)  # type: ignore[no-any-return]

    async def take(self, n: int, timeout: float = 3.0, skip_bookmarks: bool = True) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        while len(out) < n:
            ev = await self.next(timeout)
            if ev is None:
                break
            if skip_bookmarks and ev["type"] == "BOOKMARK":
                continue
            out.append(ev)
        return out

    async def close(self) -> None:
        self.resp.close()


async def eventually(
    check: Callable[[], Awaitable[bool]], timeout: float = 3.0, interval: float = 0.01
) -> None:
    """Poll ``check`` until it holds; fail with a clear message on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        if await check():
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout:.1f}s")
        await asyncio.sleep(interval)


def pod(
    name: str,
    labels: dict[str, str] | None = None,
    containers: list[dict[str, Any]] | None = None,
    **meta: Any,
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {}, **meta},
        "spec": {"containers": containers or [{"name": "main", "image": "busybox:1.36"}]},
    }


def configmap(name: str, data: dict[str, str] | None = None, **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, **meta}, "data": data or {}}


TFJOB_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.kubetrain.io"},
    "spec": {
        "group": "example.kubetrain.io",
        "scope": "Namespaced",
        "names": {
            "plural": "widgets",
            "singular": "widget",
            "kind": "Widget",
            "shortNames": ["wd"],
            "categories": ["all"],
        },
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {
                    "status": {},
                    "scale": {
                        "specReplicasPath": ".spec.replicas",
                        "statusReplicasPath": ".status.replicas",
                        "labelSelectorPath": ".status.selector",
                    },
                },
                "additionalPrinterColumns": [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}],
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "required": ["size"],
                                "properties": {
                                    "size": {"type": "integer", "minimum": 1, "maximum": 10},
                                    "replicas": {"type": "integer", "default": 1},
                                    "mode": {"type": "string", "enum": ["fast", "slow"], "default": "fast"},
                                    "policy": {
                                        "type": "object",
                                        "default": {},
                                        "properties": {
                                            "backoff": {"type": "integer", "default": 3},
                                        },
                                    },
                                    "port": {"x-kubernetes-int-or-string": True},
                                    "template": {
                                        "type": "object",
                                        "x-kubernetes-preserve-unknown-fields": True,
                                    },
                                    "embedded": {
                                        "type": "object",
                                        "x-kubernetes-embedded-resource": True,
                                        "properties": {"spec": {"type": "object"}},
                                    },
                                    "immutableName": {
                                        "type": "string",
                                        "x-kubernetes-validations": [
                                            {
                                                "rule": "self == oldSelf",
                                                "message": "immutableName is immutable",
                                            }
                                        ],
                                    },
                                },
                            },
                            "status": {
                                "type": "object",
                                "properties": {
                                    "replicas": {"type": "integer"},
                                    "selector": {"type": "string"},
                                    "phase": {"type": "string"},
                                },
                            },
                        },
                    }
                },
            }
        ],
    },
}


async def install_widget_crd(http: Http) -> dict[str, Any]:
    status, body, _ = await http.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", TFJOB_CRD)
    assert status == 201, body
    return body  # type: ignore[no-any-return]


def widget(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "example.kubetrain.io/v1",
        "kind": "Widget",
        "metadata": {"name": name},
        "spec": {"size": 2, **spec},
    }


WIDGETS = "/apis/example.kubetrain.io/v1/namespaces/default/widgets"
PODS = "/api/v1/namespaces/default/pods"
