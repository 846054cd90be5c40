"""SPDY/3.1 framing, server side: just what Kubernetes' exec streams use.

kube-apiserver talks to the kubelet with SPDY/3.1 for exec when it translates a client's
WebSocket (a node that does not declare ``ExtendWebSocketsToKubelet``) and whenever the client
itself speaks SPDY (``kubectl`` with ``KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false``, older client-go
tools): it upgrades with ``Upgrade: SPDY/3.1``, then opens one stream per channel, each named by
a ``streamType`` header (``error``, ``stdin``, ``stdout``, ``stderr``, ``resize``).

What is implemented, as moby/spdystream (the Go side) needs it: control frames SYN_STREAM (read),
SYN_REPLY (written at once, empty headers), RST_STREAM, SETTINGS, PING (echoed), GOAWAY,
HEADERS and WINDOW_UPDATE (read and ignored: spdystream does no flow control), and DATA frames
with FIN. Header blocks are zlib streams primed with the SPDY/3 dictionary, one compression
context per direction for the whole session, flushed with Z_SYNC_FLUSH after each block.
Streams are only ever opened by the client; the server never pushes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import struct
import zlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

log = logging.getLogger(__name__)

VERSION = 3
SYN_STREAM, SYN_REPLY, RST_STREAM, SETTINGS, PING, GOAWAY, HEADERS, WINDOW_UPDATE = 1, 2, 3, 4, 6, 7, 8, 9
FLAG_FIN = 0x01
MAX_CHUNK = 1 << 16

# The SPDY/3 header compression dictionary (draft-mbelshe-httpbis-spdy-00, section 2.6.10.1).
SPDY3_DICTIONARY = (
    b"\x00\x00\x00\x07options\x00\x00\x00\x04head\x00\x00\x00\x04post\x00\x00\x00\x03put\x00\x00\x00"
    b"\x06delete\x00\x00\x00\x05trace\x00\x00\x00\x06accept\x00\x00\x00\x0eaccept-charset\x00\x00\x00"
    b"\x0faccept-encoding\x00\x00\x00\x0faccept-language\x00\x00\x00\x0daccept-ranges\x00\x00\x00\x03a"
    b"ge\x00\x00\x00\x05allow\x00\x00\x00\x0dauthorization\x00\x00\x00\x0dcache-control\x00\x00\x00"
    b"\x0aconnection\x00\x00\x00\x0ccontent-base\x00\x00\x00\x10content-encoding\x00\x00\x00\x10conten"
    b"t-language\x00\x00\x00\x0econtent-length\x00\x00\x00\x10content-location\x00\x00\x00\x0bcontent-"
    b"md5\x00\x00\x00\x0dcontent-range\x00\x00\x00\x0ccontent-type\x00\x00\x00\x04date\x00\x00\x00\x04"
    b"etag\x00\x00\x00\x06expect\x00\x00\x00\x07expires\x00\x00\x00\x04from\x00\x00\x00\x04host\x00"
    b"\x00\x00\x08if-match\x00\x00\x00\x11if-modified-since\x00\x00\x00\x0dif-none-match\x00\x00\x00"
    b"\x08if-range\x00\x00\x00\x13if-unmodified-since\x00\x00\x00\x0dlast-modified\x00\x00\x00\x08loca"
    b"tion\x00\x00\x00\x0cmax-forwards\x00\x00\x00\x06pragma\x00\x00\x00\x12proxy-authenticate\x00\x00"
    b"\x00\x13proxy-authorization\x00\x00\x00\x05range\x00\x00\x00\x07referer\x00\x00\x00\x0bretry-aft"
    b"er\x00\x00\x00\x06server\x00\x00\x00\x02te\x00\x00\x00\x07trailer\x00\x00\x00\x11transfer-encodi"
    b"ng\x00\x00\x00\x07upgrade\x00\x00\x00\x0auser-agent\x00\x00\x00\x04vary\x00\x00\x00\x03via\x00"
    b"\x00\x00\x07warning\x00\x00\x00\x10www-authenticate\x00\x00\x00\x06method\x00\x00\x00\x03get\x00"
    b"\x00\x00\x06status\x00\x00\x00\x06200 OK\x00\x00\x00\x07version\x00\x00\x00\x08HTTP/1.1\x00\x00"
    b"\x00\x03url\x00\x00\x00\x06public\x00\x00\x00\x0aset-cookie\x00\x00\x00\x0akeep-alive\x00\x00"
    b"\x00\x06origin1001012012022052063003023033043053063074024054064074084094104114124134144154164175"
    b"02504505203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request401 U"
    b"nauthorized403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented503 Service Una"
    b"vailableJan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, "
    b"Sun, GMTchunked,text/html,image/png,image/jpg,image/gif,application/xml,application/xhtml+xml,te"
    b"xt/plain,text/javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,u"
    b"tf-,*,enq=0."
)


def encode_headers(headers: dict[str, list[str]]) -> bytes:
    """A name/value header block (uncompressed): names lower-cased, values joined by NUL."""
    out = [struct.pack(">I", len(headers))]
    for name, values in headers.items():
        key, value = name.lower().encode(), "\x00".join(values).encode()
        out += [struct.pack(">I", len(key)), key, struct.pack(">I", len(value)), value]
    return b"".join(out)


def decode_headers(block: bytes) -> dict[str, list[str]]:
    (count,) = struct.unpack_from(">I", block, 0)
    pos, headers = 4, {}
    for _ in range(count):
        (n,) = struct.unpack_from(">I", block, pos)
        name = block[pos + 4 : pos + 4 + n].decode().lower()
        pos += 4 + n
        (n,) = struct.unpack_from(">I", block, pos)
        headers[name] = block[pos + 4 : pos + 4 + n].decode().split("\x00")
        pos += 4 + n
    return headers


def control_frame(kind: int, flags: int, payload: bytes) -> bytes:
    return struct.pack(">HHI", 0x8000 | VERSION, kind, (flags << 24) | len(payload)) + payload


def data_frame(stream_id: int, data: bytes, fin: bool = False) -> bytes:
    return struct.pack(">II", stream_id & 0x7FFFFFFF, ((FLAG_FIN if fin else 0) << 24) | len(data)) + data


@dataclass
class SpdyStream:
    """One client-opened stream: `read` until b"" (FIN or reset), `write`, `close` (our FIN)."""

    stream_id: int
    headers: dict[str, list[str]]
    session: SpdySession
    inbound: asyncio.Queue[bytes] = field(default_factory=asyncio.Queue)
    remote_closed: bool = False
    local_closed: bool = False

    def header(self, name: str) -> str:
        return (self.headers.get(name.lower()) or [""])[0]

    async def read(self) -> bytes:
        return await self.inbound.get()

    async def write(self, data: bytes) -> None:
        for start in range(0, len(data), MAX_CHUNK):
            await self.session.send(data_frame(self.stream_id, data[start : start + MAX_CHUNK]))

    async def close(self) -> None:
        if not self.local_closed:
            self.local_closed = True
            await self.session.send(data_frame(self.stream_id, b"", fin=True))

    def _end_remote(self) -> None:
        if not self.remote_closed:
            self.remote_closed = True
            self.inbound.put_nowait(b"")


class SpdySession:
    """Server side of one upgraded connection; `on_stream` sees each stream the client opens."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        on_stream: Callable[[SpdyStream], Awaitable[None] | None],
    ) -> None:
        self.reader, self.writer = reader, writer
        self.on_stream = on_stream
        self.streams: dict[int, SpdyStream] = {}
        self.closed = asyncio.Event()
        self._inflate = zlib.decompressobj(zdict=SPDY3_DICTIONARY)
        self._deflate = zlib.compressobj(9, zlib.DEFLATED, 15, 8, zlib.Z_DEFAULT_STRATEGY, SPDY3_DICTIONARY)
        self._last_stream = 0
        self._gone = False

    async def send(self, frame: bytes) -> None:
        if self._gone:
            return
        try:
            self.writer.write(frame)
            await self.writer.drain()
        except (ConnectionError, RuntimeError):
            self._gone = True

    def _compress(self, headers: dict[str, list[str]]) -> bytes:
        block = self._deflate.compress(encode_headers(headers))
        return block + self._deflate.flush(zlib.Z_SYNC_FLUSH)

    async def _reply(self, stream_id: int) -> None:
        payload = struct.pack(">I", stream_id) + self._compress({})
        await self.send(control_frame(SYN_REPLY, 0, payload))

    async def run(self) -> None:
        """Read frames until the client goes away; every open stream then reads EOF."""
        try:
            while not self._gone:
                head = await self.reader.readexactly(8)
                length = int.from_bytes(head[5:8], "big")
                flags = head[4]
                payload = await self.reader.readexactly(length) if length else b""
                if head[0] & 0x80:
                    if not await self._control(int.from_bytes(head[2:4], "big"), flags, payload):
                        return
                else:
                    self._data(int.from_bytes(head[0:4], "big") & 0x7FFFFFFF, flags, payload)
        except (asyncio.IncompleteReadError, ConnectionError, zlib.error, struct.error, UnicodeDecodeError):
            return
        finally:
            for stream in self.streams.values():
                stream._end_remote()
            self.closed.set()

    async def _control(self, kind: int, flags: int, payload: bytes) -> bool:
        if kind == SYN_STREAM:
            stream_id = int.from_bytes(payload[0:4], "big") & 0x7FFFFFFF
            headers = decode_headers(self._inflate.decompress(payload[10:]))
            stream = SpdyStream(stream_id, headers, self)
            self.streams[stream_id] = stream
            self._last_stream = max(self._last_stream, stream_id)
            await self._reply(stream_id)
            if flags & FLAG_FIN:
                stream._end_remote()
            result = self.on_stream(stream)
            if result is not None:
                await result
        elif kind == HEADERS:
            self._inflate.decompress(payload[4:])  # keeps the shared zlib context in step
        elif kind == RST_STREAM:
            reset = self.streams.get(int.from_bytes(payload[0:4], "big") & 0x7FFFFFFF)
            if reset is not None:
                reset.local_closed = True
                reset._end_remote()
        elif kind == PING:
            await self.send(control_frame(PING, 0, payload))
        elif kind == GOAWAY:
            return False
        return True  # SETTINGS, WINDOW_UPDATE, SYN_REPLY: nothing to do for a server without push

    def _data(self, stream_id: int, flags: int, payload: bytes) -> None:
        stream = self.streams.get(stream_id)
        if stream is None or stream.remote_closed:
            return
        if payload:
            stream.inbound.put_nowait(payload)
        if flags & FLAG_FIN:
            stream._end_remote()

    async def close(self) -> None:
        """GOAWAY (status OK) and hang up."""
        await self.send(control_frame(GOAWAY, 0, struct.pack(">II", self._last_stream, 0)))
        self._gone = True
        with contextlib.suppress(Exception):
            self.writer.close()
