"""The live status of `kubetrain run`: a status line under the logs on a terminal, transitions otherwise.

On a terminal a rich `Live` region at the bottom shows the state, replica counts and elapsed
time while log lines scroll above it. When output is a pipe or a file there is no cursor to
move, so each state change is printed once as a plain line to stderr instead.
"""

from __future__ import annotations

import time
from types import TracebackType
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.text import Text

from kubetrain.api.kinds import KindInfo
from kubetrain.client import jobstate

JsonDict = dict[str, Any]
STATE_STYLE = {
    "Succeeded": "bold green",
    "Failed": "bold red",
    "Running": "bold cyan",
    "Restarting": "bold yellow",
    "Created": "bold",
    "Suspended": "yellow",
}


def status_text(info: KindInfo, name: str, job: JsonDict | None, elapsed: float) -> Text:
    """`pytorchjob/x  Running  master 1 active of 1  worker 2 active of 2  12s`."""
    text = Text(f"{info.singular}/{name}  ", style="bold")
    if job is None:
        text.append("Submitting", style="dim")
        return text
    state = jobstate.state(job) or "Pending"
    text.append(state, style=STATE_STYLE.get(state, ""))
    rest = jobstate.summary(job, info).split("  ", 1)[1:]
    if rest:
        text.append("  " + rest[0], style="dim")
    text.append(f"  {elapsed:.0f}s", style="dim")
    return text


class StatusView:
    """`with StatusView(console, info, name) as view: view.update(job)`."""

    def __init__(self, console: Console, info: KindInfo, name: str, live: bool | None = None) -> None:
        self.console = console
        self.info = info
        self.name = name
        self.job: JsonDict | None = None
        self.started = time.monotonic()
        self._live_enabled = console.is_terminal if live is None else live
        self._live: Live | None = None
        self._last_line = ""

    def __rich__(self) -> Text:
        return status_text(self.info, self.name, self.job, time.monotonic() - self.started)

    def __enter__(self) -> StatusView:
        if self._live_enabled:
            self._live = Live(
                self,
                console=self.console,
                refresh_per_second=4,
                transient=True,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self._live.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._live is not None:
            self._live.stop()  # transient: the region disappears, so print its last state for good
            self._live = None
            if self.job is not None:
                self.console.print(self.__rich__())

    def update(self, job: JsonDict) -> None:
        self.job = job
        if self._live is not None:
            self._live.refresh()
            return
        line = jobstate.summary(job, self.info)
        if line != self._last_line:
            self._last_line = line
            self.console.print(Text(f"{self.info.singular}/{self.name}: {line}", style="dim"))
