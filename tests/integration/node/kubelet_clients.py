"""Clients of the kubelet API's exec, as kube-apiserver and kubectl speak it: WebSocket and SPDY/3.1.

The SPDY side is written from the protocol (frames, zlib with the SPDY/3 dictionary, one stream
per channel named by ``streamType``), reusing only the frame builders of the server module, so a
framing mistake on either side shows up as a failed exchange.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import struct
import zlib
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from kubetrain.embedded.node.spdy import (
    FLAG_FIN,
    GOAWAY,
    PING,
    SPDY3_DICTIONARY,
    SYN_REPLY,
    SYN_STREAM,
    control_frame,
    data_frame,
    decode_headers,
    encode_headers,
)

JsonDict = dict[str, Any]


@dataclass
class ExecResult:
    channels: dict[int, bytes] = field(default_factory=dict)
    protocol: str = ""

    @property
    def status(self) -> JsonDict:
        raw = self.channels.get(3, b"")
        return json.loads(raw) if raw else {}

    def text(self, channel: int) -> str:
        return self.channels.get(channel, b"").decode()


async def websocket_exec(
    session: aiohttp.ClientSession,
    url: str,
    ctx: ssl.SSLContext,
    stdin: bytes | None = None,
    protocol: str = "v5.channel.k8s.io",
) -> ExecResult:
    result = ExecResult()
    async with session.ws_connect(url, protocols=(protocol,), ssl=ctx) as ws:
        result.protocol = ws.protocol or ""
        if stdin is not None:
            await ws.send_bytes(b"\x00" + stdin)
            if protocol.startswith("v5"):
                await ws.send_bytes(bytes([255, 0]))
        async for msg in ws:
            if msg.type != aiohttp.WSMsgType.BINARY:
                break
            data = bytes(msg.data)
            result.channels[data[0]] = result.channels.get(data[0], b"") + data[1:]
    return result


async def spdy_exec(
    host: str,
    port: int,
    path: str,
    ctx: ssl.SSLContext,
    stdin: bytes | None = None,
    protocols: tuple[str, ...] = ("v4.channel.k8s.io",),
) -> tuple[int, str, ExecResult]:
    """(HTTP status of the upgrade, response head (and body when it failed), the streams' contents)."""
    reader, writer = await asyncio.open_connection(host, port, ssl=ctx)
    versions = "".join(f"X-Stream-Protocol-Version: {p}\r\n" for p in protocols)
    writer.write(
        f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n"
        f"{versions}Content-Length: 0\r\n\r\n".encode()
    )
    head = (await reader.readuntil(b"\r\n\r\n")).decode()
    code = int(head.split(" ")[1])
    result = ExecResult()
    if code != 101:  # an error answer: its head, then its body
        length = next(
            (
                int(line.split(":", 1)[1])
                for line in head.split("\r\n")
                if line.lower().startswith("content-length")
            ),
            0,
        )
        body = (await reader.readexactly(length)).decode() if length else ""
        writer.close()
        return code, head + body, result
    result.protocol = next(
        (
            line.split(":", 1)[1].strip()
            for line in head.split("\r\n")
            if line.lower().startswith("x-stream-protocol")
        ),
        "",
    )
    deflate = zlib.compressobj(9, zlib.DEFLATED, 15, 8, zlib.Z_DEFAULT_STRATEGY, SPDY3_DICTIONARY)
    inflate = zlib.decompressobj(zdict=SPDY3_DICTIONARY)
    kinds = (
        {1: "error", 3: "stdin", 5: "stdout", 7: "stderr"}
        if stdin is not None
        else {1: "error", 5: "stdout", 7: "stderr"}
    )
    for stream_id, kind in kinds.items():
        block = deflate.compress(encode_headers({"streamType": [kind]})) + deflate.flush(zlib.Z_SYNC_FLUSH)
        writer.write(control_frame(SYN_STREAM, 0, struct.pack(">IIBB", stream_id, 0, 0, 0) + block))
    writer.write(control_frame(PING, 0, struct.pack(">I", 1)))
    await writer.drain()
    replies: set[int] = set()
    open_streams = {i for i, kind in kinds.items() if kind != "stdin"}
    channel_of = {1: 3, 5: 1, 7: 2}
    pinged = False
    while open_streams:
        header = await reader.readexactly(8)
        length = int.from_bytes(header[5:8], "big")
        payload = await reader.readexactly(length) if length else b""
        if header[0] & 0x80:
            kind = int.from_bytes(header[2:4], "big")
            if kind == SYN_REPLY:
                stream_id = int.from_bytes(payload[:4], "big") & 0x7FFFFFFF
                assert decode_headers(inflate.decompress(payload[4:])) == {}
                replies.add(stream_id)
                if replies == set(kinds) and stdin is not None:
                    writer.write(data_frame(3, stdin) + data_frame(3, b"", fin=True))
                    await writer.drain()
            elif kind == PING:
                pinged = payload == struct.pack(">I", 1)
            elif kind == GOAWAY:
                break
            continue
        stream_id = int.from_bytes(header[:4], "big") & 0x7FFFFFFF
        channel = channel_of[stream_id]
        result.channels[channel] = result.channels.get(channel, b"") + payload
        if header[4] & FLAG_FIN:
            open_streams.discard(stream_id)
    writer.close()
    assert replies == set(kinds) and pinged, (replies, pinged)
    return code, head, result
