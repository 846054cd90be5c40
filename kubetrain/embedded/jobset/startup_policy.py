"""``startupPolicy: InOrder`` and ``dependsOn``: which replicated jobs may start yet
(upstream's ``startup_policy.go`` and ``depends_on.go``)."""

from __future__ import annotations

from typing import Any

from . import constants as c
from .children import find_status

JsonDict = dict[str, Any]


def in_order(js: JsonDict) -> bool:
    policy = (js.get("spec") or {}).get("startupPolicy") or {}
    return policy.get("startupPolicyOrder") == c.IN_ORDER


def all_replicas_started(replicas: int, status: JsonDict | None) -> bool:
    """Every Job of the replicated job is ready, succeeded or failed."""
    status = status or {}
    return replicas == int(status.get("failed", 0)) + int(status.get("ready", 0)) + int(
        status.get("succeeded", 0)
    )


def dependency_reached_status(rjob: JsonDict, replicas: dict[str, int], statuses: list[JsonDict]) -> bool:
    """Each ``dependsOn`` entry's replicated job is Ready (all started) or Complete (all succeeded)."""
    for dep in rjob.get("dependsOn") or []:
        actual = find_status(statuses, str(dep.get("name")))
        if actual is None:
            return False
        want = replicas.get(str(dep.get("name")), 0)
        if dep.get("status") == c.DEPENDENCY_COMPLETE and want != int(actual.get("succeeded", 0)):
            return False
        if dep.get("status") == c.DEPENDENCY_READY and not all_replicas_started(want, actual):
            return False
    return True
