"""Where a durable local plane keeps its state, and the lock that gives it one plane at a time.

`kubetrain up` keeps every object in ``<data dir>/plane.db`` (see the embedded server's
`persistence`), by default under the XDG data directory: ``$XDG_DATA_HOME/kubetrain``, else
``~/.local/share/kubetrain``. Two planes on one file would overwrite each other's objects, so the
directory is locked (an flock on ``plane.lock``, which also names the holder's pid) for as long as
the plane runs; the kernel drops the lock when the process dies, even by SIGKILL.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path
from types import TracebackType

from kubetrain.client.errors import KubetrainError

STATE_FILE = "plane.db"
PODS_DIR = "pods"
"""Each pod's own working directory, kept with what it wrote (`kubetrain.embedded.node.workdir`)."""
LOCK_FILE = "plane.lock"


class DataDirError(KubetrainError):
    """The data directory cannot be used."""


class DataDirInUse(DataDirError):
    """Another plane runs on this data directory."""


def default_data_dir() -> Path:
    """``$XDG_DATA_HOME/kubetrain`` (an absolute one only, as the spec says), else ~/.local/share."""
    base = os.environ.get("XDG_DATA_HOME", "")
    root = Path(base) if os.path.isabs(base) else Path("~/.local/share").expanduser()
    return root / "kubetrain"


def state_files(directory: Path) -> list[Path]:
    """The database and the SQLite files beside it (write-ahead log, shared memory)."""
    return [directory / (STATE_FILE + suffix) for suffix in ("", "-wal", "-shm")]


class DataDirLock:
    """``with DataDirLock(dir):`` the plane owns ``dir``; raises DataDirInUse naming the holder."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._fd = -1

    def __enter__(self) -> DataDirLock:
        path = self.directory / LOCK_FILE
        try:
            self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise DataDirError(
                f"cannot use the data directory {self.directory}: {exc.strerror or exc} "
                "(pass another --data-dir)"
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 64).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise DataDirInUse(
                f"{self.directory} is in use by another kubetrain plane (pid {holder}, lock {path}); "
                "stop that one first, or give this one another --data-dir"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd
        return self

    def reset(self) -> None:
        """Delete the stored state (the caller holds the lock, so no plane is using it)."""
        for path in state_files(self.directory):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
