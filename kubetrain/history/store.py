"""The history database: one SQLite file, written by one task, read by `kubetrain history`.

It is a file of its own (``<data dir>/history.db``), not a table of the API server's store: it
must keep a job after the API deletes it (TTL, `kubetrain delete`, a plane that exits). WAL lets
the CLI read while a plane writes, and two planes (a `run` beside an `up`) share it through
SQLite's own locking. It is bounded by a job count and an age: the oldest jobs go first, with
everything recorded about them (the foreign keys cascade). A container attempt's log is parsed
for metrics (`kubetrain.history.metrics`) as it is recorded, into series kept with the job.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubetrain.history.metrics import log_metrics

JsonDict = dict[str, Any]

HISTORY_FILE = "history.db"
DEFAULT_MAX_JOBS = 1000
DEFAULT_MAX_AGE_SECONDS = 30 * 24 * 3600.0
MAX_LOG_BYTES = 4 * 1024 * 1024
"""A container attempt's log is kept up to this size, its newest bytes (as a kubelet's rotation
keeps the newest file): a chatty job must not make the history grow without bound."""

FINAL_OUTCOMES = frozenset({"Succeeded", "Failed"})

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    uid TEXT PRIMARY KEY, kind TEXT NOT NULL, api_version TEXT NOT NULL,
    namespace TEXT NOT NULL, name TEXT NOT NULL, object TEXT NOT NULL,
    created TEXT, started TEXT, finished TEXT, outcome TEXT NOT NULL DEFAULT '',
    deleted TEXT, first_seen REAL NOT NULL);
CREATE INDEX IF NOT EXISTS jobs_by_name ON jobs (name, kind, namespace);
CREATE INDEX IF NOT EXISTS jobs_by_age ON jobs (first_seen);
CREATE TABLE IF NOT EXISTS conditions (
    job_uid TEXT NOT NULL REFERENCES jobs (uid) ON DELETE CASCADE,
    type TEXT NOT NULL, status TEXT NOT NULL, reason TEXT, message TEXT, time TEXT NOT NULL,
    PRIMARY KEY (job_uid, type, status, time));
CREATE TABLE IF NOT EXISTS pods (
    uid TEXT PRIMARY KEY, job_uid TEXT NOT NULL REFERENCES jobs (uid) ON DELETE CASCADE,
    name TEXT NOT NULL, phase TEXT, containers TEXT NOT NULL, created TEXT);
CREATE INDEX IF NOT EXISTS pods_by_job ON pods (job_uid);
CREATE TABLE IF NOT EXISTS events (
    uid TEXT PRIMARY KEY, job_uid TEXT NOT NULL REFERENCES jobs (uid) ON DELETE CASCADE,
    object TEXT NOT NULL, type TEXT, reason TEXT, message TEXT, count INTEGER, time TEXT);
CREATE INDEX IF NOT EXISTS events_by_job ON events (job_uid);
CREATE TABLE IF NOT EXISTS logs (
    job_uid TEXT NOT NULL REFERENCES jobs (uid) ON DELETE CASCADE,
    pod_uid TEXT NOT NULL, pod TEXT NOT NULL, container TEXT NOT NULL, attempt INTEGER NOT NULL,
    exit_code INTEGER, text TEXT NOT NULL,
    PRIMARY KEY (pod_uid, container, attempt));
CREATE INDEX IF NOT EXISTS logs_by_job ON logs (job_uid);
CREATE TABLE IF NOT EXISTS metrics (
    job_uid TEXT NOT NULL REFERENCES jobs (uid) ON DELETE CASCADE,
    pod TEXT NOT NULL, container TEXT NOT NULL, attempt INTEGER NOT NULL, line INTEGER NOT NULL,
    name TEXT NOT NULL, value REAL NOT NULL,
    PRIMARY KEY (job_uid, pod, container, attempt, line, name));
"""


@dataclass(frozen=True)
class JobSummary:
    uid: str
    kind: str
    namespace: str
    name: str
    outcome: str
    started: str | None
    finished: str | None
    deleted: str | None


@dataclass(frozen=True)
class Condition:
    type: str
    status: str
    reason: str
    message: str
    time: str


@dataclass(frozen=True)
class PodRecord:
    name: str
    phase: str
    containers: list[JsonDict]
    """Each container's name, restarts, and last exit code and reason (None while it runs)."""


@dataclass(frozen=True)
class EventRecord:
    object: str
    type: str
    reason: str
    message: str
    count: int
    time: str


@dataclass(frozen=True)
class Series:
    """One metric of one replica's container, over every recorded attempt, as it was printed."""

    pod: str
    container: str
    name: str
    points: list[tuple[int, int, float]]
    """(attempt, line, value)."""


@dataclass(frozen=True)
class LogRecord:
    pod: str
    container: str
    attempt: int
    exit_code: int | None
    text: str


def outcome_of(job: JsonDict) -> str:
    """The job's last true condition (Succeeded, Failed, Running...), '' before it has one."""
    conditions = (job.get("status") or {}).get("conditions") or []
    true = [c for c in conditions if c.get("status") == "True"]
    for condition in true:
        if condition.get("type") in FINAL_OUTCOMES:
            return str(condition["type"])
    return str(true[-1].get("type") or "") if true else ""


