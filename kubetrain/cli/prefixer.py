"""Log-line prefixes: `master-0 | ...`, `worker-1 | ...`, one stable colour per replica.

Labels are padded to a common width so the `|` column lines up, and a replica keeps its
colour across restarts (the colour follows the label, not the pod uid), which is what lets a
user follow one replica through a crash and its replacement.
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.text import Text

PALETTE = (
    "cyan",
    "magenta",
    "green",
    "yellow",
    "blue",
    "bright_red",
    "bright_cyan",
    "bright_magenta",
    "bright_green",
    "bright_yellow",
    "bright_blue",
    "red",
)
SEPARATOR = " | "


def container_label(replica: str, container: str, default_container: str | None, init: bool = False) -> str:
    """`worker-1` for the job's main container, `worker-1/<container>` for init and other containers."""
    if not init and (default_container is None or container == default_container):
        return replica
    return f"{replica}/{container}"


class Prefixer:
    """Formats lines for many labelled streams; colours assigned in order of first appearance."""

    def __init__(self, labels: Iterable[str] = (), palette: tuple[str, ...] = PALETTE) -> None:
        self._palette = palette
        self._colours: dict[str, str] = {}
        self.width = 0
        for label in labels:
            self.colour(label)

    def colour(self, label: str) -> str:
        colour = self._colours.get(label)
        if colour is None:
            colour = self._palette[len(self._colours) % len(self._palette)]
            self._colours[label] = colour
            self.width = max(self.width, len(label))
        return colour

    def plain(self, label: str, line: str) -> str:
        """The line as text: `worker-1 | hello` (label padded to the widest label seen so far)."""
        self.colour(label)
        return f"{label.ljust(self.width)}{SEPARATOR}{line}"

    def text(self, label: str, line: str) -> Text:
        """The same line as rich Text, the prefix coloured (the log line itself is never markup)."""
        colour = self.colour(label)
        out = Text()
        out.append(label.ljust(self.width) + SEPARATOR, style=colour)
        out.append(line)
        return out
