"""One container instance as local processes: start, wait, terminate, never leave orphans.

Each container runs in its own session (``setsid``), so its process group holds what it forks
(torchrun's workers, ``bash -c`` children). Without cgroups a process can leave the group (its own
``setsid``, a double fork), so every container's environment also carries a tag,
``KUBETRAIN_CONTAINER=<node token>.<instance>``, which descendants inherit: when the main process
exits, or the container is deleted (SIGTERM, then SIGKILL after the grace period), the group and
every process carrying the tag are killed, as a container runtime tears down a container's
cgroup. If the node process itself dies, even by SIGKILL, a small guardian process (one per node
process, in its own session) sees its pipe close and kills every process of that node's tag.

A process that clears its environment and leaves the session escapes (the one known gap without
cgroups). Any OSError at exec (E2BIG, ENOEXEC, ELOOP, ...) is a StartError, as runc reports it.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Mapping

from .errors import StartError
from .logs import LogFile, LogWriter, pump

PIPE_DRAIN_SECONDS = 2.0
"""How long output may still arrive after a container's process exited."""
EXIT_POLL_SECONDS = 0.1


TAG_ENV = "KUBETRAIN_CONTAINER"
"""The environment variable that marks every process of a container instance (see the docstring)."""
NODE_TOKEN = uuid.uuid4().hex[:16]
"""This node process's part of every tag: the guardian kills all of them if the process dies."""
SWEEP_ROUNDS = 5
"""Kill passes per sweep: a process forking while it is being killed is found on the next pass."""


