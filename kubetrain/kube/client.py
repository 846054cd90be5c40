"""A minimal Kubernetes REST client: raw dicts by URL path, list + watch, patches, subresources.

Both sides use this one: the operator's transport (`kubetrain.runtime.transport` adds resource
lookup, rate limiting and retries on top), and the node agent, binder and embedded controllers
(which may not import the operator's layers). kubernetes_asyncio gives the configuration:
kubeconfig and in-cluster loading, and the credentials of each request (token refresh, exec
plugins). Request/response calls go through the keep-alive pool in `http11`: a tuned aiohttp
client costs 1.8x its CPU per request (benchmarks/http_client_bench.py, docs/http-client.md).
Watches, log streams and, when the configuration names a proxy, every call go through one aiohttp
session that keeps its idle connections as long as the pool does.
"""

from __future__ import annotations

import json
import os
import ssl
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from typing import Any
from urllib.parse import quote, urlencode

import aiohttp
import orjson
from kubernetes_asyncio import config as k8s_config
from kubernetes_asyncio.client import ApiClient, Configuration

from kubetrain.kube.errors import ApiError
from kubetrain.kube.http11 import IDLE_SECONDS, ConnectionPool, Response

JsonDict = dict[str, Any]
JsonList = list[JsonDict]
Query = Sequence[tuple[str, str]] | Mapping[str, str]
Loads = Callable[[bytes], Any]
Dumps = Callable[[Any], bytes]

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
MAX_WATCH_EVENT_BYTES = 64 * 1024 * 1024
"""A watch frame carries one object: etcd caps a write at ~1.5 MiB, which JSON escaping can at most
multiply by ~6; the cap only keeps a broken stream from growing without bound."""


