"""The lean HTTP/1.1 pool against real sockets: framing, keep-alive, stale connections, deadlines.

Each test runs a small asyncio server that answers with scripted raw bytes, so the odd answers a
real API server or proxy can give (chunked bodies, split writes, Connection: close, a connection
dropped while idle) are produced on the wire, not simulated inside the client.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

import pytest

from kubetrain.kube.http11 import IDLE_SECONDS, ConnectionPool, HTTPProtocolError, ServerDisconnected

Handler = Callable[["Exchange"], Awaitable[None]]


@dataclass
class Exchange:
    """One request as the server read it, and the stream to answer on."""

    request_line: str
    headers: dict[str, str]
    body: bytes
    writer: asyncio.StreamWriter
    connection: int
    index_on_connection: int


@dataclass
class RawServer:
    handler: Handler
    requests: list[Exchange] = field(default_factory=list)
    connections: int = 0
    open_now: int = 0
    open_peak: int = 0
    port: int = 0

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.open_now += 1
        self.open_peak = max(self.open_peak, self.open_now)
        conn, index = self.connections, 0
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                lines = head.decode("latin-1").split("\r\n")
                headers = {}
                for line in lines[1:]:
                    if line:
                        name, _, value = line.partition(":")
                        headers[name.strip().lower()] = value.strip()
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                exchange = Exchange(lines[0], headers, body, writer, conn, index)
                self.requests.append(exchange)
                index += 1
                await self.handler(exchange)
                if writer.is_closing():
                    return
        finally:
            self.open_now -= 1
            writer.close()


Start = Callable[[Handler], Awaitable[RawServer]]


@pytest.fixture
async def raw_server() -> AsyncIterator[Start]:
    servers: list[asyncio.Server] = []

    async def start(handler: Handler) -> RawServer:
        state = RawServer(handler)
        server = await asyncio.start_server(state.serve, "127.0.0.1", 0)
        servers.append(server)
        state.port = server.sockets[0].getsockname()[1]
        return state

    yield start
    for server in servers:
        server.close()


def answer(status: str, body: bytes = b"", extra: str = "") -> bytes:
    return f"HTTP/1.1 {status}\r\nContent-Length: {len(body)}\r\n{extra}\r\n".encode() + body


async def ok(exchange: Exchange) -> None:
    exchange.writer.write(answer("200 OK", exchange.request_line.encode()))


async def test_keep_alive_reuses_one_connection(raw_server: Start) -> None:
    server = await raw_server(ok)
    pool = ConnectionPool(f"http://127.0.0.1:{server.port}")
    for i in range(3):
        resp = await pool.request("GET", f"/api/v1/pods/{i}", {"Accept": "application/json"}, None, timeout=5)
        assert resp.status == 200
        assert resp.body == f"GET /api/v1/pods/{i} HTTP/1.1".encode()
    assert server.connections == 1
    assert server.requests[0].headers["host"] == f"127.0.0.1:{server.port}"
    assert server.requests[0].headers["accept"] == "application/json"
    pool.close()


async def test_body_headers_prefix_and_quoting(raw_server: Start) -> None:
    server = await raw_server(ok)
    pool = ConnectionPool(f"http://127.0.0.1:{server.port}/k8s/clusters/c-1/", user_agent="kubetrain/test")
    body = b'{"kind":"Pod"}'
    resp = await pool.request(
        "POST", "/api/v1/namespaces/a b/pods?labelSelector=x%3Dy", {"Content-Type": "j"}, body, timeout=5
    )
    assert resp.body == b"POST /k8s/clusters/c-1/api/v1/namespaces/a%20b/pods?labelSelector=x%3Dy HTTP/1.1"
    seen = server.requests[0]
    assert seen.body == body
    assert seen.headers["content-length"] == str(len(body))
    assert seen.headers["user-agent"] == "kubetrain/test"
    with pytest.raises(ValueError, match="line break"):
        await pool.request("GET", "/x", {"Authorization": "Bearer a\r\nX-Evil: 1"}, None, timeout=5)
    pool.close()


async def test_chunked_body_split_across_writes(raw_server: Start) -> None:
    async def chunked(exchange: Exchange) -> None:
        wire = (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Repeated: a\r\nX-Repeated: b\r\n\r\n"
            b"5;ext=1\r\nhello\r\n1\r\n \r\nB\r\nchunked wor\r\n2\r\nld\r\n0\r\nX-Trailer: t\r\n\r\n"
        )
        for i in range(0, len(wire), 7):  # seven bytes at a time: every parser state is split
            exchange.writer.write(wire[i : i + 7])
            await exchange.writer.drain()
            await asyncio.sleep(0)

    server = await raw_server(chunked)
    pool = ConnectionPool(f"http://127.0.0.1:{server.port}")
    for _ in range(2):
        resp = await pool.request("GET", "/", {}, None, timeout=5)
        assert resp.body == b"hello chunked world"
        assert resp.headers["x-repeated"] == "a, b"
    assert server.connections == 1  # a chunked answer leaves the connection reusable
    pool.close()


async def test_connection_close_and_read_until_eof(raw_server: Start) -> None:
    async def closing(exchange: Exchange) -> None:
        if exchange.connection % 2:
            exchange.writer.write(answer("200 OK", b"closing", "Connection: close\r\n"))
            await exchange.writer.drain()
            await asyncio.sleep(0.2)  # announced, not yet done: the client must not reuse it
        else:  # no length at all: the body is everything until the server closes
            exchange.writer.write(b"HTTP/1.1 200 OK\r\n\r\nuntil eof")
            await exchange.writer.drain()
        exchange.writer.close()

    server = await raw_server(closing)
    pool = ConnectionPool(f"http://127.0.0.1:{server.port}")
    bodies = [(await pool.request("GET", "/", {}, None, timeout=5, retry_stale=False)).body for _ in range(4)]
    assert bodies == [b"closing", b"until eof", b"closing", b"until eof"]
    assert server.connections == 4
    pool.close()


async def test_no_body_statuses_and_informational_answers(
    raw_server: Start,
) -> None:
    async def varied(exchange: Exchange) -> None:
        if exchange.index_on_connection == 0:
            exchange.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n" + answer("201 Created", b"{}"))
        else:
            exchange.writer.write(b"HTTP/1.1 204 No Content\r\n\r\n")

    server = await raw_server(varied)
    pool = ConnectionPool(f"http://127.0.0.1:{server.port}")
    first = await pool.request("POST", "/", {}, b"{}", timeout=5)
    second = await pool.request("DELETE", "/", {}, None, timeout=5)
    assert (first.status, first.body, second.status, second.body) == (201, b"{}", 204, b"")
    assert server.connections == 1
    pool.close()


async def test_connection_dropped_while_idle_is_retried_on_a_fresh_one(
    raw_server: Start,
) -> None:
    async def drops_second(exchange: Exchange) -> None:
        if exchange.index_on_connection == 1:
            exchange.writer.transport.abort()  # the request was never answered
            return
        exchange.writer.write(answer("200 OK", b"fine"))

    server = await raw_server(drops_second)
    pool = ConnectionPool(f"http://127.0.0.1:{server.port}")
    assert (await pool.request("GET", "/", {}, None, timeout=5)).body == b"fine"
    assert (await pool.request("GET", "/", {}, None, timeout=5)).body == b"fine"
    assert server.connections == 2
    # A request that must not be repeated surfaces the failure instead.
    with pytest.raises(ServerDisconnected):
        await pool.request("POST", "/", {}, b"{}", timeout=5, retry_stale=False)
    pool.close()


async def test_deadline_discards_the_connection(raw_server: Start) -> None:
    release = asyncio.Event()

    async def slow_first(exchange: Exchange) -> None:
        if exchange.connection == 1:
            await release.wait()  # answers only after the client gave up
        exchange.writer.write(answer("200 OK", f"answer {exchange.connection}".encode()))

    server = await raw_server(slow_first)
    pool = ConnectionPool(f"http://127.0.0.1:{server.port}")
    with pytest.raises(TimeoutError):
        await pool.request("GET", "/", {}, None, timeout=0.2)
    release.set()
    # The late answer on connection 1 is never read as the answer to the next request.
    assert (await pool.request("GET", "/", {}, None, timeout=5)).body == b"answer 2"
    pool.close()


async def test_cancelled_request_does_not_poison_the_pool(
    raw_server: Start,
) -> None:
    release = asyncio.Event()

    async def held(exchange: Exchange) -> None:
        if exchange.connection == 1:
            await release.wait()
        exchange.writer.write(answer("200 OK", f"answer {exchange.connection}".encode()))

    server = await raw_server(held)
    pool = ConnectionPool(f"http://127.0.0.1:{server.port}")
    task = asyncio.create_task(pool.request("GET", "/", {}, None, timeout=5))
    while not server.requests:
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    release.set()
    assert (await pool.request("GET", "/", {}, None, timeout=5)).body == b"answer 2"
    pool.close()


@pytest.mark.parametrize(
    "wire, message",
    [
        (b"SSH-2.0-OpenSSH\r\n\r\n", "not an HTTP/1.x status line"),
        (b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", "malformed header line"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "bad Content-Length"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "bad chunk size"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabXY", "chunk not followed by CRLF"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", "before the whole body"),
    ],
)
async def test_malformed_answers_raise_protocol_errors(raw_server: Start, wire: bytes, message: str) -> None:
    async def broken(exchange: Exchange) -> None:
        exchange.writer.write(wire)
        await exchange.writer.drain()
        exchange.writer.close()

    server = await raw_server(broken)
    pool = ConnectionPool(f"http://127.0.0.1:{server.port}")
    with pytest.raises(HTTPProtocolError, match=message):
        await pool.request("GET", "/", {}, None, timeout=5)
    pool.close()


async def test_connections_are_bounded(raw_server: Start) -> None:
    async def slowish(exchange: Exchange) -> None:
        await asyncio.sleep(0.02)
        exchange.writer.write(answer("200 OK", b"x"))

    server = await raw_server(slowish)
    pool = ConnectionPool(f"http://127.0.0.1:{server.port}", max_connections=3)
    await asyncio.gather(*(pool.request("GET", "/", {}, None, timeout=5) for _ in range(12)))
    assert server.open_peak == 3
    assert server.connections == 3
    pool.close()


def test_rejects_urls_it_cannot_serve() -> None:
    with pytest.raises(ValueError, match="unsupported URL scheme"):
        ConnectionPool("unix:///var/run/kube.sock")
    with pytest.raises(ValueError, match="no host"):
        ConnectionPool("http:///api")


async def test_idle_connections_live_as_long_as_api_servers_keep_them(raw_server: Start) -> None:
    """kube-apiserver keeps an idle connection 90 s (aiohttp's server 75 s): one reused after 45 s
    saves the server a TLS handshake; one idle past IDLE_SECONDS is replaced before it is used."""

    async def fine(exchange: Exchange) -> None:
        exchange.writer.write(answer("200 OK", b"fine"))

    def age_idle_connections(seconds: float) -> None:
        for conn in pool._idle:
            conn.idle_since -= seconds

    server = await raw_server(fine)
    pool = ConnectionPool(f"http://127.0.0.1:{server.port}")
    await pool.request("GET", "/", {}, None, timeout=5)
    age_idle_connections(45)
    await pool.request("GET", "/", {}, None, timeout=5)
    assert server.connections == 1
    age_idle_connections(IDLE_SECONDS + 1)
    await pool.request("GET", "/", {}, None, timeout=5)
    assert server.connections == 2
    assert 45 < IDLE_SECONDS < 75
    pool.close()
