"""SQLite persistence of the store: what a restarted `kubetrain up` finds again.

The in-memory store stays the source of truth; a `Journal` keeps one SQLite file a consistent
step behind it. The event loop only notes which object changed (a dict insert under a lock); one
writer thread serializes and commits, in one transaction per batch, the latest state of every
object changed since its last batch. So the file always holds the state at some point of the
history: a SIGKILL loses at most the batch in flight (milliseconds of writes), never half of one.
SQLite's WAL commits survive the death of the process (not of the machine: no fsync per commit).

resourceVersions are reserved in blocks: a block is committed to the file before any number in
it is handed out, and a restart continues after the last reserved block. So numbers keep growing
across restarts, even when the writes that used the last ones were lost with the process; the
watch history is not kept, so a watch from before the restart gets 410 Expired, as after an etcd
compaction.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .jsonutil import dumps, loads

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1
"""Bump on any change of the tables or of the stored object form; older files are refused."""
RV_BLOCK = 10_000
"""resourceVersions reserved per commit of the ceiling (a new block is asked for at half)."""
RETRY_SECONDS = 1.0
BATCH_SECONDS = 0.005
"""How long the writer lets writes gather before a transaction: the most a SIGKILL can lose
beyond the transaction in flight."""

ObjKey = tuple[str, str, str]  # (storage key, namespace, name), as in `store`

_TABLES = """
CREATE TABLE kubetrain_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE objects (
    resource TEXT NOT NULL,
    namespace TEXT NOT NULL,
    name TEXT NOT NULL,
    resource_version INTEGER NOT NULL,
    body BLOB NOT NULL,
    PRIMARY KEY (resource, namespace, name)
) WITHOUT ROWID;
"""


class PersistenceError(Exception):
    """The state file cannot be used; the message names the file and what to do."""


@dataclass
class Snapshot:
    objects: list[tuple[str, dict[str, Any]]]
    resource_version: int
    """Greater than or equal to every resourceVersion ever handed out for this file."""


def _refuse(path: Path, problem: str) -> PersistenceError:
    return PersistenceError(
        f"{path}: {problem}; move the file away (or delete it, with every object the plane "
        "stored) to start with an empty plane: `kubetrain up --reset` deletes it"
    )


class Journal:
    """One state file: `load()` once, then `start(rv)`, `record(...)` per write, `close()`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        except (OSError, sqlite3.Error) as exc:
            raise self._unusable(exc) from None
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._reserved = self._check_schema()
        except BaseException as exc:
            self._db.close()
            if isinstance(exc, sqlite3.OperationalError):
                raise self._unusable(exc) from None
            if isinstance(exc, sqlite3.DatabaseError):
                raise _refuse(path, f"not a kubetrain state database ({exc})") from None
            raise
        self._cond = threading.Condition()
        self._pending: dict[ObjKey, dict[str, Any] | None] = {}
        self._reserve_to = self._reserved
        self._closing = False
        self._thread: threading.Thread | None = None

    def _unusable(self, exc: Exception) -> PersistenceError:
        """Cannot open, read-only, locked by someone else..."""
        return PersistenceError(
            f"{self.path}: cannot use the state file ({exc}); check it and its directory's "
            "permissions, or keep the state elsewhere (--data-dir)"
        )

    def _check_schema(self) -> int:
        tables = {r[0] for r in self._db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if not tables:
            self._db.executescript(
                "BEGIN;"
                + _TABLES
                + f"INSERT INTO kubetrain_meta VALUES ('schema_version', '{SCHEMA_VERSION}');"
                + "INSERT INTO kubetrain_meta VALUES ('resource_version_reserved', '0');"
                + "COMMIT;"
            )
            return 0
        if "kubetrain_meta" not in tables:
            raise _refuse(self.path, "not a kubetrain state database (no kubetrain_meta table)")
        meta = dict(self._db.execute("SELECT name, value FROM kubetrain_meta").fetchall())
        version = meta.get("schema_version")
        if version != str(SCHEMA_VERSION):
            raise _refuse(
                self.path,
                f"stored with schema version {version}, this kubetrain reads version {SCHEMA_VERSION} "
                "(use the kubetrain release that wrote it)",
            )
        return int(meta.get("resource_version_reserved", "0"))

    # --- start-up (before the event loop serves anything) ---------------------------------

    def load(self) -> Snapshot:
        rows = self._db.execute("SELECT resource, body FROM objects").fetchall()
        return Snapshot([(key, loads(body)) for key, body in rows], self._reserved)

    def start(self, rv: int) -> None:
        """Start the writer thread, with resourceVersions up to ``rv`` + one block reserved."""
        self._thread = threading.Thread(target=self._run, name="kubetrain-apiserver-journal", daemon=True)
        self._thread.start()
        self.cover(rv + 1)

    # --- the event loop's side ---------------------------------------------------------------

    def record(self, okey: ObjKey, obj: dict[str, Any] | None) -> None:
        """``obj`` (never mutated after this call) is the object's new state; None: deleted."""
        with self._cond:
            if not self._pending:  # else the writer is busy and looks again before it waits
                self._cond.notify()
            self._pending[okey] = obj

    def cover(self, rv: int) -> int:
        """Make ``rv`` safe to hand out; returns the highest resourceVersion that needs no new call.

        Blocks only when a burst of writes used up a block before the next one was committed.
        """
        with self._cond:
            if self._reserve_to - rv < RV_BLOCK // 2:
                self._reserve_to = rv + RV_BLOCK
                self._cond.notify()
            while self._reserved < rv:
                if self._thread is None or not self._thread.is_alive():
                    raise PersistenceError(f"{self.path}: the writer stopped; cannot reserve {rv}")
                self._cond.wait(RETRY_SECONDS)
            return min(self._reserved, self._reserve_to - RV_BLOCK // 2)

    def close(self) -> None:
        """Commit what is pending, stop the writer and close the file."""
        with self._cond:
            self._closing = True
            self._cond.notify()
        if self._thread is not None:
            self._thread.join()
        self._db.close()

    # --- the writer thread ---------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            with self._cond:
                while not (self._pending or self._reserve_to > self._reserved or self._closing):
                    self._cond.wait()
            time.sleep(BATCH_SECONDS)  # let a burst gather: fewer, larger transactions
            with self._cond:
                batch, self._pending = self._pending, {}
                reserve_to, closing = self._reserve_to, self._closing
            while True:
                try:
                    self._write(batch, reserve_to)
                    break
                except sqlite3.Error as exc:
                    log.error("cannot write the plane's state to %s (retrying): %s", self.path, exc)
                    if closing:
                        return
                    time.sleep(RETRY_SECONDS)
            with self._cond:
                self._reserved = max(self._reserved, reserve_to)
                self._cond.notify_all()
                if closing and not self._pending:
                    return

    def _write(self, batch: dict[ObjKey, dict[str, Any] | None], reserve_to: int) -> None:
        upserts, deletes = [], []
        for okey, obj in batch.items():
            if obj is None:
                deletes.append(okey)
                continue
            try:
                body = dumps(obj)
            except Exception as exc:  # the server answered with it, so this is a bug: say which
                log.error("cannot store %s %s/%s in %s: %r", okey[0], okey[1], okey[2], self.path, exc)
                continue
            upserts.append((*okey, int(obj["metadata"]["resourceVersion"]), body))
        db = self._db
        db.execute("BEGIN")
        try:
            db.executemany("DELETE FROM objects WHERE resource=? AND namespace=? AND name=?", deletes)
            db.executemany("INSERT OR REPLACE INTO objects VALUES (?, ?, ?, ?, ?)", upserts)
            if reserve_to > self._reserved:
                db.execute(
                    "UPDATE kubetrain_meta SET value=? WHERE name='resource_version_reserved'",
                    (str(reserve_to),),
                )
            db.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
            raise
