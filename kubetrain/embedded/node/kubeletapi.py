"""The kubelet API the API server calls: container logs and exec, over TLS.

kube-apiserver serves ``pods/log`` and ``pods/exec`` by calling the pod's node at
``https://<InternalIP>:<daemonEndpoints.kubeletEndpoint.Port>`` with its kubelet client
certificate. This server answers the paths it uses, as the kubelet does:

* ``GET /containerLogs/{ns}/{pod}/{container}`` with ``follow``, ``tailLines`` (or ``tail``),
  ``sinceSeconds``/``sinceTime``, ``timestamps``, ``previous`` and ``limitBytes``: the CRI log
  files of `logs`, streamed chunked;
* ``GET|POST /exec/{ns}/{pod}[/{uid}]/{container}?command=..&input=1&output=1&error=1&tty=0``:
  upgraded to WebSocket (``v5``/``v4.channel.k8s.io``, `websocket`) or SPDY/3.1 (`spdy`) and
  bridged to the node's exec endpoint (`remotecommand`);
* ``GET /healthz``: ``ok``, without authentication.

Authentication is the caller's client certificate, verified against the cluster CA; without one
the answer is kubelet's ``401 Unauthorized``. Authorization is kubelet's ``--authorization-mode``:
``AlwaysAllow`` (the kubelet flag's default), or ``Webhook``, a SubjectAccessReview for
``nodes/proxy`` (verb from the HTTP method), cached 5 min when allowed and 30 s when denied,
answered ``403 Forbidden (user=..., verb=..., resource=nodes, subresource(s)=[proxy])``.

One request per connection (``Connection: close``): the API server opens a connection per
stream anyway, and it keeps this server small. Errors are plain text, as the kubelet writes them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import ssl
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import parse_qs, unquote, urlsplit

from kubetrain.embedded.apiserver import LogOptions, LogUnavailable
from kubetrain.kube.client import KubeAPI, group_path
from kubetrain.kube.errors import ApiError
from kubetrain.kube.timefmt import parse_epoch

from . import certs
from .config import KubeletAPIConfig
from .network import HOST_IP
from .remotecommand import (
    SPDY_PROTOCOLS,
    WEBSOCKET_PROTOCOLS,
    ExecChannel,
    ExecOptions,
    SpdyStreams,
    WebSocketStreams,
    open_exec,
    relay,
)
from .spdy import SpdySession
from .target import PodView
from .websocket import WebSocket, accept_key

log = logging.getLogger(__name__)

JsonDict = dict[str, Any]

MAX_HEADER_BYTES = 64 * 1024
ALLOWED_TTL, DENIED_TTL = 300.0, 30.0
_VERBS = {"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
_REASONS = {
    101: "Switching Protocols",
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    422: "Unprocessable Entity",
    500: "Internal Server Error",
}


class LogSource(Protocol):
    def logs(
        self, namespace: str, pod: dict[str, Any], container: str, options: LogOptions
    ) -> AsyncIterator[bytes]: ...


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, list[str]]

    def header(self, name: str) -> str:
        return ", ".join(self.headers.get(name.lower()) or [])

    def param(self, name: str) -> str | None:
        values = self.query.get(name)
        return values[0] if values else None


@dataclass(frozen=True)
class User:
    name: str
    groups: tuple[str, ...]


class HttpError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


async def read_request(reader: asyncio.StreamReader) -> Request | None:
    """The request line and headers (a body, never used here, is left unread)."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
        return None
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3:
        return None
    headers: dict[str, list[str]] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep:
            headers.setdefault(name.strip().lower(), []).append(value.strip())
    url = urlsplit(parts[1])
    return Request(parts[0], unquote(url.path), parse_qs(url.query, keep_blank_values=True), headers)


