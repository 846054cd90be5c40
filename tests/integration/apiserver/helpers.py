"""Helpers shared by the API server conformance tests."""

from __future__ import annotations

import asyncio
import copy
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import aiohttp

Cleanup = Callable[[str], None]
"""``cleanup(PATH)``: DELETE PATH after the test (cluster-scoped objects)."""
Unique = Callable[..., str]
"""``unique("n")`` -> a cluster-scoped name of this test's own; ``cleanup=PATH`` deletes it after."""


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


# Objects the controllers of a real cluster create in every namespace (root-ca-cert-publisher):
# the tests ignore them instead of assuming an empty namespace.
NOISE = frozenset({"kube-root-ca.crt"})


def is_noise(obj: dict[str, Any]) -> bool:
    return (obj.get("metadata") or {}).get("name") in NOISE


def names(items: list[dict[str, Any]]) -> list[str]:
    """The names of listed objects, without the cluster's own per-namespace objects."""
    return [o["metadata"]["name"] for o in items if not is_noise(o)]


class WatchStream:
    """Reads newline-delimited watch events with a timeout per event."""

    def __init__(self, resp: aiohttp.ClientResponse) -> None:
        self.resp = resp

    async def next(self, timeout: float = 3.0) -> dict[str, Any] | None:
        """The next event, skipping those of the cluster's own objects (`NOISE`: both servers'
        controllers create kube-root-ca.crt in every new namespace, while a test may watch)."""
        while True:
            line = await asyncio.wait_for(self.resp.content.readline(), timeout)
            if not line:
                return None
            ev: dict[str, Any] = json.loads(line)
            if not is_noise(ev.get("object") or {}):
                return ev

    async def take(self, n: int, timeout: float = 3.0, skip_bookmarks: bool = True) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        while len(out) < n:
            ev = await self.next(timeout)
            if ev is None:
                break
            if skip_bookmarks and ev["type"] == "BOOKMARK":
                continue
            if is_noise(ev.get("object") or {}):
                continue
            out.append(ev)
        return out

    async def close(self) -> None:
        self.resp.close()


async def put_fresh(
    http: Http, path: str, mutate: Callable[[dict[str, Any]], None], attempts: int = 5
) -> tuple[int, Any]:
    """GET, change, PUT; again on 409 (a real scheduler writes a pending pod's status meanwhile)."""
    for _ in range(attempts):
        _, current, _ = await http.get(path.removesuffix("/status"))
        mutate(current)
        status, body, _ = await http.put(path, current)
        if status != 409:
            break
    return status, body


async def eventually(
    check: Callable[[], Awaitable[bool]], timeout: float = 20.0, interval: float = 0.02
) -> None:
    """Poll ``check`` until it holds; fail with a clear message on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        if await check():
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout:.1f}s")
        await asyncio.sleep(interval)


NO_SCHEDULER = "kubetrain-conformance-unscheduled"


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
        # No scheduler serves this name: on a real cluster (which may have a kubelet) the pod stays
        # unscheduled and nothing but the test writes to it.
        "spec": {
            "containers": containers or [{"name": "main", "image": "busybox:1.36"}],
            "schedulerName": NO_SCHEDULER,
        },
    }


def configmap(name: str, data: dict[str, str] | None = None, **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, **meta}, "data": data or {}}


async def wait_for_service_account(http: Http, namespace: str) -> None:
    """On a real cluster pods are rejected until the namespace's `default` ServiceAccount exists."""

    async def has_sa() -> bool:
        s, _, _ = await http.get(f"/api/v1/namespaces/{namespace}/serviceaccounts/default")
        return s == 200

    _, version, _ = await http.get("/version")
    if "kubetrain" not in str(version.get("gitVersion", "")):
        await eventually(has_sa, timeout=30)


@dataclass(frozen=True)
class NS:
    """A test's namespace and the collection paths tests use most."""

    name: str

    def path(self, resource: str, group_version: str = "v1") -> str:
        prefix = "/api/v1" if group_version == "v1" else f"/apis/{group_version}"
        return f"{prefix}/namespaces/{self.name}/{resource}"

    @property
    def pods(self) -> str:
        return self.path("pods")

    @property
    def configmaps(self) -> str:
        return self.path("configmaps")

    def __str__(self) -> str:
        return self.name


WIDGET_VERSION: dict[str, Any] = {
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
                            "properties": {"backoff": {"type": "integer", "default": 3}},
                        },
                        "port": {"x-kubernetes-int-or-string": True},
                        "template": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                        "embedded": {
                            "type": "object",
                            "x-kubernetes-embedded-resource": True,
                            "properties": {"spec": {"type": "object"}},
                        },
                        "immutableName": {
                            "type": "string",
                            "x-kubernetes-validations": [
                                {"rule": "self == oldSelf", "message": "immutableName is immutable"}
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

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
CEL_SKIPPED = (
    "<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; "
    "correct the existing errors to complete validation"
)


@dataclass(frozen=True)
class WidgetKind:
    """The Widget custom resource in a group of one test's own (CRDs are cluster-scoped)."""

    group: str
    namespace: str
    plural: str = "widgets"
    kind: str = "Widget"
    scope: str = "Namespaced"

    @property
    def crd_name(self) -> str:
        return f"{self.plural}.{self.group}"

    @property
    def qualified(self) -> str:
        """How kube-apiserver names the kind in messages: ``Widget.<group>``."""
        return f"{self.kind}.{self.group}"

    def path(self, version: str = "v1", name: str = "") -> str:
        ns = f"/namespaces/{self.namespace}" if self.scope == "Namespaced" else ""
        base = f"/apis/{self.group}/{version}{ns}/{self.plural}"
        return f"{base}/{name}" if name else base

    @property
    def collection(self) -> str:
        return self.path()

    def crd(self, versions: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        return {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": self.crd_name},
            "spec": {
                "group": self.group,
                "scope": self.scope,
                "names": {
                    "plural": self.plural,
                    "singular": self.kind.lower(),
                    "kind": self.kind,
                    "shortNames": ["wd"] if self.kind == "Widget" else [],
                    "categories": ["all"] if self.kind == "Widget" else [],
                },
                "versions": versions or [copy.deepcopy(WIDGET_VERSION)],
            },
        }

    def obj(self, name: str, version: str = "v1", **spec: Any) -> dict[str, Any]:
        return {
            "apiVersion": f"{self.group}/{version}",
            "kind": self.kind,
            "metadata": {"name": name},
            "spec": {"size": 2, **spec},
        }


async def wait_served(http: Http, kind: WidgetKind, versions: tuple[str, ...] = ("v1",)) -> dict[str, Any]:
    """Wait until the CRD is Established and every version answers a list (both are asynchronous)."""
    crd: dict[str, Any] = {}

    async def ready() -> bool:
        nonlocal crd
        _, crd, _ = await http.get(f"{CRDS}/{kind.crd_name}")
        conds = {c["type"]: c["status"] for c in (crd.get("status") or {}).get("conditions") or ()}
        if conds.get("Established") != "True":
            return False
        for version in versions:
            status, _, _ = await http.get(kind.path(version))
            if status != 200:
                return False
        return True

    await eventually(ready, timeout=30, interval=0.05)
    return crd


async def install_widget_crd(
    http: Http, kind: WidgetKind, crd: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Create the CRD and return it once served: its create response is not Established yet."""
    body = crd or kind.crd()
    status, created, _ = await http.post(CRDS, body)
    assert status == 201, created
    versions = tuple(v["name"] for v in body["spec"]["versions"] if v.get("served"))
    return await wait_served(http, kind, versions)
