"""``ttlSecondsAfterFinished``: a finished JobSet is deleted (Foreground) that long after its
Completed/Failed condition's transition (upstream's ``ttl_after_finished.go``)."""

from __future__ import annotations

from typing import Any

from kubetrain.kube.timefmt import parse_epoch

from . import constants as c

JsonDict = dict[str, Any]


def finish_time(status: JsonDict) -> float | None:
    for cond in status.get("conditions") or []:
        if cond.get("type") in (c.COMPLETED, c.FAILED) and cond.get("status") == "True":
            return parse_epoch(cond.get("lastTransitionTime"))
    return None


def seconds_left(js: JsonDict, status: JsonDict, now: float) -> float | None:
    """None without a TTL (or finish time); <= 0 once expired; else how long to wait."""
    ttl = (js.get("spec") or {}).get("ttlSecondsAfterFinished")
    finished = finish_time(status)
    if ttl is None or finished is None:
        return None
    return finished + float(ttl) - now