def response_head(code: int, headers: dict[str, str]) -> bytes:
    lines = [f"HTTP/1.1 {code} {_REASONS.get(code, 'Unknown')}"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


async def write_text(writer: asyncio.StreamWriter, code: int, text: str, **extra: str) -> None:
    body = text.encode()
    headers = {
        "Content-Type": "text/plain; charset=utf-8",
        "X-Content-Type-Options": "nosniff",
        "Content-Length": str(len(body)),
        "Connection": "close",
        **{k.replace("_", "-"): v for k, v in extra.items()},
    }
    writer.write(response_head(code, headers) + body)
    with contextlib.suppress(ConnectionError):
        await writer.drain()


def _peer_user(writer: asyncio.StreamWriter) -> User | None:
    cert = writer.get_extra_info("peercert")
    if not cert:
        return None
    names, groups = [], []
    for rdn in cert.get("subject") or ():
        for key, value in rdn:
            if key == "commonName":
                names.append(value)
            elif key == "organizationName":
                groups.append(value)
    return User(names[0], (*groups, "system:authenticated")) if names else None


class Authorizer:
    """kubelet's webhook authorizer: a SubjectAccessReview per (user, verb), cached."""

    def __init__(self, api: KubeAPI, node_name: str, mode: str) -> None:
        self.api, self.node_name, self.mode = api, node_name, mode
        self._cache: dict[tuple[User, str, str], tuple[bool, float]] = {}

    async def allowed(self, user: User, verb: str, subresource: str) -> bool:
        if self.mode == "AlwaysAllow":
            return True
        key = (user, verb, subresource)
        hit = self._cache.get(key)
        if hit is not None and hit[1] > time.monotonic():
            return hit[0]
        review = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {
                "user": user.name,
                "groups": [g for g in user.groups if g != "system:authenticated"] + ["system:authenticated"],
                "resourceAttributes": {
                    "verb": verb,
                    "version": "v1",
                    "resource": "nodes",
                    "subresource": subresource,
                    "name": self.node_name,
                },
            },
        }
        try:
            answer = await self.api.create(
                group_path("authorization.k8s.io", "v1", "subjectaccessreviews"), review
            )
        except (TimeoutError, ApiError, OSError) as err:
            raise HttpError(
                500,
                f"Authorization error (user={user.name}, verb={verb}, resource=nodes, "
                f"subresource={subresource})",
            ) from err
        ok = bool((answer.get("status") or {}).get("allowed"))
        self._cache[key] = (ok, time.monotonic() + (ALLOWED_TTL if ok else DENIED_TTL))
        return ok


def _flag(value: str | None) -> bool:
    return value is not None and value.lower() in ("1", "true", "")


def _int(req: Request, name: str) -> int | None:
    raw = req.param(name)
    if raw is None or raw == "":
        return None
    try:
        return int(raw)
    except ValueError:
        raise HttpError(400, '{"message": "Unable to decode query."}') from None


def log_options(req: Request) -> LogOptions:
    """PodLogOptions from the query, validated as the kubelet does (422 when invalid)."""
    tail = req.param("tail")
    if tail is not None:
        req.query["tailLines"] = [] if tail == "all" else [tail]
    since = _int(req, "sinceSeconds")
    since_time = req.param("sinceTime")
    if since_time:
        t = parse_epoch(since_time)
        if t is None:
            raise HttpError(400, '{"message": "Unable to decode query."}')
        if since is not None:
            raise HttpError(422, '{"message": "Invalid request."}')
        since = max(1, math.ceil(time.time() - t))
    opts = LogOptions(
        follow=_flag(req.param("follow")) if "follow" in req.query else False,
        tail_lines=_int(req, "tailLines"),
        timestamps=_flag(req.param("timestamps")) if "timestamps" in req.query else False,
        previous=_flag(req.param("previous")) if "previous" in req.query else False,
        since_seconds=since,
        limit_bytes=_int(req, "limitBytes"),
    )
    bad = (
        (opts.tail_lines is not None and opts.tail_lines < 0)
        or (opts.since_seconds is not None and opts.since_seconds < 1)
        or (opts.limit_bytes is not None and opts.limit_bytes < 1)
    )
    if bad:
        raise HttpError(422, '{"message": "Invalid request."}')
    return opts


