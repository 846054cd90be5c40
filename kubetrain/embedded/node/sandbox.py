"""The node's temporary root directory, and the removal of those a killed node left behind.

A node without a configured ``root_dir`` keeps its pod sandboxes (volumes, logs, hosts files) in
``$TMPDIR/kubetrain-node-*`` and removes it when it stops. Killed by SIGKILL it cannot, so every
node that starts first removes this user's such directories whose owner is gone. Ownership is an
flock on ``<root>/.owner``, held as long as the node process lives: the kernel drops it however
the process dies, so the directory of a live node (another plane, a test) is never touched and a
reused pid cannot pass for the owner. Directories without the file (made by an older kubetrain)
are left alone.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import shutil
import tempfile
from pathlib import Path

log = logging.getLogger(__name__)

PREFIX = "kubetrain-node-"
OWNER_FILE = ".owner"


def _locked(path: Path) -> int | None:
    """An fd holding the exclusive flock of ``path``, or None when someone else holds it."""
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def remove_stale(parent: Path) -> list[Path]:
    """Remove the node roots under ``parent`` whose node process is gone; returns them."""
    removed = []
    uid = os.getuid()
    for entry in parent.glob(PREFIX + "*"):
        try:
            if entry.is_symlink() or not entry.is_dir() or entry.stat().st_uid != uid:
                continue
            fd = _locked(entry / OWNER_FILE)
        except OSError:  # no owner file: not ours to judge
            continue
        if fd is None:
            continue  # its node is alive
        try:
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)
        finally:
            os.close(fd)
    if removed:
        log.info("removed the sandboxes of stopped nodes: %s", ", ".join(map(str, removed)))
    return removed


class NodeRoot:
    """A fresh root directory owned by this process until `release`."""

    def __init__(self, parent: Path | None = None) -> None:
        parent = Path(parent or tempfile.gettempdir())
        self.removed_stale = remove_stale(parent)
        self.path = Path(tempfile.mkdtemp(prefix=PREFIX, dir=parent))
        # Locked before it gets its name: a sweep never sees an owner file nobody holds yet.
        claim = self.path / (OWNER_FILE + ".new")
        self._fd = os.open(claim, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.write(self._fd, f"{os.getpid()}\n".encode())
        os.rename(claim, self.path / OWNER_FILE)

    def release(self) -> None:
        """Remove the directory, then give up the claim."""
        shutil.rmtree(self.path, ignore_errors=True)
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = -1
