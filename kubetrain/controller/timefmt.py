"""Kubernetes timestamps: RFC3339 at whole seconds, UTC, `Z` suffix (metav1.Time's wire form).

Status is compared by deep equality to decide whether to write it, so every timestamp we produce
must have exactly one spelling; parsing is lenient because objects may come from other writers.
"""

from __future__ import annotations

from datetime import UTC, datetime


def format_time(moment: datetime) -> str:
    """`2026-01-02T03:04:05Z`; a naive datetime is taken to be UTC, sub-seconds are dropped."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: object) -> datetime | None:
    """An aware UTC datetime from an RFC3339 string, or None when absent or malformed."""
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


def seconds_between(start: datetime, end: datetime) -> float:
    return (end - start).total_seconds()