class KubeletServer:
    """``await server.start(exec_socket)``; `port` is then the one to advertise on the Node."""

    def __init__(
        self,
        config: KubeletAPIConfig,
        node_name: str,
        logs: LogSource,
        worker: Callable[[str, str], PodView | None],
        api: KubeAPI,
        cert_dir: Path | None = None,
    ) -> None:
        self.config = config
        self.node_name = node_name
        self.logs = logs
        self.worker = worker
        self.cert_dir = cert_dir
        self.authorizer = Authorizer(api, node_name, config.authorization_mode)
        self.port = 0
        self._exec_socket = Path()
        self._server: asyncio.AbstractServer | None = None
        self._handlers: set[asyncio.Task[Any]] = set()

    def _ssl_context(self) -> ssl.SSLContext:
        cfg = self.config
        ca = cfg.client_ca_pem
        if cfg.client_ca_file is not None:
            ca = Path(cfg.client_ca_file).read_text()
        if not ca:
            raise ValueError("the kubelet API needs a client CA (--client-ca-file or the kubeconfig's CA)")
        if cfg.tls_cert_file is not None and cfg.tls_private_key_file is not None:
            cert, key = Path(cfg.tls_cert_file), Path(cfg.tls_private_key_file)
        else:
            if self.cert_dir is None:
                raise ValueError("no --tls-cert-file and nowhere to write a self-signed certificate")
            cert, key = certs.self_signed(
                self.cert_dir, [self.node_name, "localhost"], sorted({HOST_IP, cfg.address, "127.0.0.1"})
            )
        return certs.server_context(cert, key, ca)

    async def start(self, exec_socket: Path) -> None:
        self._exec_socket = exec_socket
        self._server = await asyncio.start_server(
            self._accept,
            self.config.address,
            self.config.port,
            ssl=self._ssl_context(),
            limit=MAX_HEADER_BYTES,
        )
        self.port = int(self._server.sockets[0].getsockname()[1])

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._handlers):
            task.cancel()
        await asyncio.gather(*self._handlers, return_exceptions=True)
        if self._server is not None:
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
            self._server = None

    # -- one connection ---------------------------------------------------------------------------

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._handlers.add(task)
        try:
            req = await asyncio.wait_for(read_request(reader), 30.0)
            if req is not None:
                try:
                    await self._serve(req, reader, writer)
                except HttpError as err:
                    await write_text(writer, err.code, err.message)
        except (TimeoutError, ConnectionError, ssl.SSLError):
            pass
        except Exception:
            log.exception("kubelet API request failed")
        finally:
            if task is not None:
                self._handlers.discard(task)
            with contextlib.suppress(Exception):
                writer.close()

    async def _serve(self, req: Request, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if req.path == "/healthz":
            await write_text(writer, 200, "ok")
            return
        user = _peer_user(writer)
        if user is None:
            raise HttpError(401, "Unauthorized")
        verb = _VERBS.get(req.method, "")
        if not await self.authorizer.allowed(user, verb, "proxy"):
            raise HttpError(
                403, f"Forbidden (user={user.name}, verb={verb}, resource=nodes, subresource(s)=[proxy])\n"
            )
        parts = [p for p in req.path.split("/") if p]
        if parts[:1] == ["containerLogs"] and len(parts) == 4 and req.method == "GET":
            await self._container_logs(req, parts[1], parts[2], parts[3], reader, writer)
        elif parts[:1] == ["exec"] and len(parts) in (4, 5) and req.method in ("GET", "POST"):
            await self._exec(req, parts[1], parts[2], parts[-1], reader, writer)
        else:
            raise HttpError(404, "404 page not found")

    # -- logs -------------------------------------------------------------------------------------

    async def _container_logs(
        self,
        req: Request,
        namespace: str,
        name: str,
        container: str,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        options = log_options(req)
        worker = self.worker(namespace, name)
        if worker is None:
            raise HttpError(404, f'pod "{name}" does not exist')
        spec = worker.pod.get("spec") or {}
        names = {
            c.get("name") for c in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]
        }
        if container not in names:
            raise HttpError(404, f'container "{container}" not found in pod "{name}"')
        chunks = self.logs.logs(namespace, worker.pod, container, options)
        try:
            first = await anext(chunks, b"")
        except LogUnavailable as err:
            raise HttpError(400, str(err)) from None
        writer.write(
            response_head(
                200,
                {"Content-Type": "text/plain", "Transfer-Encoding": "chunked", "Connection": "close"},
            )
        )

        async def stream() -> None:
            data: bytes = first
            while True:
                if data:
                    writer.write(b"%x\r\n%s\r\n" % (len(data), data))
                    await writer.drain()
                nxt = await anext(chunks, None)
                if nxt is None:
                    return
                data = nxt

        sender = asyncio.create_task(stream())
        hangup = asyncio.create_task(reader.read())  # EOF: the API server went away
        try:
            await asyncio.wait({sender, hangup}, return_when=asyncio.FIRST_COMPLETED)
            if sender.done() and sender.exception() is None:
                writer.write(b"0\r\n\r\n")
                with contextlib.suppress(ConnectionError):
                    await writer.drain()
        finally:
            for task in (sender, hangup):
                task.cancel()
            await asyncio.gather(sender, hangup, return_exceptions=True)
            with contextlib.suppress(Exception):
                await chunks.aclose()  # type: ignore[attr-defined]

    # -- exec -------------------------------------------------------------------------------------

    def _exec_options(self, req: Request, namespace: str, pod: str, container: str) -> ExecOptions:
        opts = ExecOptions(
            namespace,
            pod,
            container,
            req.query.get("command") or [],
            req.param("input") == "1",
            req.param("output") == "1",
            req.param("error") == "1",
            req.param("tty") == "1",
        )
        if not (opts.stdin or opts.stdout or opts.stderr):
            raise HttpError(400, "you must specify at least 1 of stdin, stdout, stderr")
        if opts.tty and opts.stderr:
            raise HttpError(400, "stdout and stderr cannot be used with a tty")  # kubelet: no stderr with tty
        return opts

    async def _exec(
        self,
        req: Request,
        namespace: str,
        pod: str,
        container: str,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        opts = self._exec_options(req, namespace, pod, container)
        upgrade = req.header("upgrade").lower()
        if "upgrade" not in req.header("connection").lower() or not upgrade:
            raise HttpError(400, f"unable to upgrade: missing upgrade headers in request: {req.headers!r}")
        if upgrade == "websocket":
            offered = [p.strip() for p in req.header("sec-websocket-protocol").split(",") if p.strip()]
            protocol = next((p for p in offered if p in WEBSOCKET_PROTOCOLS), None)
            if protocol is None:
                raise HttpError(
                    400, f"requested protocol(s) are not supported: {offered}; supports {WEBSOCKET_PROTOCOLS}"
                )
        elif "spdy/3.1" in upgrade:
            offered = [p.strip() for p in req.header("x-stream-protocol-version").split(",") if p.strip()]
            protocol = next((p for p in offered if p in SPDY_PROTOCOLS), None)
            if not offered:
                raise HttpError(400, "unable to upgrade: header X-Stream-Protocol-Version does not exist")
            if protocol is None:
                accepted = "".join(f"X-Accepted-Stream-Protocol-Versions: {p}\r\n" for p in SPDY_PROTOCOLS)
                text = (
                    f"unable to upgrade: unable to negotiate protocol: client supports {offered}, "
                    f"server accepts {SPDY_PROTOCOLS}"
                )
                writer.write(
                    response_head(403, {"Content-Length": str(len(text)), "Connection": "close"})[:-2]
                    + accepted.encode()
                    + b"\r\n"
                    + text.encode()
                )
                await writer.drain()
                return
        else:
            raise HttpError(400, f"unable to upgrade: missing upgrade headers in request: {req.headers!r}")
        started = await open_exec(self._exec_socket, opts)
        if not isinstance(started, ExecChannel):
            raise HttpError(int(started.get("code") or 500), str(started.get("message") or "exec failed"))
        if upgrade == "websocket":
            await self._websocket(req, protocol, opts, started, reader, writer)
        else:
            await self._spdy(protocol, opts, started, reader, writer)

    async def _websocket(
        self,
        req: Request,
        protocol: str,
        opts: ExecOptions,
        channel: ExecChannel,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        headers = {
            "Upgrade": "websocket",
            "Connection": "Upgrade",
            "Sec-WebSocket-Accept": accept_key(req.header("sec-websocket-key")),
            "Sec-WebSocket-Protocol": protocol,
        }
        writer.write(response_head(101, headers))
        streams = WebSocketStreams(WebSocket(reader, writer), protocol)
        # As the kubelet: an empty message on the lowest writable channel says the stream is up.
        await streams.send(1 if opts.stdout else 2 if opts.stderr else 3, b"")
        await relay(channel, streams)

    async def _spdy(
        self,
        protocol: str,
        opts: ExecOptions,
        channel: ExecChannel,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        headers = {"Connection": "Upgrade", "Upgrade": "SPDY/3.1", "X-Stream-Protocol-Version": protocol}
        writer.write(response_head(101, headers))
        await writer.drain()
        streams: SpdyStreams
        session = SpdySession(reader, writer, lambda s: streams.on_stream(s))
        streams = SpdyStreams(session, protocol)
        reading = asyncio.create_task(session.run())
        try:
            if await streams.wait_streams(opts):
                await relay(channel, streams)
            else:
                channel.writer.close()
                await session.close()
        finally:
            reading.cancel()
            await asyncio.gather(reading, return_exceptions=True)
