"""apimachinery's `duration.HumanDuration`: the AGE of kubectl's tables (`45s`, `3m12s`, `5h10m`).

Both the API server's table printers and our own CLI show ages; users compare them with kubectl's,
so they round the same way: about two significant figures, and a clock up to a second ahead of
the object's timestamp still reads `0s`.
"""

from __future__ import annotations


def _pair(major: int, major_unit: str, minor: int, minor_unit: str) -> str:
    return f"{major}{major_unit}{minor}{minor_unit}" if minor else f"{major}{major_unit}"


def human_duration(seconds: float) -> str:
    """`<invalid>` below -1 s (Go truncates toward zero, as `int()` does)."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return _pair(minutes, "m", s % 60, "s")
    if minutes < 180:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        return _pair(hours, "h", minutes % 60, "m")
    if hours < 48:
        return f"{hours}h"
    days = hours // 24
    if hours < 24 * 8:
        return _pair(days, "d", hours % 24, "h")
    if hours < 24 * 365 * 2:
        return f"{days}d"
    if hours < 24 * 365 * 8:
        return _pair(days // 365, "y", days % 365, "d")
    return f"{days // 365}y"
