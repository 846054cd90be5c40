"""The operator's API transport: verbs by resource over the minimal client, with rate limiting and retries.

`kubetrain.kube.client.KubeAPI` does the HTTP (its keep-alive pool, its watch stream) and carries
kubernetes_asyncio's configuration and credentials; raw dicts, not model classes, because those
are 5-10x slower and ~40x larger. What is the operator's
is here: resources named by (apiVersion, kind), JSON through `jsonsafe` (objects nested deeper
than orjson allows), a client-side token bucket (client-go's QPS/burst) that every request
takes from, and retries with jittered exponential backoff on 429 (honouring Retry-After), 5xx and
connection errors -- but only when repeating the request cannot do harm (see `_may_retry`). 409
is never retried blindly here: `update_status_retrying` re-reads and re-applies, which is the
only safe way.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, Callable
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as package_version
from typing import Any

import orjson
from kubernetes_asyncio.client import Configuration

from kubetrain.kube import jsonsafe
from kubetrain.kube.backoff import Backoff
from kubetrain.kube.client import (
    JSON_PATCH,
    MERGE_PATCH,
    KubeAPI,
    detected_configuration,
    error_from,
    in_cluster_configuration,
    kubeconfig_configuration,
    url_configuration,
)
from kubetrain.kube.errors import ApiError
from kubetrain.kube.resources import ResourceRegistry, ResourceType
from kubetrain.runtime.ratelimit import TokenBucket
from kubetrain.runtime.resources import default_registry

log = logging.getLogger(__name__)

JsonDict = dict[str, Any]
JsonList = list[JsonDict]
Query = list[tuple[str, str]]

_RETRYABLE_5XX = frozenset({500, 502, 503, 504})

DEFAULT_QPS = 500.0
DEFAULT_BURST = 1000


def _user_agent() -> str:
    try:
        return f"kubetrain/{package_version('kubetrain')}"
    except PackageNotFoundError:
        return "kubetrain"


USER_AGENT = _user_agent()


class KubeClient:
    """Generic verbs by (apiVersion, kind-or-plural, namespace, name) returning raw dicts.

    `qps`/`burst` default to 500/1000 rather than upstream's 20/30: an N-replica job costs ~N
    pod creates plus status and event writes, and at 20 QPS a 1,000-replica job needs ~100 s of
    budget (docs/upstream-behaviour.md#client-rate-limits). `qps <= 0` disables the limiter (tests
    against the embedded server).
    """

    def __init__(
        self,
        configuration: Configuration,
        *,
        qps: float = DEFAULT_QPS,
        burst: int = DEFAULT_BURST,
        registry: ResourceRegistry | None = None,
        max_attempts: int = 5,
        backoff_base: float = 0.05,
        backoff_cap: float = 5.0,
        max_retry_after: float = 30.0,
        request_timeout: float = 60.0,
        max_connections: int = 512,
    ) -> None:
        self.configuration = configuration
        self.registry = registry or default_registry()
        self.bucket = TokenBucket(qps, burst)
        self.max_attempts = max(1, max_attempts)
        self.backoff_base = backoff_base
        self.backoff_cap = backoff_cap
        self.max_retry_after = max_retry_after
        self.request_timeout = request_timeout
        self.requests_total = 0
        self.retries_total = 0
        self.api = KubeAPI(
            configuration,
            timeout=request_timeout,
            max_connections=max_connections,
            user_agent=USER_AGENT,
            loads=jsonsafe.loads,
            dumps=jsonsafe.dumps,
        )

    # -- construction ------------------------------------------------------------------------

    @classmethod
    async def from_kubeconfig(
        cls, path: str | None = None, context: str | None = None, **kwargs: Any
    ) -> KubeClient:
        return cls(await kubeconfig_configuration(path, context), **kwargs)

    @classmethod
    def in_cluster(cls, **kwargs: Any) -> KubeClient:
        return cls(in_cluster_configuration(), **kwargs)

    @classmethod
    async def autodetect(cls, kubeconfig: str | None = None, **kwargs: Any) -> KubeClient:
        """An explicit path, else $KUBECONFIG / ~/.kube/config if present, else in-cluster."""
        return cls(await detected_configuration(kubeconfig), **kwargs)

    @classmethod
    def for_url(
        cls, url: str, token: str | None = None, ca_file: str | None = None, **kwargs: Any
    ) -> KubeClient:
        """A client for `url` with a bearer token and the CA to trust (the embedded API server)."""
        return cls(url_configuration(url, token, ca_file), **kwargs)

    @property
    def connections_opened(self) -> int:
        """TCP (and TLS) connections the request pool opened: each is a handshake the server pays for."""
        return self.api.connections_opened

    async def close(self) -> None:
        await self.api.close()

    async def __aenter__(self) -> KubeClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def resource(self, api_version: str, kind_or_plural: str) -> ResourceType:
        return self.registry.lookup(api_version, kind_or_plural)

    # -- verbs -------------------------------------------------------------------------------

    async def get(self, api_version: str, kind: str, namespace: str | None, name: str) -> JsonDict:
        rt = self.resource(api_version, kind)
        return await self.request("GET", rt.path(namespace, name))

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
    ) -> tuple[JsonList, str]:
        """All items (following `continue` tokens) and the list's resourceVersion."""
        items: JsonList = []
        rv = ""
        async for page, page_rv in self.list_pages(
            api_version,
            kind,
            namespace,
            label_selector=label_selector,
            field_selector=field_selector,
            limit=limit,
            resource_version=resource_version,
        ):
            items.extend(page)
            rv = page_rv
        return items, rv

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
    ) -> AsyncGenerator[tuple[JsonList, str], None]:
        """Each page's items with the list's resourceVersion (final on the last page), so a caller
        can digest a large list page by page instead of holding every full object at once."""
        rt = self.resource(api_version, kind)
        cont: str | None = None
        while True:
            query = _query(
                labelSelector=label_selector,
                fieldSelector=field_selector,
                limit=limit or None,
                resourceVersion=resource_version if cont is None else None,
                **{"continue": cont},
            )
            page = await self.request("GET", rt.path(namespace), query=query)
            meta = page.get("metadata") or {}
            cont = meta.get("continue") or None
            yield page.get("items") or [], str(meta.get("resourceVersion") or "")
            if not cont:
                return

    async def create(
        self, obj: JsonDict, *, namespace: str | None = None, read_back: bool = True
    ) -> JsonDict:
        """POST; the created object, or {} when `read_back` is False (its body is not parsed)."""
        meta = obj.get("metadata") or {}
        rt = self.resource(obj["apiVersion"], obj["kind"])
        ns = namespace or meta.get("namespace")
        # A named create is safe to repeat: a second attempt at worst gets 409 AlreadyExists.
        return await self.request(
            "POST", rt.path(ns), body=obj, idempotent=bool(meta.get("name")), decode=read_back
        )

    async def replace(self, obj: JsonDict, *, subresource: str | None = None) -> JsonDict:
        """PUT; conditional on `metadata.resourceVersion` when the object carries one."""
        meta = obj["metadata"]
        rt = self.resource(obj["apiVersion"], obj["kind"])
        return await self.request("PUT", rt.path(meta.get("namespace"), meta["name"], subresource), body=obj)

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
        body: JsonDict = {"apiVersion": "v1", "kind": "DeleteOptions"}
        preconditions = {k: v for k, v in (("uid", uid), ("resourceVersion", resource_version)) if v}
        if preconditions:
            body["preconditions"] = preconditions
        if propagation_policy:
            body["propagationPolicy"] = propagation_policy
        if grace_period_seconds is not None:
            body["gracePeriodSeconds"] = grace_period_seconds
        return await self.request("DELETE", rt.path(namespace, name), body=body)

    async def merge_patch(
        self,
        api_version: str,
        kind: str,
        namespace: str | None,
        name: str,
        patch: JsonDict,
        *,
        subresource: str | None = None,
    ) -> JsonDict:
        rt = self.resource(api_version, kind)
        return await self.request(
            "PATCH", rt.path(namespace, name, subresource), body=patch, content_type=MERGE_PATCH
        )

    async def json_patch(
        self,
        api_version: str,
        kind: str,
        namespace: str | None,
        name: str,
        ops: JsonList,
        *,
        subresource: str | None = None,
    ) -> JsonDict:
        rt = self.resource(api_version, kind)
        # Only a patch made of replace/remove/test ops gives the same result twice.
        idempotent = all(op.get("op") in ("replace", "test", "remove") for op in ops)
        return await self.request(
            "PATCH",
            rt.path(namespace, name, subresource),
            body=ops,
            content_type=JSON_PATCH,
            idempotent=idempotent,
        )

    async def replace_status(self, obj: JsonDict) -> JsonDict:
        """PUT the status subresource with the object's resourceVersion (409 if it is stale)."""
        return await self.replace(obj, subresource="status")

    async def patch_status(
        self, api_version: str, kind: str, namespace: str | None, name: str, patch: JsonDict
    ) -> JsonDict:
        return await self.merge_patch(api_version, kind, namespace, name, patch, subresource="status")

    async def update_status_retrying(
        self,
        api_version: str,
        kind: str,
        namespace: str | None,
        name: str,
        mutate: Callable[[JsonDict], JsonDict | None],
        *,
        attempts: int = 5,
    ) -> JsonDict | None:
        """GET, compute the new status with `mutate(obj)` (None = nothing to do), PUT; on 409 repeat.

        Re-reading before re-applying is what makes a conflict retry safe: the status is always
        computed from the version it replaces.
        """
        for attempt in range(attempts):
            obj = await self.get(api_version, kind, namespace, name)
            status = mutate(obj)
            if status is None:
                return None
            try:
                return await self.replace_status({**obj, "status": status})
            except ApiError as err:
                if not err.conflict or attempt == attempts - 1:
                    raise
        return None

    # -- watch -------------------------------------------------------------------------------

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
        """Yield raw watch events `{"type", "object"}`; never retries (the reflector decides).

        `read_timeout` (default: server timeout + 30 s) bounds the silence on the socket, so a
        half-open connection is noticed instead of hanging forever (kubernetes-client#1148).
        """
        rt = self.resource(api_version, kind)
        query = dict(
            _query(
                resourceVersion=resource_version,
                labelSelector=label_selector,
                fieldSelector=field_selector,
                timeoutSeconds=timeout_seconds,
            )
        )
        await self.bucket.acquire()
        self.requests_total += 1
        events = self.api.watch(
            rt.path(namespace), query, bookmarks=allow_bookmarks, read_timeout=read_timeout
        )
        async with contextlib.aclosing(events):
            async for event in events:
                yield event

    # -- core --------------------------------------------------------------------------------

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Query | None = None,
        body: Any = None,
        content_type: str = "application/json",
        idempotent: bool = True,
        timeout: float | None = None,
        decode: bool = True,
    ) -> JsonDict:
        """One API call with limiter, retries and JSON decoding (of a success body only when
        `decode`); raises ApiError on failure."""
        data = _encode(body) if body is not None else None
        timeout = timeout or self.request_timeout
        backoff = Backoff(self.backoff_base, self.backoff_cap)
        attempt = 0
        while True:
            attempt += 1
            await self.bucket.acquire()
            self.requests_total += 1
            try:
                resp = await self.api.send(
                    method,
                    path,
                    query=query,
                    body=data,
                    content_type=content_type,
                    timeout=timeout,
                    retry_stale=idempotent,
                )
                if 200 <= resp.status < 300:
                    return _decode(resp.body) if resp.body and decode else {}
                err = error_from(resp.status, resp.body, resp.headers.get("retry-after"))
            except ApiError as exc:  # below HTTP: refused, reset, timed out
                err = exc
            if attempt >= self.max_attempts or not _may_retry(err, idempotent):
                raise err
            delay = backoff.next()
            if err.too_many_requests and err.retry_after is not None:
                delay = min(self.max_retry_after, err.retry_after)
            self.retries_total += 1
            log.debug("retrying %s %s after %.3fs: %s", method, path, delay, err)
            await asyncio.sleep(delay)


def _may_retry(err: ApiError, idempotent: bool) -> bool:
    """429 means the request was not processed: always safe. 5xx and dropped connections may
    have been applied, so only idempotent requests are repeated."""
    if err.too_many_requests:
        return True
    return idempotent and (err.connection_error or err.status in _RETRYABLE_5XX)


def _query(**params: Any) -> list[tuple[str, str]]:
    return [(k, str(v)) for k, v in params.items() if v is not None and v != ""]


def _encode(body: Any) -> bytes:
    """orjson, or for what it refuses (integers beyond 64 bits, nesting beyond 254, lone
    surrogates) the iterative encoder, so no object a user stored makes a write impossible."""
    return jsonsafe.dumps(body)


def _decode(raw: bytes) -> JsonDict:
    """orjson, or the iterative parser for what it refuses (nesting beyond 1,024 levels, lone
    surrogate escapes): kube-apiserver serves objects nested up to 10,000 deep."""
    try:
        out = jsonsafe.loads(raw)
    except jsonsafe.JSONError as exc:
        raise orjson.JSONDecodeError(str(exc), raw.decode("utf-8", "replace"), 0) from exc
    return out if isinstance(out, dict) else {"items": out}
