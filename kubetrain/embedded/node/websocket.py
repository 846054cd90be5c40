"""RFC 6455 WebSocket, server side, for the kubelet API's exec streams.

A 1.36 kube-apiserver proxies ``kubectl exec``'s WebSocket (subprotocol ``v5.channel.k8s.io``)
unchanged to a node that declares ``ExtendWebSocketsToKubelet``; older clients (the Python
``kubernetes`` client) ask for ``v4.channel.k8s.io``. Both put one channel byte before each
binary message (0 stdin, 1 stdout, 2 stderr, 3 error, 4 resize); v5 adds the message
``[255, channel]`` that half-closes a channel (stdin EOF). The server writes unmasked frames,
reads masked ones, answers pings and reassembles fragmented messages.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import struct

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
OP_CONT, OP_TEXT, OP_BINARY, OP_CLOSE, OP_PING, OP_PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA
MAX_MESSAGE = 16 << 20


def accept_key(key: str) -> str:
    return base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()


def encode_frame(opcode: int, payload: bytes) -> bytes:
    n = len(payload)
    if n < 126:
        head = struct.pack(">BB", 0x80 | opcode, n)
    elif n < 1 << 16:
        head = struct.pack(">BBH", 0x80 | opcode, 126, n)
    else:
        head = struct.pack(">BBQ", 0x80 | opcode, 127, n)
    return head + payload


class WebSocket:
    """One accepted connection: `receive` whole messages, `send` binary ones, `close`."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.closed = False

    async def _send_frame(self, opcode: int, payload: bytes) -> None:
        if self.closed:
            return
        try:
            self.writer.write(encode_frame(opcode, payload))
            await self.writer.drain()
        except (ConnectionError, RuntimeError):
            self.closed = True

    async def send(self, payload: bytes) -> None:
        await self._send_frame(OP_BINARY, payload)

    async def _read_frame(self) -> tuple[bool, int, bytes]:
        b0, b1 = await self.reader.readexactly(2)
        n = b1 & 0x7F
        if n == 126:
            (n,) = struct.unpack(">H", await self.reader.readexactly(2))
        elif n == 127:
            (n,) = struct.unpack(">Q", await self.reader.readexactly(8))
        if n > MAX_MESSAGE:
            raise ConnectionError("websocket frame too large")
        mask = await self.reader.readexactly(4) if b1 & 0x80 else b""
        data = await self.reader.readexactly(n) if n else b""
        if mask and data:
            key = (mask * (n // 4 + 1))[:n]
            data = (int.from_bytes(data, "big") ^ int.from_bytes(key, "big")).to_bytes(n, "big")
        return bool(b0 & 0x80), b0 & 0x0F, data

    async def receive(self) -> tuple[int, bytes] | None:
        """The next text or binary message as (opcode, data); None once the peer has gone."""
        parts: list[bytes] = []
        opcode = OP_BINARY
        try:
            while True:
                fin, op, data = await self._read_frame()
                if op == OP_PING:
                    await self._send_frame(OP_PONG, data)
                    continue
                if op == OP_PONG:
                    continue
                if op == OP_CLOSE:
                    await self._send_frame(OP_CLOSE, data[:2])
                    self.closed = True
                    return None
                if op != OP_CONT:
                    opcode, parts = op, []
                parts.append(data)
                if fin:
                    return opcode, b"".join(parts)
        except (asyncio.IncompleteReadError, ConnectionError):
            self.closed = True
            return None

    async def close(self, code: int = 1000) -> None:
        await self._send_frame(OP_CLOSE, struct.pack(">H", code))
        self.closed = True
        with contextlib.suppress(Exception):
            self.writer.close()
