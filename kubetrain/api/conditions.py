"""The job condition algebra of docs/upstream-behaviour.md#conditions, exactly as upstream applies it.

Tools (the `State` printer column, the SDK, upstream tests) read the ORDER of the list, so the
rules about where a condition goes and which ones it flips are reproduced verbatim.
"""

from __future__ import annotations

import dataclasses

from kubetrain.api.kinds import COND_FAILED, COND_RESTARTING, COND_RUNNING, COND_SUCCEEDED
from kubetrain.api.types import JobCondition, JobStatus

TRUE = "True"
FALSE = "False"


def get_condition(status: JobStatus, cond_type: str) -> JobCondition | None:
    for cond in status.conditions:
        if cond.type == cond_type:
            return cond
    return None


def has_condition(status: JobStatus, cond_type: str) -> bool:
    """True iff a condition of that type exists with status "True"."""
    cond = get_condition(status, cond_type)
    return cond is not None and cond.status == TRUE


def is_finished(status: JobStatus) -> bool:
    return has_condition(status, COND_SUCCEEDED) or has_condition(status, COND_FAILED)


@dataclasses.dataclass(frozen=True)
class ConditionRules:
    """Where two upstreams' condition algebras differ; the rest (order, Running/Restarting
    exclusion, append at the end, lastTransitionTime kept while the status holds) is the same.

    The default is training-operator's; mpi-operator's `setCondition` (MPIJob v2beta1,
    docs/upstream-behaviour.md#mpijob-v2beta1-status) has no terminal Failed, so a Failed job can
    still get Succeeded (after an eviction), and a new Succeeded flips an older Failed to False too.
    """

    failed_is_terminal: bool = True
    flipped_by_finish: tuple[str, ...] = (COND_RUNNING,)
    """The condition types a new Succeeded or Failed sets to False (reason, message and timestamps
    kept)."""


TRAINING_OPERATOR_RULES = ConditionRules()
MPI_OPERATOR_RULES = ConditionRules(failed_is_terminal=False, flipped_by_finish=(COND_RUNNING, COND_FAILED))


def set_condition(
    status: JobStatus,
    cond_type: str,
    cond_status: str,
    reason: str,
    message: str,
    now: str,
    rules: ConditionRules = TRAINING_OPERATOR_RULES,
) -> bool:
    """Apply one condition change; returns whether the list changed.

    1. Failed=True is terminal: nothing is added afterwards (unless `rules` say otherwise).
    2. Same type, status and reason already present: no-op (timestamps untouched).
    3. Same type and status, other reason: lastTransitionTime is kept.
    4. The old condition of that type is removed; Restarting and Running exclude each other;
       Succeeded/Failed flip Running (and whatever else `rules` name) to False (reason, message
       and timestamps kept).
    5. The new condition is appended at the end.
    """
    if rules.failed_is_terminal and has_condition(status, COND_FAILED):
        return False
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
        if (
            cond_type in (COND_SUCCEEDED, COND_FAILED)
            and cond.type in rules.flipped_by_finish
            and cond.status != FALSE
        ):
            # Upstream flips only the status: reason, message and timestamps stay as they were.
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
