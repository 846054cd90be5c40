"""JobSet conditions as upstream's ``updateCondition`` changes them (``jobset_controller.go``).

A condition of a type already present is replaced only when its status changes (reason and
message are not refreshed); a new condition is added only when True; ``StartupPolicyInProgress``
and ``StartupPolicyCompleted`` exclude each other (the older one turns False). Each change
queues the event upstream emits with the condition's reason and message.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import constants as c

JsonDict = dict[str, Any]

_EXCLUSIVE = {c.STARTUP_POLICY_IN_PROGRESS, c.STARTUP_POLICY_COMPLETED}


@dataclass(frozen=True)
class Event:
    type: str  # Normal | Warning
    reason: str
    message: str


def finished(status: JsonDict) -> bool:
    """``jobSetFinished``: Completed or Failed is True."""
    return any(
        cond.get("type") in (c.COMPLETED, c.FAILED) and cond.get("status") == "True"
        for cond in status.get("conditions") or []
    )


def update_condition(
    status: JsonDict, cond_type: str, value: str, reason: str, message: str, now: str
) -> bool:
    """Apply one condition to `status` in place; whether anything changed."""
    new = {
        "type": cond_type,
        "status": value,
        "lastTransitionTime": now,
        "reason": reason,
        "message": message,
    }
    conditions: list[JsonDict] = [dict(x) for x in status.get("conditions") or []]
    found = changed = False
    for i, cur in enumerate(conditions):
        if cur.get("type") == cond_type:
            if cur.get("status") != value:
                conditions[i] = new
                changed = True
            found = True
        elif {cur.get("type"), cond_type} == _EXCLUSIVE and cur.get("status") == "True" and value == "True":
            cur["status"] = "False"
            changed = True
    if not found and value == "True":
        conditions.append(new)
        changed = True
    if changed:
        status["conditions"] = conditions
    return changed


def set_condition(
    status: JsonDict,
    events: list[Event],
    event_type: str,
    cond_type: str,
    value: str,
    reason: str,
    message: str,
    now: str,
) -> bool:
    """``setCondition``: update, and on a change queue the event (sent after the status write)."""
    if not update_condition(status, cond_type, value, reason, message, now):
        return False
    events.append(Event(event_type, reason, message))
    return True


def set_completed(status: JsonDict, events: list[Event], now: str) -> None:
    set_condition(
        status, events, "Normal", c.COMPLETED, "True", c.ALL_JOBS_COMPLETED_REASON,
        c.ALL_JOBS_COMPLETED_MESSAGE, now,
    )  # fmt: skip
    status["terminalState"] = c.COMPLETED


def set_failed(status: JsonDict, events: list[Event], reason: str, message: str, now: str) -> None:
    set_condition(status, events, "Warning", c.FAILED, "True", reason, message, now)
    status["terminalState"] = c.FAILED


def set_suspended(status: JsonDict, events: list[Event], now: str) -> None:
    set_condition(
        status, events, "Normal", c.SUSPENDED, "True", c.JOBSET_SUSPENDED_REASON,
        c.JOBSET_SUSPENDED_MESSAGE, now,
    )  # fmt: skip


def set_resumed(status: JsonDict, events: list[Event], now: str) -> None:
    set_condition(
        status, events, "Normal", c.SUSPENDED, "False", c.JOBSET_RESUMED_REASON,
        c.JOBSET_RESUMED_MESSAGE, now,
    )  # fmt: skip


def set_startup_in_progress(status: JsonDict, events: list[Event], now: str) -> None:
    set_condition(
        status, events, "Normal", c.STARTUP_POLICY_IN_PROGRESS, "True",
        c.IN_ORDER_STARTUP_POLICY_IN_PROGRESS_REASON, c.IN_ORDER_STARTUP_POLICY_IN_PROGRESS_MESSAGE, now,
    )  # fmt: skip


def set_startup_completed(status: JsonDict, events: list[Event], now: str) -> None:
    set_condition(
        status, events, "Normal", c.STARTUP_POLICY_COMPLETED, "True",
        c.IN_ORDER_STARTUP_POLICY_COMPLETED_REASON, c.IN_ORDER_STARTUP_POLICY_COMPLETED_MESSAGE, now,
    )  # fmt: skip
