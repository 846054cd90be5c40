"""`metav1.Condition` lists as apimachinery's `meta.SetStatusCondition` edits them, on raw dicts
(a TrainJob's status holds plain metav1 Conditions, not training-operator's JobConditions)."""

from __future__ import annotations

from typing import Any

JsonDict = dict[str, Any]


def find(conditions: object, cond_type: str) -> JsonDict | None:
    if not isinstance(conditions, list):
        return None
    return next((c for c in conditions if isinstance(c, dict) and c.get("type") == cond_type), None)


def is_true(status: JsonDict, cond_type: str) -> bool:
    cond = find(status.get("conditions"), cond_type)
    return cond is not None and cond.get("status") == "True"


def set_status_condition(status: JsonDict, new: JsonDict, stamp: str) -> None:
    """Add `new`, or update the condition of its type: lastTransitionTime moves only when the
    status changes (to `new`'s, else `stamp`); reason, message and observedGeneration follow."""
    conditions = status.get("conditions")
    if not isinstance(conditions, list):
        conditions = status["conditions"] = []
    have = find(conditions, str(new.get("type")))
    if have is None:
        cond = {k: v for k, v in new.items() if v not in (None, "")}
        cond.setdefault("lastTransitionTime", stamp)
        conditions.append(cond)
        return
    if have.get("status") != new.get("status"):
        have["status"] = new.get("status")
        have["lastTransitionTime"] = new.get("lastTransitionTime") or stamp
    for key in ("reason", "message", "observedGeneration"):
        if new.get(key) not in (None, ""):
            have[key] = new[key]
        else:
            have.pop(key, None)


def remove(status: JsonDict, cond_type: str) -> None:
    conditions = status.get("conditions")
    if isinstance(conditions, list):
        kept = [c for c in conditions if not (isinstance(c, dict) and c.get("type") == cond_type)]
        if kept:
            status["conditions"] = kept
        else:
            status.pop("conditions", None)
