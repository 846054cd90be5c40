"""Controller expectations: remember our own in-flight creates and deletes per job.

The informer cache lags behind our writes. Without expectations a reconcile that runs between a
POST and its watch event would see the pod missing and create it again (or delete twice).
Expectations are raised before the writes and lowered when the cache observes the result or the
write fails; while any are pending the job is not reconciled. Like upstream they expire after
5 minutes (`ExpectationsTimeout`) so a lost watch event can only delay a job, never wedge it.

Objects are tracked by name ("<Kind>/<name>", since a pod and its service share a name), which is
exact for the deterministic child names the planner produces.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from kubetrain.runtime.ratelimit import Clock

EXPECTATIONS_TTL = 300.0


def child_id(kind: str, name: str) -> str:
    """The identity an expectation is tracked under."""
    return f"{kind}/{name}"


@dataclass
class _Pending:
    adds: set[str] = field(default_factory=set)
    deletes: set[str] = field(default_factory=set)
    since: float = 0.0


class Expectations:
    """Pending creates/deletes per job key, satisfied when observed, failed, or older than the TTL."""

    def __init__(self, ttl: float = EXPECTATIONS_TTL, clock: Clock = time.monotonic) -> None:
        self.ttl = ttl
        self._clock = clock
        self._pending: dict[str, _Pending] = {}

    def expect(self, job_key: str, adds: Iterable[str] = (), deletes: Iterable[str] = ()) -> None:
        """Raise expectations before issuing the writes (restarts the TTL)."""
        adds, deletes = set(adds), set(deletes)
        if not adds and not deletes:
            return
        pending = self._pending.setdefault(job_key, _Pending())
        pending.adds |= adds
        pending.deletes |= deletes
        pending.since = self._clock()

    def creation_observed(self, job_key: str, child: str) -> None:
        """The cache saw the object (or the create failed / already existed)."""
        pending = self._pending.get(job_key)
        if pending is not None:
            pending.adds.discard(child)
            self._drop_if_empty(job_key, pending)

    def deletion_observed(self, job_key: str, child: str) -> None:
        """The cache saw the deletion (or deletionTimestamp), or the delete failed / was a 404."""
        pending = self._pending.get(job_key)
        if pending is not None:
            pending.deletes.discard(child)
            self._drop_if_empty(job_key, pending)

    def satisfied(self, job_key: str) -> bool:
        pending = self._pending.get(job_key)
        if pending is None:
            return True
        if self._clock() - pending.since >= self.ttl:
            del self._pending[job_key]
            return True
        return False

    def remaining_ttl(self, job_key: str) -> float:
        """Seconds until the job's expectations expire (0 when satisfied): when to look again."""
        pending = self._pending.get(job_key)
        if pending is None:
            return 0.0
        return max(0.0, pending.since + self.ttl - self._clock())

    def pending(self, job_key: str) -> tuple[frozenset[str], frozenset[str]]:
        """(adds, deletes) still awaited, for logs and tests."""
        p = self._pending.get(job_key)
        if p is None:
            return frozenset(), frozenset()
        return frozenset(p.adds), frozenset(p.deletes)

    def delete(self, job_key: str) -> None:
        """Forget a job entirely (it was deleted)."""
        self._pending.pop(job_key, None)

    def __len__(self) -> int:
        return len(self._pending)

    def _drop_if_empty(self, job_key: str, pending: _Pending) -> None:
        if not pending.adds and not pending.deletes:
            del self._pending[job_key]
