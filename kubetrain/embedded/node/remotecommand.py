"""Exec through the kubelet API: Kubernetes' remote-command streams bridged to the exec endpoint.

The node already runs commands "inside" a pod for MPI launchers (`exec`, a Unix socket whose
frames use the exec channel numbers). The kubelet API reuses it unchanged: `open_exec` sends the
request and waits until the command has started (so a missing pod or stopped container is an
HTTP error before any upgrade, as with the kubelet), then `relay` copies frames between that
socket and the caller's streams, over WebSocket (`WebSocketStreams`) or SPDY (`SpdyStreams`).

Status on the error channel: v4 and v5 write a ``metav1.Status`` as JSON (``NonZeroExitCode``
with an ``ExitCode`` cause when the command failed); v2 and v3 write only a failure's message.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from .shims import client as wire
from .spdy import SpdySession, SpdyStream
from .websocket import OP_BINARY, WebSocket

JsonDict = dict[str, Any]

V5, V4, V3, V2 = "v5.channel.k8s.io", "v4.channel.k8s.io", "v3.channel.k8s.io", "v2.channel.k8s.io"
SPDY_PROTOCOLS = [V5, V4, V3, V2]
WEBSOCKET_PROTOCOLS = [V5, V4]
STDIN, STDOUT, STDERR, ERROR, RESIZE, CLOSE = 0, 1, 2, 3, 4, 255
START_TIMEOUT = 30.0
STREAM_CREATION_TIMEOUT = 30.0  # remotecommand.DefaultStreamCreationTimeout
_UPGRADE_PREFIX = "unable to upgrade connection: "


@dataclass
class ExecOptions:
    """The exec query (``command``, ``input``, ``output``, ``error``, ``tty``) and its target."""

    namespace: str
    pod: str
    container: str
    command: list[str]
    stdin: bool
    stdout: bool
    stderr: bool
    tty: bool


@dataclass
class ExecChannel:
    """The exec endpoint's connection for one running command."""

    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter


def status_text(status: JsonDict, protocol: str) -> bytes:
    """What goes on the error channel at the end, for `protocol`."""
    if protocol in (V4, V5):
        if status.get("status") == "Success":
            return b'{"metadata":{},"status":"Success"}'
        return json.dumps({k: v for k, v in status.items() if k not in ("kind", "apiVersion")}).encode()
    return b"" if status.get("status") == "Success" else str(status.get("message") or "").encode()


async def _frame(reader: asyncio.StreamReader) -> tuple[int, bytes] | None:
    try:
        header = await reader.readexactly(5)
        length = int.from_bytes(header[1:], "big")
        return header[0], (await reader.readexactly(length) if length else b"")
    except (asyncio.IncompleteReadError, ConnectionError):
        return None


async def open_exec(socket_path: Path, opts: ExecOptions) -> ExecChannel | JsonDict:
    """Start the command; its channel, or the failure Status when it could not start."""
    reader, writer = await asyncio.open_unix_connection(str(socket_path))
    request = {
        "op": "exec",
        "namespace": opts.namespace,
        "pod": opts.pod,
        "container": opts.container,
        "command": opts.command,
    }
    writer.write(wire.encode(wire.REQUEST, json.dumps(request).encode()))
    if not opts.stdin:
        writer.write(wire.encode(wire.STDIN, b""))  # no stdin: the command reads EOF at once
    await writer.drain()
    while True:
        frame = await asyncio.wait_for(_frame(reader), START_TIMEOUT)
        if frame is None:
            writer.close()
            return {"status": "Failure", "message": "exec endpoint closed the connection", "code": 500}
        if frame[0] == wire.STARTED:
            return ExecChannel(reader, writer)
        if frame[0] == wire.STATUS:
            writer.close()
            status: JsonDict = json.loads(frame[1])
            message = str(status.get("message") or "")
            status["message"] = message.removeprefix(_UPGRADE_PREFIX)
            return status


class Streams(Protocol):
    """The caller's side of an exec session, whatever the transport."""

    async def send(self, channel: int, data: bytes) -> None: ...

    def stdin(self) -> AsyncIterator[bytes]:
        """Stdin chunks, b"" once at EOF; ends when the caller has gone."""
        ...

    async def finish(self, status: JsonDict) -> None: ...


