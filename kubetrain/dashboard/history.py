"""The history pages' data: jobs that finished or are gone, read from the history store.

The store is the file a plane's recorder writes (`kubetrain.history.store`); the dashboard only
reads it, each call on its own read-only connection in a worker thread (SQLite's WAL lets it read
while the recorder writes, and a connection never crosses threads). Shapes match the live pages'
(`views`), so the front end draws a recorded job as it drew it live.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from kubetrain.api.kinds import KindInfo
from kubetrain.client.jobstate import replica_label
from kubetrain.client.kinds import all_kinds
from kubetrain.dashboard.series import recorded_series
from kubetrain.dashboard.views import replica_specs
from kubetrain.history.store import Condition, HistoryStore, JobSummary

JsonDict = dict[str, Any]
T = TypeVar("T")


def _label(pod: str, job: str) -> str:
    return replica_label({"metadata": {"name": pod}}, job)


def _condition(c: Condition) -> JsonDict:
    return {"type": c.type, "status": c.status, "reason": c.reason, "message": c.message, "time": c.time}


def _app_containers(spec: JsonDict, info: KindInfo | None) -> set[str]:
    """The app containers the job's templates name: a recorded log of another is an init container's
    (the store keeps no such flag; the operator adds init containers of its own)."""
    return {c["name"] for row in replica_specs(spec, info) for c in row["containers"]}


def summary_row(job: JobSummary) -> JsonDict:
    return {
        "uid": job.uid,
        "kind": job.kind,
        "namespace": job.namespace,
        "name": job.name,
        "state": job.outcome or "Created",
        "started": job.started,
        "finished": job.finished,
        "deleted": job.deleted,
    }


class HistoryReader:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.kinds = {info.kind: info for info in all_kinds()}

    @property
    def available(self) -> bool:
        return self.path.is_file()

    async def _read(self, call: Callable[[HistoryStore], T], empty: T) -> T:
        def run() -> T:
            if not self.path.is_file():
                return empty
            try:
                store = HistoryStore(self.path, read_only=True)
            except sqlite3.Error:
                return empty
            try:
                return call(store)
            except sqlite3.Error:  # a store a newer kubetrain wrote, or half made: nothing to show
                return empty
            finally:
                store.close()

        return await asyncio.to_thread(run)

    async def jobs(self) -> list[JsonDict]:
        """Every recorded job, newest first."""
        empty: list[JsonDict] = []
        rows = await self._read(lambda store: [summary_row(j) for j in store.jobs()], empty)
        return rows[::-1]

    async def find(self, namespace: str, kind: str, name: str) -> str | None:
        """The uid of the newest recorded job of that key."""

        def find(store: HistoryStore) -> str | None:
            found = store.find(name, kind=kind, namespace=namespace)
            return found[-1].uid if found else None

        return await self._read(find, None)

    async def conditions(self, uid: str) -> list[JsonDict]:
        """Every condition transition recorded for the job (a live job's status keeps only the
        latest of each type: Running's start is gone once it turned False)."""
        empty: list[JsonDict] = []
        return await self._read(lambda store: [_condition(c) for c in store.conditions(uid)], empty)

    async def job(self, uid: str) -> JsonDict | None:
        return await self._read(lambda store: self._job(store, uid), None)

    def _job(self, store: HistoryStore, uid: str) -> JsonDict | None:
        summary = next((j for j in store.jobs() if j.uid == uid), None)
        if summary is None:
            return None
        spec = store.spec(uid)
        info = self.kinds.get(summary.kind)
        job = {
            **summary_row(summary),
            "key": f"{summary.namespace}/{summary.kind}/{summary.name}",
            "apiVersion": str(spec.get("apiVersion") or ""),
            "created": (spec.get("metadata") or {}).get("creationTimestamp"),
            "conditions": [_condition(c) for c in store.conditions(uid)],
            "specs": replica_specs(spec, info),
        }
        pods = [
            {
                "name": p.name,
                "replica": _label(p.name, summary.name),
                "phase": p.phase,
                "restarts": sum(int(c.get("restarts") or 0) for c in p.containers),
                "containers": [
                    {
                        "name": str(c.get("name") or ""),
                        "state": str(c.get("state") or ""),
                        "reason": str(c.get("reason") or ""),
                        "exitCode": c.get("exitCode"),
                        "restarts": int(c.get("restarts") or 0),
                    }
                    for c in p.containers
                ],
            }
            for p in store.pods(uid)
        ]
        events = [
            {
                "time": e.time,
                "type": e.type,
                "reason": e.reason,
                "object": e.object,
                "message": e.message,
                "count": e.count,
            }
            for e in store.events(uid)
        ]
        main = _app_containers(spec, info)
        logs = [
            {
                "id": i,
                "replica": _label(r.pod, summary.name),
                "pod": r.pod,
                "container": r.container,
                "init": bool(main) and r.container not in main,
                "attempt": r.attempt,
                "exitCode": r.exit_code,
                "skipped": 0,
                "lines": r.text.splitlines(),
            }
            for i, r in enumerate(store.logs(uid))
        ]
        series = recorded_series(
            [(_label(s.pod, summary.name), s.container, s.name, s.points) for s in store.metrics(uid)]
        )
        return {"job": job, "pods": pods, "events": events, "logs": logs, "series": series}
