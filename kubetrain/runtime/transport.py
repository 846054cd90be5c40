"""The API transport: raw-dict REST verbs over kubernetes_asyncio's config, auth and TLS.

kubernetes_asyncio gives us kubeconfig/in-cluster loading and token refresh; we send and parse
the JSON ourselves, because its model classes are 5-10x slower and ~40x larger than dicts (spec
performance-reliability §1.7-1.8). Request/response calls go through our lean HTTP/1.1 pool
(`http11`, a third of aiohttp's CPU per call); watches, and every call when the kubeconfig names a
proxy, go through aiohttp.

Every request first takes a token from a client-side bucket (client-go's QPS/burst) and is
retried with jittered exponential backoff on 429 (honouring Retry-After), 5xx and connection
errors -- but only when repeating it cannot do harm (see `_may_retry`). 409 is never retried
blindly here: `update_status_retrying` re-reads and re-applies, which is the only safe way.
"""

from __future__ import annotations

import asyncio
import logging
import os
import ssl
from collections.abc import AsyncGenerator, Callable
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as package_version
from typing import Any
from urllib.parse import urlencode

import aiohttp
import orjson
from kubernetes_asyncio import config as k8s_config
from kubernetes_asyncio.client import ApiClient, Configuration

from kubetrain.api import jsonsafe
from kubetrain.kube.resources import ResourceRegistry, ResourceType
from kubetrain.runtime.backoff import Backoff
from kubetrain.runtime.errors import ApiError
from kubetrain.runtime.http11 import ConnectionPool, Response
from kubetrain.runtime.ratelimit import TokenBucket
from kubetrain.runtime.resources import default_registry

log = logging.getLogger(__name__)

