"""One container instance as a local process group: start, wait, terminate, never leave orphans.

Each container runs in its own session (``setsid``), so its process group holds everything it
forks (torchrun's workers, ``bash -c`` children). When the main process exits, what is left of
the group is killed, as a container runtime tears down a container's cgroup; on deletion the group
gets SIGTERM, then SIGKILL after the grace period. A program that starts its own session escapes
this (the one known gap without cgroups).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Mapping

from .errors import StartError
from .logs import LogFile, pump

PIPE_DRAIN_SECONDS = 2.0
"""How long output may still arrive after a container's process exited."""
EXIT_POLL_SECONDS = 0.1


def _killpg(pgid: int, sig: int) -> bool:
    try:
        os.killpg(pgid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


class ContainerProcess:
    """A started container instance; `exit_code` follows the runtime convention (128+signal)."""

    def __init__(
        self, proc: asyncio.subprocess.Process, log: LogFile, pumps: list[asyncio.Task[None]]
    ) -> None:
        self.proc = proc
        self.pid = proc.pid
        self.log = log
        self.started_at = time.time()
        self.finished_at: float | None = None
        self.exit_code: int | None = None
        self._pumps = pumps
        self._waiter = asyncio.ensure_future(self._wait())

    @classmethod
    async def start(cls, argv: list[str], env: Mapping[str, str], cwd: str, log: LogFile) -> ContainerProcess:
        log.path.parent.mkdir(parents=True, exist_ok=True)
        out = open(log.path, "ab")  # noqa: SIM115 -- closed by the pumps' owner when both are done
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                env=dict(env),
                cwd=cwd,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
                limit=64 * 1024,
            )
        except FileNotFoundError as err:
            out.close()
            missing = argv[0] if err.filename in (None, argv[0]) else err.filename
            if err.filename == cwd or not os.path.isdir(cwd):
                raise StartError(
                    f'chdir to cwd ("{cwd}") set in config.json failed: no such file or directory'
                ) from err
            raise StartError(f'exec: "{missing}": executable file not found in $PATH') from err
        except PermissionError as err:
            out.close()
            raise StartError(f'exec: "{argv[0]}": permission denied') from err
        assert proc.stdout is not None and proc.stderr is not None
        pumps = [
            asyncio.create_task(pump(proc.stdout, "stdout", out)),
            asyncio.create_task(pump(proc.stderr, "stderr", out)),
        ]

        async def close_when_drained() -> None:
            await asyncio.gather(*pumps, return_exceptions=True)
            out.close()
            log.done = True

        closer = asyncio.create_task(close_when_drained())
        return cls(proc, log, [*pumps, closer])

    async def _exit_status(self) -> int:
        """The process's exit status as soon as it exits.

        Python 3.11's `Process.wait()` returns only once every pipe is closed, so a child that
        inherited stdout (a server the container started) would hold it up forever — and with it
        the kill of the rest of the group below. `returncode` is set at exit: poll it too.
        """
        waiter = asyncio.ensure_future(self.proc.wait())
        while True:
            done, _ = await asyncio.wait({waiter}, timeout=EXIT_POLL_SECONDS)
            if done:
                return waiter.result()
            if self.proc.returncode is not None:
                waiter.cancel()
                return self.proc.returncode

    async def _wait(self) -> int:
        rc = await self._exit_status()
        self.finished_at = time.time()
        self.exit_code = 128 - rc if rc < 0 else rc
        _killpg(self.pid, signal.SIGKILL)  # the container is over: so is everything it started
        # A process that left the group (setsid, daemonised) may still hold the pipes open: give
        # the pumps a moment to drain what was written, then stop reading instead of waiting for
        # an EOF that may never come (that hung the node's shutdown).
        _, pending = await asyncio.wait(self._pumps, timeout=PIPE_DRAIN_SECONDS)
        for task in pending:
            task.cancel()
        await asyncio.gather(*self._pumps, return_exceptions=True)
        return self.exit_code

    async def wait(self) -> int:
        return await asyncio.shield(self._waiter)

    @property
    def running(self) -> bool:
        return self.exit_code is None

    async def terminate(self, grace: float) -> int:
        """SIGTERM to the group, SIGKILL after `grace` seconds; returns the exit code."""
        if self.running:
            _killpg(self.pid, signal.SIGTERM)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._waiter), timeout=max(grace, 0.0))
        if self.running:
            _killpg(self.pid, signal.SIGKILL)
        return await self.wait()