def _finished(job: JsonDict) -> str | None:
    status = job.get("status") or {}
    if status.get("completionTime"):
        return str(status["completionTime"])
    for condition in status.get("conditions") or []:
        if condition.get("type") in FINAL_OUTCOMES and condition.get("status") == "True":
            return str(condition.get("lastTransitionTime") or "") or None
    return None


class HistoryStore:
    """Thread-confined use is the caller's: the recorder writes from one task, in order."""

    def __init__(
        self,
        path: Path,
        *,
        max_jobs: int = DEFAULT_MAX_JOBS,
        max_age_seconds: float = DEFAULT_MAX_AGE_SECONDS,
        clock: Callable[[], float] = time.time,
        read_only: bool = False,
    ) -> None:
        self.path = path
        self.max_jobs = max_jobs
        self.max_age_seconds = max_age_seconds
        self.clock = clock
        if read_only:
            self._db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10.0)
        else:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            self._db = sqlite3.connect(path, timeout=10.0, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.executescript(_SCHEMA)
        self._db.execute("PRAGMA foreign_keys=ON")

    def close(self) -> None:
        self._db.close()

    # -- writing ---------------------------------------------------------------------------------

    def record_job(self, job: JsonDict) -> None:
        """Insert or update a job from its object, and add the condition transitions it shows."""
        meta = job.get("metadata") or {}
        uid = str(meta.get("uid") or "")
        if not uid:
            return
        status = job.get("status") or {}
        kept = {k: v for k, v in job.items() if k != "status"}
        kept["metadata"] = {k: v for k, v in meta.items() if k != "managedFields"}
        with self._db:
            self._db.execute(
                "INSERT INTO jobs (uid, kind, api_version, namespace, name, object, created, started,"
                " finished, outcome, first_seen) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (uid) DO UPDATE SET object = excluded.object, started = excluded.started,"
                " finished = excluded.finished, outcome = excluded.outcome",
                (
                    uid,
                    str(job.get("kind") or ""),
                    str(job.get("apiVersion") or ""),
                    str(meta.get("namespace") or ""),
                    str(meta.get("name") or ""),
                    json.dumps(kept),
                    meta.get("creationTimestamp"),
                    status.get("startTime") or meta.get("creationTimestamp"),
                    _finished(job),
                    outcome_of(job),
                    self.clock(),
                ),
            )
            self._db.executemany(
                "INSERT OR IGNORE INTO conditions VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (
                        uid,
                        str(c.get("type") or ""),
                        str(c.get("status") or ""),
                        str(c.get("reason") or ""),
                        str(c.get("message") or ""),
                        str(c.get("lastTransitionTime") or c.get("lastUpdateTime") or ""),
                    )
                    for c in status.get("conditions") or []
                ],
            )
        self.prune()

    def mark_deleted(self, uid: str, when: str) -> None:
        with self._db:
            self._db.execute("UPDATE jobs SET deleted = ? WHERE uid = ? AND deleted IS NULL", (when, uid))

    def record_pod(self, job_uid: str, pod: JsonDict) -> None:
        meta = pod.get("metadata") or {}
        status = pod.get("status") or {}
        statuses = [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]
        containers = [_container_summary(s) for s in statuses]
        with self._db:
            self._db.execute(
                "INSERT INTO pods VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (uid) DO UPDATE SET"
                " phase = excluded.phase, containers = excluded.containers",
                (
                    str(meta.get("uid") or ""),
                    job_uid,
                    str(meta.get("name") or ""),
                    str(status.get("phase") or ""),
                    json.dumps(containers),
                    meta.get("creationTimestamp"),
                ),
            )

    def record_event(self, job_uid: str, event: JsonDict) -> None:
        meta = event.get("metadata") or {}
        involved = event.get("involvedObject") or event.get("regarding") or {}
        with self._db:
            self._db.execute(
                "INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (uid) DO UPDATE SET"
                " count = excluded.count, time = excluded.time, message = excluded.message",
                (
                    str(meta.get("uid") or ""),
                    job_uid,
                    f"{str(involved.get('kind') or '').lower()}/{involved.get('name') or ''}",
                    str(event.get("type") or ""),
                    str(event.get("reason") or ""),
                    str(event.get("message") or event.get("note") or ""),
                    int(event.get("count") or 1),
                    str(
                        event.get("lastTimestamp")
                        or event.get("eventTime")
                        or event.get("firstTimestamp")
                        or meta.get("creationTimestamp")
                        or ""
                    ),
                ),
            )

    def record_log(
        self,
        job_uid: str,
        pod_uid: str,
        pod: str,
        container: str,
        attempt: int,
        exit_code: int | None,
        text: str,
    ) -> None:
        raw = text.encode()
        if len(raw) > MAX_LOG_BYTES:
            text = raw[-MAX_LOG_BYTES:].decode(errors="ignore")
        with self._db:
            self._db.execute(
                "INSERT OR REPLACE INTO logs VALUES (?, ?, ?, ?, ?, ?, ?)",
                (job_uid, pod_uid, pod, container, attempt, exit_code, text),
            )
            self._db.executemany(
                "INSERT OR REPLACE INTO metrics VALUES (?, ?, ?, ?, ?, ?, ?)",
                [(job_uid, pod, container, attempt, p.line, p.name, p.value) for p in log_metrics(text)],
            )

    def prune(self) -> None:
        """Oldest first out: jobs first seen longer ago than the age limit, then beyond the count."""
        with self._db:
            self._db.execute("DELETE FROM jobs WHERE first_seen < ?", (self.clock() - self.max_age_seconds,))
            self._db.execute(
                "DELETE FROM jobs WHERE uid IN (SELECT uid FROM jobs ORDER BY first_seen DESC, rowid DESC"
                " LIMIT -1 OFFSET ?)",
                (self.max_jobs,),
            )

    # -- reading ---------------------------------------------------------------------------------

    def jobs(self, kind: str | None = None, namespace: str | None = None) -> list[JobSummary]:
        """Every recorded job, oldest first (as a listing reads, the newest at the bottom)."""
        return list(self._summaries(kind=kind, namespace=namespace))

    def find(self, name: str, kind: str | None = None, namespace: str | None = None) -> list[JobSummary]:
        """The jobs of that name, newest last (a name is often reused: each run is its own job)."""
        return list(self._summaries(name=name, kind=kind, namespace=namespace))

    def _summaries(self, **where: str | None) -> Iterator[JobSummary]:
        clauses: list[str] = []
        values: list[str] = []
        for column, value in where.items():
            if value is None:
                continue
            # Kinds match in any case, as the CLI takes them.
            clauses.append("lower(kind) = ?" if column == "kind" else f"{column} = ?")
            values.append(value.lower() if column == "kind" else value)
        sql = "SELECT uid, kind, namespace, name, outcome, started, finished, deleted FROM jobs"
        if clauses:
            sql += " WHERE " + " AND ".join(clauses)
        for row in self._db.execute(sql + " ORDER BY first_seen, rowid", values):
            yield JobSummary(*row)

    def spec(self, uid: str) -> JsonDict:
        row = self._db.execute("SELECT object FROM jobs WHERE uid = ?", (uid,)).fetchone()
        return json.loads(row[0]) if row else {}

    def conditions(self, uid: str) -> list[Condition]:
        rows = self._db.execute(
            "SELECT type, status, reason, message, time FROM conditions WHERE job_uid = ?"
            " ORDER BY time, rowid",
            (uid,),
        )
        return [Condition(*row) for row in rows]

    def pods(self, uid: str) -> list[PodRecord]:
        rows = self._db.execute(
            "SELECT name, phase, containers FROM pods WHERE job_uid = ? ORDER BY name", (uid,)
        )
        return [PodRecord(name, phase, json.loads(containers)) for name, phase, containers in rows]

    def events(self, uid: str) -> list[EventRecord]:
        rows = self._db.execute(
            "SELECT object, type, reason, message, count, time FROM events WHERE job_uid = ?"
            " ORDER BY time, rowid",
            (uid,),
        )
        return [EventRecord(*row) for row in rows]

    def attempts(self, uid: str) -> list[tuple[str, str, int, int | None]]:
        """(pod, container, attempt, exit code) of every recorded log, without the logs' text."""
        rows = self._db.execute(
            "SELECT pod, container, attempt, exit_code FROM logs WHERE job_uid = ?"
            " ORDER BY pod, container, attempt",
            (uid,),
        )
        return [tuple(row) for row in rows]

    def metrics(self, uid: str) -> list[Series]:
        """The job's metric series (see `kubetrain.history.metrics`), by replica and name."""
        rows = self._db.execute(
            "SELECT pod, container, name, attempt, line, value FROM metrics WHERE job_uid = ?"
            " ORDER BY pod, container, name, attempt, line",
            (uid,),
        )
        series: dict[tuple[str, str, str], list[tuple[int, int, float]]] = {}
        for pod, container, name, attempt, line, value in rows:
            series.setdefault((pod, container, name), []).append((attempt, line, value))
        return [Series(pod, container, name, points) for (pod, container, name), points in series.items()]

    def logs(self, uid: str) -> list[LogRecord]:
        rows = self._db.execute(
            "SELECT pod, container, attempt, exit_code, text FROM logs WHERE job_uid = ?"
            " ORDER BY pod, container, attempt",
            (uid,),
        )
        return [LogRecord(*row) for row in rows]


def _container_summary(status: JsonDict) -> JsonDict:
    state = status.get("state") or {}
    terminated = state.get("terminated") or (status.get("lastState") or {}).get("terminated") or {}
    return {
        "name": status.get("name"),
        "restarts": int(status.get("restartCount") or 0),
        "exitCode": terminated.get("exitCode"),
        "reason": terminated.get("reason") or (state.get("waiting") or {}).get("reason"),
        "state": next(iter(state), ""),
    }