class WebSocketStreams:
    """Channel-prefixed binary messages (``v4``/``v5.channel.k8s.io``)."""

    def __init__(self, ws: WebSocket, protocol: str) -> None:
        self.ws, self.protocol = ws, protocol

    async def send(self, channel: int, data: bytes) -> None:
        await self.ws.send(bytes([channel]) + data)

    async def stdin(self) -> AsyncIterator[bytes]:
        while True:
            message = await self.ws.receive()
            if message is None:
                return
            opcode, data = message
            if opcode != OP_BINARY or not data:
                continue
            if data[0] == CLOSE and self.protocol == V5 and data[1:2] == bytes([STDIN]):
                yield b""
            elif data[0] == STDIN and len(data) > 1:
                yield data[1:]

    async def finish(self, status: JsonDict) -> None:
        await self.send(ERROR, status_text(status, self.protocol))
        await self.ws.close()


class SpdyStreams:
    """One SPDY stream per channel, named by its ``streamType`` header."""

    NAMES = {"stdin": STDIN, "stdout": STDOUT, "stderr": STDERR, "error": ERROR, "resize": RESIZE}

    def __init__(self, session: SpdySession, protocol: str) -> None:
        self.session, self.protocol = session, protocol
        self.streams: dict[int, SpdyStream] = {}
        self.arrived = asyncio.Event()

    def on_stream(self, stream: SpdyStream) -> None:
        channel = self.NAMES.get(stream.header("streamType"))
        if channel is not None:
            self.streams[channel] = stream
            self.arrived.set()

    async def wait_streams(self, opts: ExecOptions) -> bool:
        """Wait (30 s, as the kubelet) until the client opened every stream it asked for."""
        expected = 1 + opts.stdin + opts.stdout + opts.stderr + (opts.tty and self.protocol != V2)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + STREAM_CREATION_TIMEOUT
        while len(self.streams) < expected:
            self.arrived.clear()
            waiter = asyncio.create_task(self.arrived.wait())
            gone = asyncio.create_task(self.session.closed.wait())
            await asyncio.wait(
                {waiter, gone}, timeout=max(0.0, deadline - loop.time()), return_when="FIRST_COMPLETED"
            )
            waiter.cancel()
            gone.cancel()
            if not self.arrived.is_set():  # timed out, or the client went away
                return len(self.streams) >= expected
        return True

    async def send(self, channel: int, data: bytes) -> None:
        stream = self.streams.get(channel)
        if stream is not None:
            await stream.write(data)

    async def stdin(self) -> AsyncIterator[bytes]:
        stream = self.streams.get(STDIN)
        if stream is not None:
            while chunk := await stream.read():
                yield chunk
            yield b""
        await self.session.closed.wait()

    async def finish(self, status: JsonDict) -> None:
        for channel in (STDOUT, STDERR):
            if channel in self.streams:
                await self.streams[channel].close()
        error = self.streams.get(ERROR)
        if error is not None:
            text = status_text(status, self.protocol)
            if text:
                await error.write(text)
            await error.close()
        await self.session.close()


async def relay(channel: ExecChannel, streams: Streams) -> None:
    """Copy output to the caller and its stdin to the command until one side ends."""

    async def to_caller() -> JsonDict:
        while True:
            frame = await _frame(channel.reader)
            if frame is None:
                return {"status": "Failure", "message": "exec endpoint closed the connection", "code": 500}
            number, data = frame
            if number in (STDOUT, STDERR) and data:
                await streams.send(number, data)
            elif number == wire.STATUS:
                result: JsonDict = json.loads(data)
                return result

    async def from_caller() -> None:
        async for chunk in streams.stdin():
            with contextlib.suppress(ConnectionError, RuntimeError):
                channel.writer.write(wire.encode(wire.STDIN, chunk))
                await channel.writer.drain()

    output = asyncio.create_task(to_caller())
    caller = asyncio.create_task(from_caller())
    try:
        await asyncio.wait({output, caller}, return_when=asyncio.FIRST_COMPLETED)
        if output.done():
            await streams.finish(output.result())
    finally:
        caller.cancel()
        output.cancel()
        await asyncio.gather(output, caller, return_exceptions=True)
        with contextlib.suppress(Exception):
            channel.writer.close()  # a caller that hung up hangs up the command, as sshd would
