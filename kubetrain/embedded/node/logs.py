"""Container logs: files in the CRI format, and the provider behind the API server's pods/log.

Each container instance (each restart) writes ``<pod dir>/logs/<container>/<restart>.log`` with
one record per line, ``<RFC3339Nano> <stdout|stderr> <F|P> <text>``, as CRI runtimes do: the
timestamp makes ``timestamps`` and ``sinceSeconds`` exact, and P marks a line split because it was
too long or the stream ended without a newline; a read joins a stream's P records with the rest
of their line (`_Lines`), so the other stream's lines never land inside one. Files outlive the
process, so ``previous`` and logs of finished pods keep working until the pod is deleted.

Disk use is bounded as the kubelet bounds it (`LogPolicy`: containerLogMaxSize 10Mi,
containerLogMaxFiles 5): a file about to pass the size is renamed ``<restart>.log.<timestamp>``
(the kubelet's suffix, plus microseconds: we rotate on write, not every 10 s) and a new one begun,
keeping at most ``max_files`` files per instance. Rotated files are not gzipped (the kubelet
compresses all but the newest). As from the kubelet, a read returns the current file only, and
``follow`` carries on into the next file when the current one is rotated.

Every instance's log is kept, not only the current and the previous one (the kubelet's container
GC keeps one dead container, so a crash loop's first failure is lost there): ``previous`` still
means the instance before the current one, and `ContainerLogs.attempt` / `NodeLogProvider.attempt`
read any earlier one. Instances older than the previous keep their newest file only (at most
``max_size``; rotations are dropped), which bounds a long crash loop's disk use per restart.
Reads stream in chunks of at most `READ_CHUNK` bytes: a full read never holds the whole file.

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
from kubetrain.kube.timefmt import format_nanotime

from .recovery import LOST_REASON

MAX_LINE = 16 * 1024
FOLLOW_POLL = 0.05
READ_CHUNK = 256 * 1024
ROTATED_SUFFIX = "%Y%m%d-%H%M%S"
"""The kubelet's timestamp suffix of a rotated log (Go's 20060102-150405)."""


@dataclass(frozen=True)
class LogPolicy:
    """Log rotation per container instance: kubelet's containerLogMaxSize and containerLogMaxFiles."""

    max_size: int = 10 * 2**20
    max_files: int = 5

    def __post_init__(self) -> None:
        if self.max_size < 1:
            raise ValueError(f"container log max size must be at least 1 byte, got {self.max_size}")
        if self.max_files < 2:
            raise ValueError(f"container log max files must be > 1, got {self.max_files}")


@dataclass
class LogFile:
    """One container instance's log; `done` once its output streams are drained."""

    path: Path
    done: bool = False
    policy: LogPolicy = field(default_factory=LogPolicy)


def rotated_files(path: Path) -> list[Path]:
    """The rotated files of the log at `path`, oldest first (the suffixes sort by time)."""
    return sorted(path.parent.glob(f"{path.name}.*"))


def attempt_of(log: LogFile) -> int:
    """The restart count of the instance that wrote `log` (its file is ``<restart>.log``)."""
    return int(log.path.stem)


@dataclass
class ContainerLogs:
    """Every instance of one container, oldest first; the last is the current one."""

    files: list[LogFile] = field(default_factory=list)

    def add(self, log: LogFile) -> None:
        """A new instance started: instances older than the previous lose their rotated files."""
        self.files.append(log)
        if len(self.files) > 2:
            for path in rotated_files(self.files[-3].path):
                path.unlink(missing_ok=True)

    def attempt(self, restart: int) -> LogFile | None:
        """The log of the instance started after `restart` restarts (0: the first), if kept."""
        for log in self.files:
            if attempt_of(log) == restart:
                return log
        return None


class LogWriter:
    """The one writer of an instance's log (both streams), rotating it under its `LogPolicy`."""

    def __init__(self, log: LogFile) -> None:
        self.path, self.policy = log.path, log.policy
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._out: BinaryIO = open(self.path, "ab")  # noqa: SIM115 -- closed by `close`
        self.size = self._out.tell()

    def write(self, record: bytes) -> None:
        if self.size and self.size + len(record) > self.policy.max_size:
            self._rotate()
        self._out.write(record)
        self._out.flush()
        self.size += len(record)

    def _rotate(self) -> None:
        self._out.close()
        now = time.time()
        while True:  # two rotations in one microsecond cannot share a name
            stamp = time.strftime(ROTATED_SUFFIX, time.gmtime(now)) + f".{int(now % 1 * 1e6):06d}"
            target = self.path.with_name(f"{self.path.name}.{stamp}")
            if not target.exists():
                break
            now += 1e-6
        os.rename(self.path, target)
        for old in rotated_files(self.path)[: -(self.policy.max_files - 1)]:
            old.unlink(missing_ok=True)
        self._out = open(self.path, "ab")  # noqa: SIM115 -- closed by `close`
        self.size = 0

    def close(self) -> None:
        self._out.close()