def loads(raw: bytes) -> Any:
    """orjson, else the standard library (integers beyond 64 bits, lone surrogate escapes)."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return json.loads(raw)


def url_configuration(url: str, token: str | None = None, ca_file: str | None = None) -> Configuration:
    """A server URL, a bearer token and the CA to trust (the embedded API server's kubeconfig)."""
    cfg = Configuration(host=url)
    cfg.ssl_ca_cert = ca_file
    if token:
        cfg.api_key = {"BearerToken": _bare(token)}
        cfg.api_key_prefix = {"BearerToken": "Bearer"}
    return cfg


def _bare(token: str) -> str:
    return token[7:] if token[:7].lower() == "bearer " else token


async def kubeconfig_configuration(path: str | None = None, context: str | None = None) -> Configuration:
    cfg = Configuration()
    await k8s_config.load_kube_config(
        config_file=path, context=context, client_configuration=cfg, persist_config=False
    )
    return cfg


def in_cluster_configuration() -> Configuration:
    cfg = Configuration()
    k8s_config.load_incluster_config(client_configuration=cfg)
    return cfg


async def detected_configuration(kubeconfig: str | None = None) -> Configuration:
    """An explicit path, else $KUBECONFIG / ~/.kube/config if present, else in-cluster."""
    path = kubeconfig or os.environ.get("KUBECONFIG", "").split(os.pathsep)[0] or None
    if path is None and os.path.exists(os.path.expanduser("~/.kube/config")):
        path = os.path.expanduser("~/.kube/config")
    if path is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
        return in_cluster_configuration()
    return await kubeconfig_configuration(path)


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


def connection_error(exc: BaseException) -> ApiError:
    """What a failure below HTTP (refused, reset, timed out, garbled) is: status 0."""
    return ApiError(0, "ConnectionError", repr(exc))


class KubeAPI:
    """Verbs by URL path against one API server; `send` is the one exchange they all make."""

    def __init__(
        self,
        configuration: Configuration,
        *,
        tls: ssl.SSLContext | None = None,
        timeout: float = 60.0,
        max_connections: int = 512,
        user_agent: str = "kubetrain",
        loads: Loads = loads,
        dumps: Dumps = orjson.dumps,
    ) -> None:
        self.configuration = configuration
        self.base_url = str(configuration.host).rstrip("/")
        self.timeout = timeout
        self.user_agent = user_agent
        self.loads = loads
        self.dumps = dumps
        https = self.base_url.startswith("https")
        self._ssl = (tls or ssl_context(configuration)) if https else None
        self._server_hostname = configuration.tls_server_name
        self._max_connections = max_connections
        self._static_headers: dict[str, str] = {}
        self._pool: ConnectionPool | None = None
        if not configuration.proxy:  # first: a bad server URL fails before any session exists
            self._pool = ConnectionPool(
                self.base_url,
                ssl_context=self._ssl,
                server_hostname=self._server_hostname,
                max_connections=max_connections,
                user_agent=user_agent,
            )
        self._credentials = ApiClient(configuration)
        self._session: aiohttp.ClientSession | None = None

    # -- construction ----------------------------------------------------------------------------

    @classmethod
    def for_url(
        cls,
        url: str,
        *,
        token: str | None = None,
        ssl_context: ssl.SSLContext | None = None,
        ca_file: str | None = None,
        **kwargs: Any,
    ) -> KubeAPI:
        """A client for `url` with a bearer token, trusting `ssl_context` or the CA in `ca_file`."""
        api = cls(url_configuration(url, token, ca_file), tls=ssl_context, **kwargs)
        if token:  # known for good: streams made straight on `session` carry it too
            api._static_headers["Authorization"] = f"Bearer {_bare(token)}"
        return api

    @classmethod
    async def from_kubeconfig(
        cls, path: str | None = None, context: str | None = None, **kwargs: Any
    ) -> KubeAPI:
        return cls(await kubeconfig_configuration(path, context), **kwargs)

    @property
    def connections_opened(self) -> int:
        """TCP (and TLS) connections the request pool opened: each is a handshake the server pays for."""
        return self._pool.connections_opened if self._pool is not None else 0

    @property
    def session(self) -> aiohttp.ClientSession:
        """The aiohttp session for streams: one connector, idle connections kept as long as the
        pool keeps its own, no cookie jar, no proxy or ~/.netrc look-ups (`trust_env` costs two
        executor hops per request), nothing compressed (a watch is decoded as it arrives)."""
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(
                limit=self._max_connections,
                ssl=self._ssl if self._ssl is not None else True,
                keepalive_timeout=IDLE_SECONDS,
            )
            self._session = aiohttp.ClientSession(
                connector=connector,
                cookie_jar=aiohttp.DummyCookieJar(),
                auto_decompress=False,
                skip_auto_headers=("Accept-Encoding",),
                headers={"User-Agent": self.user_agent, **self._static_headers},
            )
        return self._session

    async def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
        if self._session is not None:
            await self._session.close()
            self._session = None
        await self._credentials.close()

    async def __aenter__(self) -> KubeAPI:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- the exchange ----------------------------------------------------------------------------

    async def send(
        self,
        method: str,
        path: str,
        *,
        query: Query | None = None,
        body: bytes | None = None,
        content_type: str = JSON,
        timeout: float | None = None,
        retry_stale: bool = True,
    ) -> Response:
        """One request and its whole answer, whatever its status; ApiError(0) below HTTP.

        `retry_stale`: a reused connection the server closed while idle may be retried once on a
        fresh one (pass False for a request that must not be sent twice).
        """
        timeout = timeout or self.timeout
        headers, target = await self.headers_and_target(path, query, body, content_type)
        try:
            if self._pool is not None:
                return await self._pool.request(
                    method, target, headers, body, timeout=timeout, retry_stale=retry_stale
                )
            limit = aiohttp.ClientTimeout(total=timeout)
            async with await self._stream(method, target, headers, body, limit) as resp:
                raw = await resp.read()
                return Response(resp.status, {k.lower(): v for k, v in resp.headers.items()}, raw)
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            raise connection_error(exc) from exc

    async def stream(
        self,
        method: str,
        path: str,
        *,
        query: Query | None = None,
        timeout: aiohttp.ClientTimeout,
        accept: str = JSON,
    ) -> aiohttp.ClientResponse:
        """A response whose body the caller reads as it arrives (watches, logs); caller closes it."""
        headers, target = await self.headers_and_target(path, query, None, None)
        headers["Accept"] = accept
        try:
            return await self._stream(method, target, headers, None, timeout)
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            raise connection_error(exc) from exc

    async def headers_and_target(
        self, path: str, query: Query | None, body: bytes | None, content_type: str | None
    ) -> tuple[dict[str, str], str]:
        """Request headers (with the current credentials) and `path?query`."""
        headers: dict[str, str] = {"Accept": JSON}
        if content_type and body is not None:
            headers["Content-Type"] = content_type
        auth_query: list[tuple[str, str]] = []
        await self._credentials.update_params_for_auth(headers, auth_query, ["BearerToken"])
        params = [*(query.items() if isinstance(query, Mapping) else query or ()), *auth_query]
        return headers, (path + "?" + urlencode(params) if params else path)

    async def _stream(
        self,
        method: str,
        target: str,
        headers: dict[str, str],
        body: bytes | None,
        timeout: aiohttp.ClientTimeout,
    ) -> aiohttp.ClientResponse:
        kwargs: dict[str, Any] = {}
        if self.configuration.proxy:
            kwargs["proxy"] = self.configuration.proxy
        if self._server_hostname:
            kwargs["server_hostname"] = self._server_hostname
        return await self.session.request(
            method, self.base_url + target, data=body, headers=headers, timeout=timeout, **kwargs
        )

    # -- verbs -----------------------------------------------------------------------------------

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Query | None = None,
        body: Any = None,
        content_type: str = JSON,
        decode: bool = True,
    ) -> JsonDict:
        """One call; the decoded answer ({} when empty or not `decode`); ApiError for status >= 300."""
        data = None if body is None else self.dumps(body)
        resp = await self.send(method, path, query=params, body=data, content_type=content_type)
        if resp.status >= 300:
            raise error_from(resp.status, resp.body, resp.headers.get("retry-after"))
        if not resp.body or not decode:
            return {}
        out = self.loads(resp.body)
        return out if isinstance(out, dict) else {"items": out}

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

    async def list(self, path: str, params: Mapping[str, str] | None = None) -> tuple[JsonList, str]:
        """All items (following ``continue``) and the list's resourceVersion."""
        items: JsonList = []
        rv = ""
        async for page, page_rv in self.list_pages(path, params):
            items.extend(page)
            rv = page_rv
        return items, rv

    async def list_pages(
        self, path: str, params: Mapping[str, str] | None = None
    ) -> AsyncGenerator[tuple[JsonList, str], None]:
        """Each page's items with the list's resourceVersion (final on the last page), so a caller
        can digest a large list page by page instead of holding every full object at once."""
        query = dict(params or {})
        while True:
            page = await self.request("GET", path, params=query)
            meta = page.get("metadata") or {}
            yield page.get("items") or [], str(meta.get("resourceVersion") or "")
            if not meta.get("continue"):
                return
            query.pop("resourceVersion", None)  # the continue token carries it
            query["continue"] = meta["continue"]

    async def watch(
        self,
        path: str,
        params: Mapping[str, str] | None = None,
        *,
        bookmarks: bool = True,
        read_timeout: float | None = None,
    ) -> AsyncGenerator[JsonDict, None]:
        """Watch events (``{"type", "object"}``) until the server closes the stream; never retries.

        `read_timeout` (default: the server's timeoutSeconds + 30 s) bounds the silence on the
        socket, so a half-open connection is noticed instead of hanging forever
        (kubernetes-client#1148).
        """
        query = {**(params or {}), "watch": "true"}
        if bookmarks:
            query["allowWatchBookmarks"] = "true"
        if read_timeout is None:
            read_timeout = int(query.get("timeoutSeconds") or 1800) + 30.0
        limit = aiohttp.ClientTimeout(total=None, sock_connect=self.timeout, sock_read=read_timeout)
        resp = await self.stream("GET", path, query=query, timeout=limit)
        try:
            if resp.status != 200:
                raise error_from(resp.status, await resp.read(), resp.headers.get("Retry-After"))
            async for line in watch_lines(resp.content, MAX_WATCH_EVENT_BYTES):
                yield watch_event(line, self.loads)
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            raise connection_error(exc) from exc
        finally:
            resp.close()


async def watch_lines(content: aiohttp.StreamReader, max_bytes: int) -> AsyncGenerator[bytes, None]:
    """The non-blank newline-delimited frames of a watch, of any size up to `max_bytes`.

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
                yield line
        if start:
            del buf[:start]
        if len(buf) > max_bytes:
            raise ApiError(0, "ConnectionError", f"watch event larger than {max_bytes} bytes")
    if bytes(buf).strip():
        yield bytes(buf)


def watch_event(line: bytes, loads: Loads = loads) -> JsonDict:
    """One watch frame decoded; a frame that is not a JSON object breaks the stream (ApiError 0)."""
    try:
        event = loads(line)
    except ValueError as exc:
        raise ApiError(0, "ConnectionError", f"malformed watch event: {exc}") from exc
    if not isinstance(event, dict):
        raise ApiError(0, "ConnectionError", "malformed watch event: not an object")
    return event


def error_from(status: int, raw: bytes, retry_after: str | None) -> ApiError:
    """The ApiError of a failed answer: its metav1.Status when it is one."""
    try:
        body: Any = orjson.loads(raw)
    except ValueError:
        body = raw.decode("utf-8", "replace")
    return ApiError.from_status(status, body, parse_retry_after(retry_after))


def parse_retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None