def _killpg(pgid: int, sig: int) -> bool:
    try:
        os.killpg(pgid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def process_tags() -> dict[int, str]:
    """pid -> container tag of every process (of ours) that carries one, by one /proc scan."""
    marker = f"\0{TAG_ENV}=".encode()
    found: dict[int, str] = {}
    own = os.getpid()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == own:
            continue
        try:
            with open(f"/proc/{entry.name}/environ", "rb") as fh:
                environ = b"\0" + fh.read()
        except OSError:
            continue
        at = environ.find(marker)
        if at >= 0:
            start = at + len(marker)
            end = environ.find(b"\0", start)
            found[int(entry.name)] = environ[start : end if end >= 0 else None].decode("utf-8", "replace")
    return found


def signal_tagged(signals: Mapping[str, int]) -> int:
    """Send each tag's signal to every process carrying that tag; SIGKILLed tags are swept again
    until empty (a process forking while it is killed is found on the next pass). Returns the
    number of signals sent."""
    sent = 0
    pending = dict(signals)
    for _ in range(SWEEP_ROUNDS):
        hits = [(pid, pending[tag]) for pid, tag in process_tags().items() if tag in pending]
        for pid, sig in hits:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        sent += len(hits)
        pending = {tag: sig for tag, sig in pending.items() if sig == signal.SIGKILL}
        if not hits or not pending:
            break
        time.sleep(0.01)
    return sent


class _Sweeper:
    """Coalesces the /proc scans of containers ending together (a 1,000-pod job finishing) into
    one scan per batch: a scan costs ~10 ms per hundred processes."""

    def __init__(self) -> None:
        self._batch: dict[str, int] = {}
        self._done: asyncio.Future[None] | None = None
        self._task: asyncio.Task[None] | None = None

    async def signal(self, tag: str, sig: int) -> None:
        loop = asyncio.get_running_loop()
        if self._done is None or self._done.done() or self._done.get_loop() is not loop:
            self._batch = {}
            self._done = loop.create_future()
            self._task = loop.create_task(self._run(self._batch, self._done))
        if self._batch.get(tag) != signal.SIGKILL:
            self._batch[tag] = sig
        await asyncio.shield(self._done)

    async def _run(self, batch: dict[str, int], done: asyncio.Future[None]) -> None:
        await asyncio.sleep(SWEEP_BATCH_SECONDS)  # let the other containers ending now join
        self._done = None  # later callers start the next batch
        try:
            await asyncio.to_thread(signal_tagged, batch)
        finally:
            if not done.done():
                done.set_result(None)


SWEEP_BATCH_SECONDS = 0.02
SWEEPER = _Sweeper()


_GUARDIAN = r"""# kubetrain node guardian: kills the node's container processes when the node process dies
import os, signal, sys, time
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGHUP, signal.SIG_IGN)
while os.read(0, 4096):
    pass
needle = ("\0" + sys.argv[1]).encode()
for _ in range(10):
    pids = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open("/proc/%s/environ" % name, "rb") as fh:
                if needle in b"\0" + fh.read():
                    pids.append(int(name))
        except OSError:
            pass
    if not pids:
        break
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    time.sleep(0.05)
"""


class _Guardian:
    """Kills every container of this node process when the process dies, however it dies.

    A parent-death signal (PR_SET_PDEATHSIG) would reach only each container's first process,
    not what that process forked, and setting it needs a preexec hook, which makes every container
    start fork() the whole node instead of vfork(); a pipe whose only writer is this process ends
    exactly when the process does.
    """

    def __init__(self) -> None:
        self._pid: int | None = None
        self._fd: int | None = None
        self._owner = 0
        self._proc: subprocess.Popen[bytes] | None = None

    def ensure(self) -> None:
        if self._pid is not None and self._owner == os.getpid() and self._alive():
            return
        read_end, write_end = os.pipe()  # non-inheritable: no container holds the write end
        try:
            proc = subprocess.Popen(
                [sys.executable, "-c", _GUARDIAN, f"{TAG_ENV}={NODE_TOKEN}."],
                stdin=read_end,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                close_fds=True,
                start_new_session=True,
                env={k: v for k, v in os.environ.items() if k != TAG_ENV},
            )
        finally:
            os.close(read_end)
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
        self._pid, self._fd, self._owner = proc.pid, write_end, os.getpid()
        self._proc = proc  # keeps the Popen (and so its reaping) alive

    def _alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def retire(self) -> subprocess.Popen[bytes] | None:
        """On a clean stop, once no container of this process runs: close the pipe and return the
        guardian to wait for (it sweeps once, finds nothing, exits), so that nothing of the node
        outlives it. A later container start makes a new one."""
        if LIVE_TAGS or self._fd is None or self._owner != os.getpid():
            return None
        with contextlib.suppress(OSError):
            os.close(self._fd)
        proc, self._proc, self._pid, self._fd = self._proc, None, None, None
        return proc


GUARDIAN = _Guardian()
LIVE_TAGS: set[str] = set()
"""Tags of this process's container instances that have not exited yet."""


def _start_error(err: OSError, argv: list[str], cwd: str) -> StartError:
    """runc's wording for a failed exec: `exec: "<argv0>": <Go's errno text>`."""
    if isinstance(err, FileNotFoundError):
        missing = argv[0] if err.filename in (None, argv[0]) else err.filename
        if err.filename == cwd or not os.path.isdir(cwd):
            return StartError(f'chdir to cwd ("{cwd}") set in config.json failed: no such file or directory')
        return StartError(f'exec: "{missing}": executable file not found in $PATH')
    if isinstance(err, PermissionError):
        return StartError(f'exec: "{argv[0]}": permission denied')
    text = os.strerror(err.errno) if err.errno else str(err)
    text = text[:1].lower() + text[1:]  # Go's syscall.Errno strings are lower case
    name = errno.errorcode.get(err.errno or 0, "")
    return StartError(f'exec: "{argv[0]}": {text}' + (f" ({name})" if name else ""))


class ContainerProcess:
    """A started container instance; `exit_code` follows the runtime convention (128+signal)."""

    def __init__(
        self, proc: asyncio.subprocess.Process, log: LogFile, pumps: list[asyncio.Task[None]], tag: str = ""
    ) -> None:
        self.proc = proc
        self.tag = tag
        self.pid = proc.pid
        self.log = log
        self.started_at = time.time()
        self.finished_at: float | None = None
        self.exit_code: int | None = None
        self._pumps = pumps
        self._waiter = asyncio.ensure_future(self._wait())

    @classmethod
    async def start(cls, argv: list[str], env: Mapping[str, str], cwd: str, log: LogFile) -> ContainerProcess:
        out = LogWriter(log)  # closed by the pumps' owner when both are done
        tag = f"{NODE_TOKEN}.{uuid.uuid4().hex}"
        try:
            GUARDIAN.ensure()
            proc = await asyncio.create_subprocess_exec(
                *argv,
                env={**env, TAG_ENV: tag},
                cwd=cwd,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
                limit=64 * 1024,
            )
        except OSError as err:  # any exec failure (E2BIG, ENOEXEC, ELOOP, ...) fails the start
            out.close()
            raise _start_error(err, argv, cwd) from err
        except ValueError as err:  # an embedded NUL byte in argv or env: exec cannot even be tried
            out.close()
            raise StartError(f'exec: "{argv[0]}": invalid argument ({err})') from err
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
        LIVE_TAGS.add(tag)
        return cls(proc, log, [*pumps, closer], tag)

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
        LIVE_TAGS.discard(self.tag)
        _killpg(self.pid, signal.SIGKILL)  # the container is over: so is everything it started,
        if self.tag:  # including what left the group (setsid, double fork)
            await SWEEPER.signal(self.tag, signal.SIGKILL)
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
            if self.tag:
                await SWEEPER.signal(self.tag, signal.SIGTERM)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._waiter), timeout=max(grace, 0.0))
        if self.running:
            _killpg(self.pid, signal.SIGKILL)
        return await self.wait()