async def pump(reader: asyncio.StreamReader, stream: str, out: LogWriter) -> None:
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
            b"%s %s %s %s\n" % (format_nanotime(time.time()).encode(), tag, b"P" if partial else b"F", line)
        )


class _Lines:
    """Renders records as lines, joining each stream's partial (``P``) records with the rest of
    their line: a line cut at MAX_LINE is read whole, never with the other stream's line inside it
    (a reader as the kubelet's writes the parts as they come). A joined line carries its first
    record's timestamp; a stream's unterminated end is given out by `flush`."""

    def __init__(self, timestamps: bool) -> None:
        self.timestamps = timestamps
        self._held: dict[bytes, tuple[bytes, bytearray]] = {}

    def render(self, record: bytes) -> bytes:
        ts, _, rest = record.partition(b" ")
        stream, _, rest = rest.partition(b" ")
        tag, _, text = rest.partition(b" ")
        text = text.rstrip(b"\n")
        held = self._held.get(stream)
        if tag == b"P":
            if held is None:
                self._held[stream] = (ts, bytearray(text))
            else:
                held[1].extend(text)
            return b""
        if held is not None:
            del self._held[stream]
            ts, text = held[0], bytes(held[1]) + text
        return self._line(ts, text + b"\n")

    def flush(self) -> bytes:
        """The partial lines still held (streams that ended without a newline), oldest first."""
        out = b"".join(self._line(ts, bytes(text)) for ts, text in sorted(self._held.values()))
        self._held.clear()
        return out

    def _line(self, ts: bytes, text: bytes) -> bytes:
        return ts + b" " + text if self.timestamps else text


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


def _replaced(fh: BinaryIO, path: Path) -> bool:
    """Whether `path` now names another file than the open `fh` (the writer rotated it)."""
    try:
        return os.stat(path).st_ino != os.fstat(fh.fileno()).st_ino
    except FileNotFoundError:
        return False  # between the rename and the new file: look again on the next poll


async def _raw(log: LogFile, options: LogOptions) -> AsyncIterator[bytes]:
    """The current file's bytes from where `options` start, in chunks; following, on into the
    files that replace it."""
    fh: BinaryIO = open(log.path, "rb")  # noqa: SIM115 -- closed below
    try:
        if options.tail_lines is not None:
            fh.seek(_tail_offset(fh, options.tail_lines))
        while True:
            done_before_read = log.done
            data = fh.read(READ_CHUNK)
            if data:
                yield data
                continue
            if not options.follow or options.previous or done_before_read:
                return
            if _replaced(fh, log.path):
                while data := fh.read(READ_CHUNK):  # what came before the rename
                    yield data
                fh.close()
                fh = open(log.path, "rb")  # noqa: SIM115 -- closed below
                continue
            await asyncio.sleep(FOLLOW_POLL)
    finally:
        fh.close()


async def read_log(log: LogFile, options: LogOptions) -> AsyncIterator[bytes]:
    """The rendered log of one container instance under `options`, one chunk per file chunk
    (a record cut by a chunk boundary waits for the next; records are at most 64 KiB)."""
    budget = options.limit_bytes
    cutoff = format_nanotime(time.time() - options.since_seconds).encode() if options.since_seconds else None
    pending = b""
    lines = _Lines(options.timestamps)
    async for data in _raw(log, options):
        pending += data
        *records, pending = pending.split(b"\n")
        out = bytearray()
        for record in records:
            if not record or (cutoff is not None and record[: len(cutoff)] < cutoff):
                continue
            out += lines.render(record)
        if out:
            if budget is not None:
                out = out[:budget]
                budget -= len(out)
            yield bytes(out)
            if budget is not None and budget <= 0:
                return
    rest = lines.flush()
    if rest:
        yield rest if budget is None else rest[:budget]


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
                raise LogUnavailable(_no_log(pod, name, container))
            log = files[-1]
        async for chunk in read_log(log, options):
            yield chunk

    async def attempt(
        self, pod: dict[str, Any], container: str, restart: int, options: LogOptions
    ) -> AsyncIterator[bytes]:
        """The log of one instance of `container`, by its restart count (0: the first run)."""
        name = (pod.get("metadata") or {}).get("name", "")
        containers = self._lookup(str((pod.get("metadata") or {}).get("uid", ""))) or {}
        log = containers.get(container, ContainerLogs()).attempt(restart)
        if log is None:
            raise LogUnavailable(f'attempt {restart} of container "{container}" in pod "{name}" not found')
        async for chunk in read_log(log, options):
            yield chunk


def _no_log(pod: dict[str, Any], name: str, container: str) -> str:
    """Why a container has no log yet: not started, or lost with a previous node process."""
    status = pod.get("status") or {}
    for st in [*(status.get("initContainerStatuses") or ()), *(status.get("containerStatuses") or ())]:
        terminated = (st.get("state") or {}).get("terminated") or {}
        if st.get("name") == container and terminated.get("reason") == LOST_REASON:
            return (
                f'container "{container}" in pod "{name}" was lost with the node process that ran it '
                "(ContainerStatusUnknown): its log went with that node's sandbox"
            )
    return f'container "{container}" in pod "{name}" is waiting to start: ContainerCreating'