JsonDict = dict[str, Any]
JsonList = list[JsonDict]
Query = list[tuple[str, str]]

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
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
    budget (spec §1.4). `qps <= 0` disables the limiter (tests against the embedded server).
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
        configuration.connection_pool_maxsize = max_connections
        self.configuration = configuration
        self.registry = registry or default_registry()
        self.bucket = TokenBucket(qps, burst)
        self.max_attempts = max(1, max_attempts)
        self.backoff_base = backoff_base
        self.backoff_cap = backoff_cap
        self.max_retry_after = max_retry_after
        self.request_timeout = request_timeout
        self.max_watch_event_bytes = MAX_WATCH_EVENT_BYTES
        self._host = str(configuration.host).rstrip("/")
        self._server_hostname = configuration.tls_server_name
        self.requests_total = 0
        self.retries_total = 0
        self._session: aiohttp.ClientSession | None = None
        self._pool: ConnectionPool | None = None
        if not configuration.proxy:  # first: a bad server URL fails before any session exists
            self._pool = ConnectionPool(
                self._host,
                ssl_context=ssl_context(configuration) if self._host.startswith("https") else None,
                server_hostname=self._server_hostname,
                max_connections=max_connections,
                user_agent=USER_AGENT,
            )
        self._api = ApiClient(configuration)

    # -- construction ------------------------------------------------------------------------

    @classmethod
    async def from_kubeconfig(
        cls, path: str | None = None, context: str | None = None, **kwargs: Any
    ) -> KubeClient:
        cfg = Configuration()
        await k8s_config.load_kube_config(
            config_file=path, context=context, client_configuration=cfg, persist_config=False
        )
        return cls(cfg, **kwargs)

    @classmethod
    def in_cluster(cls, **kwargs: Any) -> KubeClient:
        cfg = Configuration()
        k8s_config.load_incluster_config(client_configuration=cfg)
        return cls(cfg, **kwargs)

    @classmethod
    async def autodetect(cls, kubeconfig: str | None = None, **kwargs: Any) -> KubeClient:
        """An explicit path, else $KUBECONFIG / ~/.kube/config if present, else in-cluster."""
        path = kubeconfig or os.environ.get("KUBECONFIG", "").split(os.pathsep)[0] or None
        if path is None and os.path.exists(os.path.expanduser("~/.kube/config")):
            path = os.path.expanduser("~/.kube/config")
        if path is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
            return cls.in_cluster(**kwargs)
        return await cls.from_kubeconfig(path, **kwargs)

    @classmethod
    def for_url(
        cls, url: str, token: str | None = None, ca_file: str | None = None, **kwargs: Any
    ) -> KubeClient:
        """A client for `url` with a bearer token and the CA to trust (the embedded API server)."""
        cfg = Configuration(host=url)
        cfg.ssl_ca_cert = ca_file
        if token:
            cfg.api_key = {"BearerToken": token}
            cfg.api_key_prefix = {"BearerToken": "Bearer"}
        return cls(cfg, **kwargs)

    @property
    def connections_opened(self) -> int:
        """TCP (and TLS) connections the request pool opened: each is a handshake the server pays for."""
        return self._pool.connections_opened if self._pool is not None else 0

    async def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
        if self._session is not None:
            await self._session.close()
        await self._api.close()

    def _http(self) -> aiohttp.ClientSession:
        """kubernetes_asyncio's connector (TLS, pool size) in a session without `trust_env`.

        With `trust_env` aiohttp looks up proxies and ~/.netrc in a thread for every request: two
        executor hops per API call, a third of the operator's time when creating 2,000 objects.
        A proxy configured in the kubeconfig is still passed with every request (`_send`).
        """
        if self._session is None:
            pool: aiohttp.ClientSession = self._api.rest_client.pool_manager
            self._session = aiohttp.ClientSession(connector=pool.connector, connector_owner=False)
        return self._session

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
        query = _query(
            watch="true",
            resourceVersion=resource_version,
            labelSelector=label_selector,
            fieldSelector=field_selector,
            timeoutSeconds=timeout_seconds,
            allowWatchBookmarks="true" if allow_bookmarks else None,
        )
        if read_timeout is None:
            read_timeout = (timeout_seconds or 1800) + 30.0
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=self.request_timeout, sock_read=read_timeout)
        await self.bucket.acquire()
        self.requests_total += 1
        try:
            resp = await self._send("GET", rt.path(namespace), query, None, None, timeout)
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            raise ApiError(0, "ConnectionError", repr(exc)) from exc
        try:
            if resp.status != 200:
                raise await _error_from(resp)
            async for event in _watch_events(resp.content, self.max_watch_event_bytes):
                yield event
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            raise ApiError(0, "ConnectionError", repr(exc)) from exc
        finally:
            resp.close()

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
                resp = await self._exchange(method, path, query, data, content_type, timeout, idempotent)
                if 200 <= resp.status < 300:
                    return _decode(resp.body) if resp.body and decode else {}
                err = ApiError.from_status(
                    resp.status, _decode_or_text(resp.body), _retry_after(resp.headers.get("retry-after"))
                )
            except (TimeoutError, aiohttp.ClientError, OSError) as exc:
                err = ApiError(0, "ConnectionError", repr(exc))
            if attempt >= self.max_attempts or not _may_retry(err, idempotent):
                raise err
            delay = backoff.next()
            if err.too_many_requests and err.retry_after is not None:
                delay = min(self.max_retry_after, err.retry_after)
            self.retries_total += 1
            log.debug("retrying %s %s after %.3fs: %s", method, path, delay, err)
            await asyncio.sleep(delay)

    async def _exchange(
        self,
        method: str,
        path: str,
        query: Query | None,
        data: bytes | None,
        content_type: str,
        timeout: float,
        idempotent: bool,
    ) -> Response:
        """One request/response over the lean pool, or aiohttp when a proxy is configured."""
        if self._pool is None:
            limit = aiohttp.ClientTimeout(total=timeout)
            resp = await self._send(method, path, query, data, content_type, limit)
            async with resp:
                body = await resp.read()
                return Response(resp.status, {k.lower(): v for k, v in resp.headers.items()}, body)
        headers, target = await self._headers_and_target(path, query, data, content_type)
        return await self._pool.request(
            method, target, headers, data, timeout=timeout, retry_stale=idempotent
        )

    async def _headers_and_target(
        self, path: str, query: Query | None, data: bytes | None, content_type: str | None
    ) -> tuple[dict[str, str], str]:
        """Request headers (with the current credentials) and `path?query`."""
        headers: dict[str, str] = {"Accept": "application/json"}
        if content_type and data is not None:
            headers["Content-Type"] = content_type
        auth_query: Query = []
        await self._api.update_params_for_auth(headers, auth_query, ["BearerToken"])
        params = (query or []) + auth_query
        return headers, (path + "?" + urlencode(params) if params else path)

    async def _send(
        self,
        method: str,
        path: str,
        query: Query | None,
        data: bytes | None,
        content_type: str | None,
        timeout: aiohttp.ClientTimeout,
    ) -> aiohttp.ClientResponse:
        headers, target = await self._headers_and_target(path, query, data, content_type)
        headers["User-Agent"] = USER_AGENT
        url = self._host + target
        session = self._http()
        kwargs: dict[str, Any] = {}
        if self.configuration.proxy:
            kwargs["proxy"] = self.configuration.proxy
        if self._server_hostname:
            kwargs["server_hostname"] = self._server_hostname
        return await session.request(method, url, data=data, headers=headers, timeout=timeout, **kwargs)


