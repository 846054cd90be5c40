"""The dashboard's flags on `up`, `run` and `dashboard`, and opening a browser only where one can show."""

from __future__ import annotations

import argparse
import threading
import webbrowser
from pathlib import Path

import pytest

from kubetrain.cli import dashboard as cli_dashboard
from kubetrain.cli.main import build_parser, main
from kubetrain.dashboard import DEFAULT_PORT


def parse(*argv: str) -> argparse.Namespace:
    return build_parser(list(argv)).parse_args(list(argv))


def test_up_serves_the_dashboard_on_its_default_port_unless_told_not_to() -> None:
    args = parse("up")
    assert (args.dashboard_port, args.no_dashboard) == (DEFAULT_PORT, False)
    args = parse("up", "--dashboard-port", "0", "--no-dashboard")
    assert (args.dashboard_port, args.no_dashboard) == (0, True)


def test_run_serves_it_only_when_asked() -> None:
    assert parse("run", "job.yaml").dashboard is False
    args = parse("run", "--dashboard", "--dashboard-port", "9999", "job.yaml")
    assert (args.dashboard, args.dashboard_port) == (True, 9999)


def test_the_dashboard_command_takes_a_cluster_a_port_and_a_history(tmp_path: Path) -> None:
    args = parse("dashboard", "--kubeconfig", "k.yaml", "--context", "c", "-n", "team", "--port", "0")
    assert (args.kubeconfig, args.context, args.namespace, args.dashboard_port) == ("k.yaml", "c", "team", 0)
    assert (
        cli_dashboard.history_path(parse("dashboard", "--data-dir", str(tmp_path))) == tmp_path / "history.db"
    )
    assert cli_dashboard.history_path(parse("dashboard", "--history", "/x/h.db")) == Path("/x/h.db")
    assert cli_dashboard.history_path(parse("dashboard", "--no-history")) is None


@pytest.mark.parametrize(
    "argv",
    [
        ["dashboard", "--port", "70000"],
        ["up", "--dashboard-port", "-1"],
        ["run", "--dashboard", "--dashboard-port", "65536", "x.yaml"],
    ],
)
def test_an_impossible_port_is_invalid_input(argv: list[str]) -> None:
    assert main(argv) == 2


def test_no_browser_is_opened_without_a_display(monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[str] = []
    monkeypatch.setattr(webbrowser, "open", lambda url, new=0: opened.append(url))
    monkeypatch.setattr(cli_dashboard.sys, "platform", "linux")
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    assert cli_dashboard.open_in_browser("http://127.0.0.1:1/") is False
    assert opened == []


def test_a_browser_that_cannot_start_is_no_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(url: str, new: int = 0) -> bool:
        raise webbrowser.Error("could not locate runnable browser")

    monkeypatch.setattr(webbrowser, "open", broken)
    monkeypatch.setenv("DISPLAY", ":0")
    assert cli_dashboard.open_in_browser("http://127.0.0.1:1/") is True
    for thread in threading.enumerate():  # it opens in the background: done before the patch goes
        if thread.name == "open dashboard":
            thread.join(10)
