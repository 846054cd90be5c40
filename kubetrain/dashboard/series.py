"""Metric series of a job's replicas, as the log lines that carry them arrive.

A line is read by the history's convention (`kubetrain.history.metrics.line_metrics`:
``key=value`` numbers, JSON lines), so a live curve and the recorded one are the same points.
Each point is (attempt, line, value): a curve runs in print order across a replica's restarts.
A series is bounded: past `max_points` it keeps every other point (a long run's curve keeps its
shape) and starts a new generation, which a reader takes as "send it all again".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubetrain.history.metrics import line_metrics

MAX_POINTS = 5000

Point = tuple[int, int, float]
"""(attempt, line, value)."""


@dataclass
class Series:
    id: int
    replica: str
    container: str
    name: str
    points: list[Point] = field(default_factory=list)
    generation: int = 0

    def head(self) -> dict[str, Any]:
        return {"id": self.id, "replica": self.replica, "container": self.container, "name": self.name}


Cursors = dict[int, tuple[int, int]]
"""A reader's position in each series: (generation, points read)."""


class SeriesSet:
    def __init__(self, max_points: int = MAX_POINTS) -> None:
        self.max_points = max(2, max_points)
        self.series: dict[tuple[str, str, str], Series] = {}

    def add_line(self, replica: str, container: str, attempt: int, line_no: int, line: str) -> bool:
        """Read one log line; whether it carried any metric."""
        found = line_metrics(line)
        for name, value in found.items():
            self.add(replica, container, name, (attempt, line_no, value))
        return bool(found)

    def add(self, replica: str, container: str, name: str, point: Point) -> None:
        key = (replica, container, name)
        series = self.series.get(key)
        if series is None:
            series = self.series[key] = Series(len(self.series), replica, container, name)
        series.points.append(point)
        if len(series.points) > self.max_points:
            series.points = series.points[::2]
            series.generation += 1

    def since(self, cursors: Cursors) -> list[dict[str, Any]]:
        """The points each series has beyond `cursors` (updated in place); a series whose
        generation moved on comes whole, marked `replace`."""
        out = []
        for series in self.series.values():
            generation, read = cursors.get(series.id, (series.generation, 0))
            replace = generation != series.generation
            if replace:
                read = 0
            if read < len(series.points) or replace:
                out.append({**series.head(), "replace": replace, "points": series.points[read:]})
            cursors[series.id] = (series.generation, len(series.points))
        return out


def recorded_series(rows: list[tuple[str, str, str, list[Point]]]) -> list[dict[str, Any]]:
    """Series read from the history store ((replica, container, name, points)), in the same shape."""
    return [
        {"id": i, "replica": r, "container": c, "name": n, "replace": True, "points": points}
        for i, (r, c, n, points) in enumerate(rows)
    ]
