"""mpi-operator's condition algebra, which differs from the v1 one
(docs/upstream-behaviour.md#mpijob-v2beta1-status, #conditions):

* no "Failed is terminal" guard (a Failed job can still get Succeeded, e.g. after eviction);
* adding Succeeded or Failed flips both Running and an older Failed to False.

Order and the other rules (Running/Restarting exclusion, append at the end, lastTransitionTime
kept when the status does not change) are the same as v1's.
"""

from __future__ import annotations

import dataclasses

from kubetrain.api.conditions import FALSE, get_condition
from kubetrain.api.kinds import COND_FAILED, COND_RESTARTING, COND_RUNNING, COND_SUCCEEDED
from kubetrain.api.types import JobCondition, JobStatus


def set_condition(
    status: JobStatus, cond_type: str, cond_status: str, reason: str, message: str, now: str
) -> bool:
    """Apply one condition change the way mpi-operator's `setCondition` does; returns whether it
    changed anything."""
    current = get_condition(status, cond_type)
    if current is not None and current.status == cond_status and current.reason == reason:
        return False
    transition = now
    if current is not None and current.status == cond_status and current.last_transition_time:
        transition = current.last_transition_time
    kept: list[JobCondition] = []
    for cond in status.conditions:
        if cond.type == cond_type:
            continue
        if {cond_type, cond.type} == {COND_RUNNING, COND_RESTARTING}:
            continue
        if cond_type in (COND_SUCCEEDED, COND_FAILED) and cond.type in (COND_RUNNING, COND_FAILED):
            cond = dataclasses.replace(cond, status=FALSE, extra=dict(cond.extra))
        kept.append(cond)
    kept.append(
        JobCondition(
            type=cond_type,
            status=cond_status,
            reason=reason,
            message=message,
            last_update_time=now,
            last_transition_time=transition,
        )
    )
    status.conditions = kept
    return True
