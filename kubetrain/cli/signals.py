"""SIGINT/SIGTERM as asyncio events, so long-running commands can clean up instead of dying.

The first signal asks for a graceful stop (delete the job, let the node SIGTERM its processes);
a second one asks to hurry (skip the waiting, the node still kills and reaps every process).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from types import TracebackType

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupts:
    """`async with Interrupts() as intr: ... await intr.first.wait()`; `exit_code` like a shell."""

    def __init__(self) -> None:
        self.first = asyncio.Event()
        self.second = asyncio.Event()
        self.signum: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def stdout_closed(self) -> None:
        """The reader of our stdout went away (`kubetrain run job.yaml | head`): stop as on SIGPIPE.

        A shell would have killed us with SIGPIPE; we stop the same way as after Ctrl-C (delete
        the job, stop the plane) so nothing is left behind, and exit 141 as the shell reports.
        """
        silence_stdout()
        self._on_signal(signal.SIGPIPE)

    def _on_signal(self, signum: int) -> None:
        if self.first.is_set():
            self.second.set()
        else:
            self.signum = signum
            self.first.set()

    @property
    def exit_code(self) -> int:
        """128 + the signal number: 130 after Ctrl-C, 143 after SIGTERM, 141 for a closed stdout."""
        return 128 + (self.signum or signal.SIGINT)

    async def __aenter__(self) -> Interrupts:
        self._loop = asyncio.get_running_loop()
        for sig in SIGNALS:
            self._loop.add_signal_handler(sig, self._on_signal, sig)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        assert self._loop is not None
        for sig in SIGNALS:
            self._loop.remove_signal_handler(sig)


def silence_stdout() -> None:
    """Point fd 1 at /dev/null: later writes and the interpreter's final flush then succeed."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


async def first_of(*events: asyncio.Event, timeout: float | None = None) -> asyncio.Event | None:
    """Wait until one of the events is set; returns it, or None on timeout."""
    waiters = {asyncio.ensure_future(e.wait()): e for e in events}
    try:
        done, _ = await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in waiters:
            task.cancel()
    return next((waiters[t] for t in done), None)
