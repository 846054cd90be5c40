"""Pod logs: the protocol a node agent implements, and an in-memory provider for tests."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from kubetrain.kube.timefmt import format_nanotime


@dataclass(frozen=True)
class LogOptions:
    """The pods/log query parameters (PodLogOptions)."""

    follow: bool = False
    tail_lines: int | None = None
    timestamps: bool = False
    previous: bool = False
    since_seconds: int | None = None
    limit_bytes: int | None = None


class LogUnavailable(Exception):
    """Raised by a provider when a container has no logs to serve yet (answered with 400)."""


class LogProvider(Protocol):
    """Serves container logs; ``follow`` streams until the container ends."""

    def logs(
        self, namespace: str, pod: dict[str, Any], container: str, options: LogOptions
    ) -> AsyncIterator[bytes]: ...


@dataclass
class _Stream:
    lines: list[tuple[float, bytes]] = field(default_factory=list)
    ended: bool = False
    previous: list[tuple[float, bytes]] = field(default_factory=list)


class MemoryLogProvider:
    """Lines appended by a test (or a simple node) and served with kubelet's option semantics."""

    def __init__(self, poll_interval: float = 0.05) -> None:
        self._streams: dict[tuple[str, str, str], _Stream] = {}
        self._poll = poll_interval

    def append(self, namespace: str, pod: str, container: str, text: str) -> None:
        """Add output; safe to call from any thread (followers poll)."""
        stream = self._streams.setdefault((namespace, pod, container), _Stream())
        now = time.time()
        for line in text.splitlines(keepends=True):
            stream.lines.append((now, line.encode() if line.endswith("\n") else (line + "\n").encode()))

    def end(self, namespace: str, pod: str, container: str) -> None:
        """Mark the container finished: followers stop after the last line."""
        self._streams.setdefault((namespace, pod, container), _Stream()).ended = True

    def restart(self, namespace: str, pod: str, container: str) -> None:
        """Start a new container instance; the old output becomes ``previous``."""
        stream = self._streams.setdefault((namespace, pod, container), _Stream())
        stream.previous, stream.lines, stream.ended = stream.lines, [], False

    async def logs(
        self, namespace: str, pod: dict[str, Any], container: str, options: LogOptions
    ) -> AsyncIterator[bytes]:
        key = (namespace, pod["metadata"]["name"], container)
        stream = self._streams.get(key)
        if stream is None:
            raise LogUnavailable(
                f'container "{container}" in pod "{key[1]}" is waiting to start: ContainerCreating'
            )
        source = stream.previous if options.previous else stream.lines
        start = 0
        if options.since_seconds is not None:
            cutoff = time.time() - options.since_seconds
            start = next((i for i, (t, _) in enumerate(source) if t >= cutoff), len(source))
        if options.tail_lines is not None:
            start = max(start, len(source) - options.tail_lines)
        budget = options.limit_bytes
        idx = start
        while True:
            while idx < len(source):
                t, line = source[idx]
                idx += 1
                out = (format_nanotime(t) + " ").encode() + line if options.timestamps else line
                if budget is not None:
                    if budget <= 0:
                        return
                    out = out[:budget]
                    budget -= len(out)
                yield out
            if not options.follow or options.previous or stream.ended:
                return
            await asyncio.sleep(self._poll)
