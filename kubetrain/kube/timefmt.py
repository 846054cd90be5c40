"""Kubernetes timestamps: RFC 3339 in UTC with a `Z` suffix, as apimachinery writes them.

`metav1.Time` is whole seconds, `metav1.MicroTime` (Lease renewTime, events.k8s.io eventTime)
six fractional digits, the kubelet's log lines nine. Status is compared by deep equality to decide
whether to write it, so every timestamp we produce has exactly one spelling; parsing is lenient
because objects come from other writers. A moment is an aware (or UTC-naive) datetime or seconds
since the epoch: the operator reasons in datetimes, the node agent and the API server in
`time.time()`.
"""

from __future__ import annotations

import math
import time
from datetime import UTC, datetime

_SECONDS = "%Y-%m-%dT%H:%M:%S"


def _gmtime(moment: datetime | float, digits: int = 0) -> tuple[time.struct_time, int]:
    """The UTC calendar time at whole seconds, and the fraction left over in `digits` digits."""
    if isinstance(moment, datetime):
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        utc = moment.astimezone(UTC)
        return utc.timetuple(), utc.microsecond * 10**digits // 10**6
    whole = math.floor(moment)
    return time.gmtime(whole), min(int((moment - whole) * 10**digits), 10**digits - 1)


def format_time(moment: datetime | float) -> str:
    """`2026-01-02T03:04:05Z` (metav1.Time); a naive datetime is UTC, sub-seconds are dropped."""
    return time.strftime(_SECONDS, _gmtime(moment)[0]) + "Z"


def format_microtime(moment: datetime | float) -> str:
    """`2026-01-02T03:04:05.678901Z` (metav1.MicroTime: always six digits, truncated)."""
    calendar, micros = _gmtime(moment, 6)
    return time.strftime(_SECONDS, calendar) + f".{micros:06d}Z"


def format_nanotime(moment: float) -> str:
    """`2026-01-02T03:04:05.678901234Z`, the kubelet's log-line stamp (fixed width: sorts as text)."""
    calendar, nanos = _gmtime(moment, 9)
    return time.strftime(_SECONDS, calendar) + f".{nanos:09d}Z"


def parse_time(text: object) -> datetime | None:
    """An aware UTC datetime from an RFC 3339 string, or None when absent or malformed."""
    if not isinstance(text, str) or not text:
        return None
    value = text.strip()
    if value.endswith(("Z", "z")):
        value = value[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def parse_epoch(text: object) -> float | None:
    """Seconds since the epoch from an RFC 3339 string, or None when absent or malformed."""
    moment = parse_time(text)
    return None if moment is None else moment.timestamp()


def seconds_between(start: datetime, end: datetime) -> float:
    return (end - start).total_seconds()