def ssl_context(configuration: Configuration) -> ssl.SSLContext:
    """The TLS settings kubernetes_asyncio's own REST client derives from a Configuration."""
    context = ssl.create_default_context(cafile=configuration.ssl_ca_cert)
    if configuration.cert_file:
        context.load_cert_chain(configuration.cert_file, keyfile=configuration.key_file)
    if not configuration.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if configuration.disable_strict_ssl_verification:
        context.verify_flags &= ~ssl.VERIFY_X509_STRICT
    return context


def _may_retry(err: ApiError, idempotent: bool) -> bool:
    """429 means the request was not processed: always safe. 5xx and dropped connections may
    have been applied, so only idempotent requests are repeated."""
    if err.too_many_requests:
        return True
    return idempotent and (err.connection_error or err.status in _RETRYABLE_5XX)


def _query(**params: Any) -> list[tuple[str, str]]:
    return [(k, str(v)) for k, v in params.items() if v is not None and v != ""]


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


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


MAX_WATCH_EVENT_BYTES = 64 * 1024 * 1024
"""A watch frame carries one object: etcd caps a write at ~1.5 MiB, which JSON escaping can at most
multiply by ~6; the cap only keeps a broken stream from growing without bound."""


async def _watch_events(content: aiohttp.StreamReader, max_bytes: int) -> AsyncGenerator[JsonDict, None]:
    """Newline-delimited events of any size up to `max_bytes`, read chunk by chunk.

    aiohttp's line iteration refuses lines over 512 KiB (LineTooLong), which broke every watch of
    a kind holding one large object and forced a relist per change.
    """
    buf = bytearray()
    async for chunk in content.iter_any():
        scan = len(buf)
        buf += chunk
        start = 0
        while (end := buf.find(b"\n", scan)) >= 0:
            line = bytes(buf[start:end])
            start = scan = end + 1
            if line.strip():
                yield _decode_event(line)
        if start:
            del buf[:start]
        if len(buf) > max_bytes:
            raise ApiError(0, "ConnectionError", f"watch event larger than {max_bytes} bytes")
    if bytes(buf).strip():
        yield _decode_event(bytes(buf))


def _decode_event(line: bytes) -> JsonDict:
    try:
        event = jsonsafe.loads(line)
    except jsonsafe.JSONError as exc:
        raise ApiError(0, "ConnectionError", f"malformed watch event: {exc}") from exc
    if not isinstance(event, dict):
        raise ApiError(0, "ConnectionError", "malformed watch event: not an object")
    return event


def _decode_or_text(raw: bytes) -> Any:
    try:
        return orjson.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace")


async def _error_from(resp: aiohttp.ClientResponse) -> ApiError:
    raw = await resp.read()
    return ApiError.from_status(
        resp.status, _decode_or_text(raw), _retry_after(resp.headers.get("Retry-After"))
    )
