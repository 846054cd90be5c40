"""A lean keep-alive HTTP/1.1 client for the API's request/response calls.

Why not aiohttp for these: its client spends ~150 µs of CPU per request, this one ~50 µs, and an
operator creating 2,000 children spends most of its time there -- enough to make the operator,
not the API server, the bottleneck (benchmarks/operator_bench.py prints the CPU split). Watches
(long streams) and proxied connections still go through aiohttp.

What it does: one request at a time per connection; a bounded pool whose idle connections are
reused newest first and dropped once the server closes them or they sit idle too long;
Content-Length, chunked and read-until-close bodies; `Connection: close`; TLS through an
SSLContext with an optional SNI name; a total deadline per request. A connection goes back to
the pool only after a complete response; on an error, timeout or cancellation it is closed, so
a late answer can never be read as the answer to a later request.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

MAX_HEAD_BYTES = 1 << 20
"""A response head larger than this is refused: no API server sends one."""
IDLE_SECONDS = 60.0
"""An idle connection older than this is closed instead of reused: servers drop idle ones, but
late (kube-apiserver after 90 s, aiohttp's server after 75 s), and every connection dropped
early is a TLS handshake the API server pays for again on the next burst of writes."""
_TARGET_SAFE = "/:@!$&'()*+,;=-._~%?"
"""Characters left as they are in a request target: percent-escapes are kept, the rest quoted."""
_NO_BODY_STATUSES = frozenset({204, 304})


class ServerDisconnected(ConnectionError):
    """The server closed the connection before a complete response."""


class HTTPProtocolError(ConnectionError):
    """The server's answer is not valid HTTP/1.1."""


@dataclass(slots=True)
class Response:
    status: int
    headers: dict[str, str]
    """Lower-cased names; repeated headers joined with ', '."""
    body: bytes


class _Connection(asyncio.Protocol):
    """One TCP (or TLS) connection and an incremental parser for the response on it."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.idle_since = 0.0
        self.received_any = False
        self._buf = bytearray()
        self._waiter: asyncio.Future[Response] | None = None
        self._head_request = False
        self._reset_parser()

    def _reset_parser(self) -> None:
        self._status = 0
        self._headers: dict[str, str] | None = None
        self._mode = ""  # "length" | "chunked" | "eof" | "none"
        self._remaining = 0
        self._chunk_state = "size"  # "size" | "data" | "trailer"
        self._body: list[bytes] = []
        self._keep_alive = True

    # -- asyncio.Protocol ------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        if self._waiter is None or self._waiter.done():
            self.close()  # bytes nobody asked for: this connection can no longer be trusted
            return
        self.received_any = True
        self._buf += data
        self._advance()

    def eof_received(self) -> bool:
        self.closed = True
        if self._waiter is not None and not self._waiter.done():
            self._advance(eof=True)
        return False  # let the transport close itself

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self._waiter is not None and not self._waiter.done():
            self._advance(eof=True)
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_exception(ServerDisconnected(f"server closed the connection: {exc or 'EOF'}"))

    # -- use --------------------------------------------------------------------------------

    async def exchange(self, payload: bytes, head_request: bool) -> Response:
        assert self.transport is not None
        self._reset_parser()
        self.received_any = False
        self._head_request = head_request
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            self.transport.write(payload)
            return await self._waiter
        finally:
            self._waiter = None

    @property
    def reusable(self) -> bool:
        return not self.closed and self._keep_alive and not self._buf

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    # -- parsing ---------------------------------------------------------------------------

    def _advance(self, eof: bool = False) -> None:
        """Consume what the buffer holds; resolve the waiter once a whole response is in."""
        assert self._waiter is not None
        try:
            while self._headers is None:
                if not self._parse_head(eof):
                    return
            if self._parse_body(eof):
                body = b"".join(self._body)
                self._waiter.set_result(Response(self._status, self._headers, body))
        except HTTPProtocolError as exc:
            self.close()
            self._waiter.set_exception(exc)

    def _parse_head(self, eof: bool) -> bool:
        end = self._buf.find(b"\r\n\r\n")
        if end < 0:
            if len(self._buf) > MAX_HEAD_BYTES:
                raise HTTPProtocolError(f"response head larger than {MAX_HEAD_BYTES} bytes")
            if eof and self._buf:
                raise HTTPProtocolError("connection closed in the middle of the response head")
            return False
        lines = self._buf[:end].decode("latin-1").split("\r\n")
        del self._buf[: end + 4]
        version, _, rest = lines[0].partition(" ")
        code = rest[:3]
        if not version.startswith("HTTP/1.") or not code.isdigit():
            raise HTTPProtocolError(f"not an HTTP/1.x status line: {lines[0][:100]!r}")
        status = int(code)
        if 100 <= status < 200 and status != 101:
            return True  # an informational answer: the real one follows
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if not sep:
                raise HTTPProtocolError(f"malformed header line: {line[:100]!r}")
            key = name.strip().lower()
            value = value.strip()
            headers[key] = f"{headers[key]}, {value}" if key in headers else value
        self._status, self._headers = status, headers
        connection = headers.get("connection", "").lower()
        self._keep_alive = version == "HTTP/1.1" and "close" not in connection
        if self._head_request or status in _NO_BODY_STATUSES or status == 101:
            self._mode = "none"
        elif "chunked" in headers.get("transfer-encoding", "").lower():
            self._mode = "chunked"
        elif "content-length" in headers:
            length = headers["content-length"]
            if not length.isdigit():
                raise HTTPProtocolError(f"bad Content-Length {length[:40]!r}")
            self._mode, self._remaining = "length", int(length)
        else:
            self._mode, self._keep_alive = "eof", False
        return True

    def _parse_body(self, eof: bool) -> bool:
        buf = self._buf
        if self._mode == "none":
            return True
        if self._mode == "length":
            take = min(self._remaining, len(buf))
            if take:
                self._body.append(bytes(buf[:take]))
                del buf[:take]
                self._remaining -= take
            if self._remaining and eof:
                raise HTTPProtocolError("connection closed before the whole body arrived")
            return self._remaining == 0
        if self._mode == "eof":
            if buf:
                self._body.append(bytes(buf))
                buf.clear()
            return eof
        return self._parse_chunks(eof)

    def _parse_chunks(self, eof: bool) -> bool:
        buf = self._buf
        while True:
            if self._chunk_state == "size":
                end = buf.find(b"\r\n")
                if end < 0:
                    break
                size_text = buf[:end].split(b";", 1)[0].strip()
                try:
                    size = int(size_text, 16)
                except ValueError:
                    raise HTTPProtocolError(f"bad chunk size {bytes(size_text[:20])!r}") from None
                del buf[: end + 2]
                self._chunk_state, self._remaining = ("data", size + 2) if size else ("trailer", 0)
            elif self._chunk_state == "data":
                if len(buf) < self._remaining:
                    break
                if buf[self._remaining - 2 : self._remaining] != b"\r\n":
                    raise HTTPProtocolError("chunk not followed by CRLF")
                self._body.append(bytes(buf[: self._remaining - 2]))
                del buf[: self._remaining]
                self._chunk_state = "size"
            else:  # trailer lines, then the empty line that ends the message
                end = buf.find(b"\r\n")
                if end < 0:
                    break
                del buf[: end + 2]
                if end == 0:
                    return True
        if eof:
            raise HTTPProtocolError("connection closed in the middle of a chunked body")
        return False


class ConnectionPool:
    """Keep-alive connections to one server (`http(s)://host[:port][/prefix]`)."""

    def __init__(
        self,
        url: str,
        *,
        ssl_context: ssl.SSLContext | None = None,
        server_hostname: str | None = None,
        max_connections: int = 512,
        user_agent: str = "kubetrain",
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https"):
            raise ValueError(f"unsupported URL scheme in {url!r}: use http:// or https://")
        if not parts.hostname:
            raise ValueError(f"no host in {url!r}")
        self._host = parts.hostname
        self._port = parts.port or (443 if parts.scheme == "https" else 80)
        self._ssl: ssl.SSLContext | None = None
        if parts.scheme == "https":
            self._ssl = ssl_context or ssl.create_default_context()
        self._server_hostname = server_hostname if self._ssl else None
        self._prefix = parts.path.rstrip("/")
        netloc = parts.netloc.rpartition("@")[2]
        self._fixed_headers = f"Host: {netloc}\r\nUser-Agent: {user_agent}\r\n"
        self._slots = asyncio.Semaphore(max(1, max_connections))
        self._idle: list[_Connection] = []
        self.connections_opened = 0

    async def request(
        self,
        method: str,
        target: str,
        headers: Mapping[str, str],
        body: bytes | None,
        *,
        timeout: float,
        retry_stale: bool = True,
    ) -> Response:
        """Send one request and read the whole answer within `timeout` seconds.

        `target` is the path with its query string. A reused connection that fails before any
        answer byte is retried once on a fresh connection when `retry_stale` (the server may
        have closed it while idle, so the request was most likely never read).
        """
        payload = self._encode(method, target, headers, body)
        async with self._slots, asyncio.timeout(timeout):
            retried = False
            while True:
                conn = self._take_idle()
                reused = conn is not None
                if conn is None:
                    conn = await self._connect()
                try:
                    response = await conn.exchange(payload, method == "HEAD")
                except ServerDisconnected:
                    conn.close()
                    if reused and not conn.received_any and retry_stale and not retried:
                        retried = True
                        continue
                    raise
                except BaseException:
                    conn.close()
                    raise
                if conn.reusable:
                    conn.idle_since = time.monotonic()
                    self._idle.append(conn)
                else:
                    conn.close()
                return response

    def close(self) -> None:
        while self._idle:
            self._idle.pop().close()

    def _encode(self, method: str, target: str, headers: Mapping[str, str], body: bytes | None) -> bytes:
        request_line = f"{method} {self._prefix}{quote(target, safe=_TARGET_SAFE)} HTTP/1.1\r\n"
        lines = [request_line, self._fixed_headers]
        for name, value in headers.items():
            if "\r" in value or "\n" in value:
                raise ValueError(f"header {name} contains a line break")
            lines.append(f"{name}: {value}\r\n")
        if body is not None or method in ("POST", "PUT", "PATCH"):
            lines.append(f"Content-Length: {len(body or b'')}\r\n")
        lines.append("\r\n")
        head = "".join(lines).encode("latin-1")
        return head + body if body else head

    def _take_idle(self) -> _Connection | None:
        if not self._idle:
            return None
        stale_before = time.monotonic() - IDLE_SECONDS
        while self._idle and self._idle[0].idle_since < stale_before:
            self._idle.pop(0).close()  # the oldest first: they are the ones the server dropped
        while self._idle:
            conn = self._idle.pop()
            if not conn.closed:
                return conn
        return None

    async def _connect(self) -> _Connection:
        loop = asyncio.get_running_loop()
        if self._ssl is None:
            _, conn = await loop.create_connection(_Connection, self._host, self._port)
        else:
            _, conn = await loop.create_connection(
                _Connection, self._host, self._port, ssl=self._ssl, server_hostname=self._server_hostname
            )
        self.connections_opened += 1
        return conn
