"""Metrics a training program already prints, read from its log lines into series.

The convention (README "History"), chosen because most training loops print this way already:

* a line of ``key=value`` pairs, separated by spaces or commas: ``epoch=3 loss=0.48 accuracy=0.91``
  (every pair whose value is a number is a point; other words on the line are ignored);
* a JSON object on a line of its own: ``{"step": 10, "loss": 0.5}`` (its numeric top-level fields).

Each point keeps the line it came from, so a series is ordered as the program printed it.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

PAIR = re.compile(
    r"(?:^|[\s,;|])([A-Za-z_][\w./-]*)=([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)(?=$|[\s,;|%])"
)
"""`name=number`: a name as programs and loggers write them (`train/loss`, `lr`, `top-1`)."""


@dataclass(frozen=True)
class Point:
    line: int
    """The line's number in the container attempt's log, from 0."""
    name: str
    value: float


def line_metrics(line: str) -> dict[str, float]:
    """The metrics one log line carries by the convention; {} for an ordinary line."""
    text = line.strip()
    if text.startswith("{") and text.endswith("}"):
        try:
            doc = json.loads(text)
        except ValueError:
            doc = None
        if isinstance(doc, dict):
            return {
                str(k): float(v)
                for k, v in doc.items()
                if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
            }
    return {name: float(value) for name, value in PAIR.findall(text)}


def log_metrics(text: str) -> list[Point]:
    """Every metric point of a log, in the order it was printed."""
    return [
        Point(number, name, value)
        for number, line in enumerate(text.splitlines())
        for name, value in line_metrics(line).items()
    ]
