"""Container logs: files in the CRI format, and the provider behind the API server's pods/log.

Each container instance (each restart) writes ``<pod dir>/logs/<container>/<restart>.log`` with
one record per line, ``<RFC3339Nano> <stdout|stderr> <F|P> <text>``, as CRI runtimes do: the
timestamp makes ``timestamps`` and ``sinceSeconds`` exact, and P marks a line split because it was
too long or the stream ended without a newline. Files outlive the process, so ``previous`` and
logs of finished pods keep working until the pod is deleted.

`NodeLogProvider` implements the embedded API server's ``LogProvider`` protocol (``follow``,
``tailLines``, ``timestamps``, ``previous``, ``sinceSeconds``, ``limitBytes``); it is the only
in-process hook between the agent and the server, because pods/log on a real cluster is served by
the kubelet itself, not through the API.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from kubetrain.embedded.apiserver import LogOptions, LogUnavailable

MAX_LINE = 16 * 1024
FOLLOW_POLL = 0.05


def rfc3339nano(t: float) -> str:
    whole = int(t)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{int((t - whole) * 1e9):09d}Z"


@dataclass
class LogFile:
    """One container instance's log; `done` once its output streams are drained."""

    path: Path
    done: bool = False


@dataclass
class ContainerLogs:
    """All instances of one container, oldest first."""

    files: list[LogFile] = field(default_factory=list)


async def pump(reader: asyncio.StreamReader, stream: str, out: BinaryIO) -> None:
    """Copy a process stream into the log file as CRI records until EOF."""
    tag = stream.encode()
    while True:
        try:
            line = await reader.readuntil(b"\n")
            partial = False
        except asyncio.IncompleteReadError as err:
            line, partial = err.partial, True
            if not line:
                return
        except asyncio.LimitOverrunError as err:
            line, partial = await reader.readexactly(err.consumed), True
        if line.endswith(b"\n"):
            line = line[:-1]
        out.write(
            b"%s %s %s %s\n" % (rfc3339nano(time.time()).encode(), tag, b"P" if partial else b"F", line)
        )
        out.flush()


def _render(record: bytes, timestamps: bool) -> bytes:
    ts, _, rest = record.partition(b" ")
    _stream, _, rest = rest.partition(b" ")
    tag, _, text = rest.partition(b" ")
    text = text.rstrip(b"\n") + (b"" if tag == b"P" else b"\n")
    return ts + b" " + text if timestamps else text


def _tail_offset(fh: BinaryIO, lines: int) -> int:
    """Offset of the start of the last `lines` records, reading backwards in blocks."""
    if lines <= 0:
        return fh.seek(0, os.SEEK_END)
    end = fh.seek(0, os.SEEK_END)
    pos, found, block = end, 0, 64 * 1024
    while pos > 0:
        start = max(0, pos - block)
        fh.seek(start)
        chunk = fh.read(pos - start)
        for i in range(len(chunk) - 1, -1, -1):
            if chunk[i] == 0x0A and start + i != end - 1:
                found += 1
                if found == lines:
                    return start + i + 1
        pos = start
    return 0


async def read_log(log: LogFile, options: LogOptions) -> AsyncIterator[bytes]:
    """The rendered log of one container instance under `options`."""
    budget = options.limit_bytes
    cutoff = rfc3339nano(time.time() - options.since_seconds).encode() if options.since_seconds else None
    with open(log.path, "rb") as fh:
        if options.tail_lines is not None:
            fh.seek(_tail_offset(fh, options.tail_lines))
        pending = b""
        while True:
            done_before_read = log.done
            data = fh.read(256 * 1024)
            if data:
                pending += data
                *records, pending = pending.split(b"\n")
                out = bytearray()
                for record in records:
                    if not record or (cutoff is not None and record[: len(cutoff)] < cutoff):
                        continue
                    out += _render(record, options.timestamps)
                if out:
                    if budget is not None:
                        out = out[:budget]
                        budget -= len(out)
                    yield bytes(out)
                    if budget is not None and budget <= 0:
                        return
                continue
            if not options.follow or options.previous or done_before_read:
                return
            await asyncio.sleep(FOLLOW_POLL)


class NodeLogProvider:
    """Finds a pod's container logs by uid through `lookup` and serves them."""

    def __init__(self, lookup: Callable[[str], dict[str, ContainerLogs] | None]) -> None:
        self._lookup = lookup

    async def logs(
        self, namespace: str, pod: dict[str, Any], container: str, options: LogOptions
    ) -> AsyncIterator[bytes]:
        name = (pod.get("metadata") or {}).get("name", "")
        containers = self._lookup(str((pod.get("metadata") or {}).get("uid", ""))) or {}
        files = containers.get(container, ContainerLogs()).files
        if options.previous:
            if len(files) < 2:
                raise LogUnavailable(f'previous terminated container "{container}" in pod "{name}" not found')
            log = files[-2]
        else:
            if not files:
                raise LogUnavailable(
                    f'container "{container}" in pod "{name}" is waiting to start: ContainerCreating'
                )
            log = files[-1]
        async for chunk in read_log(log, options):
            yield chunk
