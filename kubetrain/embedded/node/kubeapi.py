"""A small Kubernetes REST client on aiohttp: raw dicts, list+watch, merge patch, subresources.

The node agent and the binder talk to the API server only through the Kubernetes HTTP API, so the
same agent can join a real cluster. They cannot use ``kubetrain.runtime`` (the embedded plane must
not import the operator's layers), and they need few verbs, so this module is deliberately small;
kubeconfig loading and auth are borrowed from kubernetes_asyncio.
"""

from __future__ import annotations

import json
import ssl
from collections.abc import AsyncIterator, Mapping
from typing import Any
from urllib.parse import quote

import aiohttp

JsonDict = dict[str, Any]
MERGE_PATCH = "application/merge-patch+json"


class ApiError(Exception):
    """A non-2xx answer; `status` and `reason` come from the Status object when there is one."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message


def _error(status: int, text: str) -> ApiError:
    try:
        body = json.loads(text)
    except ValueError:
        body = {}
    if not isinstance(body, dict):
        body = {}
    return ApiError(status, str(body.get("reason") or ""), str(body.get("message") or text[:500]))


def core_path(
    resource: str, namespace: str | None = None, name: str | None = None, subresource: str | None = None
) -> str:
    """``/api/v1/[namespaces/<ns>/]<resource>[/<name>[/<sub>]]``."""
    return group_path("", "v1", resource, namespace, name, subresource)


def group_path(
    group: str,
    version: str,
    resource: str,
    namespace: str | None = None,
    name: str | None = None,
    subresource: str | None = None,
) -> str:
    parts = ["/api/v1"] if not group else [f"/apis/{group}/{version}"]
    if namespace:
        parts.append(f"namespaces/{quote(namespace, safe='')}")
    parts.append(resource)
    if name:
        parts.append(quote(name, safe=""))
    if subresource:
        parts.append(subresource)
    return "/".join(parts)


class KubeAPI:
    """Verbs by URL path; one aiohttp session, reused for every request and watch."""

    def __init__(
        self,
        base_url: str,
        *,
        token: str | None = None,
        ssl_context: ssl.SSLContext | None = None,
        timeout: float = 30.0,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._headers = {"Accept": "application/json"}
        if token:
            self._headers["Authorization"] = (
                token if token.lower().startswith("bearer ") else f"Bearer {token}"
            )
        self._ssl: ssl.SSLContext | bool = ssl_context if ssl_context is not None else True
        self._timeout = timeout
        self._session: aiohttp.ClientSession | None = None

    @classmethod
    async def from_kubeconfig(cls, path: str | None = None, context: str | None = None) -> KubeAPI:
        """Server, token and TLS from a kubeconfig, through kubernetes_asyncio's loader."""
        from kubernetes_asyncio import config as k8s_config
        from kubernetes_asyncio.client import Configuration

        cfg = Configuration()
        await k8s_config.load_kube_config(
            config_file=path, context=context, client_configuration=cfg, persist_config=False
        )
        ctx: ssl.SSLContext | None = None
        if str(cfg.host).startswith("https"):
            ctx = ssl.create_default_context(cafile=cfg.ssl_ca_cert)
            if cfg.cert_file:
                ctx.load_cert_chain(cfg.cert_file, cfg.key_file)
            if not cfg.verify_ssl:
                ctx.check_hostname = False
                ctx.verify_mode = ssl.CERT_NONE
        token = (cfg.api_key or {}).get("authorization") or (cfg.api_key or {}).get("BearerToken")
        return cls(str(cfg.host), token=token, ssl_context=ctx)

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                headers=self._headers, connector=aiohttp.TCPConnector(limit=64, ssl=self._ssl)
            )
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
    ) -> JsonDict:
        data = None if body is None else json.dumps(body)
        headers = {"Content-Type": content_type} if data is not None else None
        timeout = aiohttp.ClientTimeout(total=self._timeout)
        async with self.session.request(
            method, self.base_url + path, params=params, data=data, headers=headers, timeout=timeout
        ) as resp:
            text = await resp.text()
            if resp.status >= 300:
                raise _error(resp.status, text)
            return json.loads(text) if text else {}

    async def get(self, path: str) -> JsonDict:
        return await self.request("GET", path)

    async def get_or_none(self, path: str) -> JsonDict | None:
        try:
            return await self.get(path)
        except ApiError as err:
            if err.status == 404:
                return None
            raise

    async def create(self, path: str, body: JsonDict) -> JsonDict:
        return await self.request("POST", path, body=body)

    async def merge_patch(self, path: str, patch: JsonDict) -> JsonDict:
        return await self.request("PATCH", path, body=patch, content_type=MERGE_PATCH)

    async def delete(self, path: str, body: JsonDict | None = None) -> JsonDict:
        return await self.request("DELETE", path, body=body)

    async def list(self, path: str, params: Mapping[str, str] | None = None) -> tuple[list[JsonDict], str]:
        """All items (following ``continue``) and the list's resourceVersion."""
        items: list[JsonDict] = []
        query = dict(params or {})
        while True:
            page = await self.request("GET", path, params=query)
            items.extend(page.get("items") or ())
            meta = page.get("metadata") or {}
            if not meta.get("continue"):
                return items, str(meta.get("resourceVersion") or "")
            query["continue"] = meta["continue"]

    async def watch(self, path: str, params: Mapping[str, str]) -> AsyncIterator[JsonDict]:
        """Watch events (``{"type", "object"}``) until the server closes the stream."""
        query = {**params, "watch": "true", "allowWatchBookmarks": "true"}
        timeout = aiohttp.ClientTimeout(total=None, sock_read=None)
        async with self.session.get(self.base_url + path, params=query, timeout=timeout) as resp:
            if resp.status >= 300:
                raise _error(resp.status, await resp.text())
            buffer = b""
            async for chunk in resp.content.iter_any():
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if line.strip():
                        yield json.loads(line)
