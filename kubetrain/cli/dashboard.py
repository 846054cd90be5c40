"""`kubetrain dashboard`: the web dashboard for any cluster; and the dashboard `up` and `run` serve.

`kubetrain up` serves it beside its plane (its URL printed at start; `--no-dashboard` turns it
off), `kubetrain run --dashboard` for the one job it runs (the job's page URL printed, opened in
a browser when this session has a display), and `kubetrain dashboard --kubeconfig ...` for the
cluster of any kubeconfig, until Ctrl-C. It listens on 127.0.0.1 only (`kubetrain.dashboard.guard`).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import threading
import webbrowser
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from kubetrain.cli.commands import HELP
from kubetrain.cli.common import SubParsers, err, out, run_async
from kubetrain.cli.datadir import default_data_dir
from kubetrain.dashboard import DEFAULT_PORT
from kubetrain.history.store import HISTORY_FILE

if TYPE_CHECKING:  # aiohttp and the plane load only when a dashboard starts
    from kubetrain.cli.plane import LocalPlane
    from kubetrain.dashboard.server import Dashboard


def add_dashboard_port(parser: argparse.ArgumentParser, flag: str = "--dashboard-port") -> None:
    parser.add_argument(
        flag,
        dest="dashboard_port",
        type=int,
        default=DEFAULT_PORT,
        metavar="PORT",
        help=f"the web dashboard's port on 127.0.0.1 (default {DEFAULT_PORT}, a free one if taken; "
        "0: a free one)",
    )


def valid_port(port: int) -> bool:
    if 0 <= port <= 65535:
        return True
    err.print(f"invalid dashboard port {port}: use 1-65535, or 0 for a free port", style="red", markup=False)
    return False


def register(sub: SubParsers) -> None:
    dash = sub.add_parser(
        "dashboard",
        help=HELP["dashboard"],
        description="Serve the web dashboard (jobs, their replicas' logs and loss curves, the job history) "
        "for the cluster of a kubeconfig, on 127.0.0.1, until Ctrl-C. `kubetrain up` serves one already.",
    )
    group = dash.add_argument_group("cluster")
    group.add_argument(
        "--kubeconfig", metavar="PATH", help="kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)"
    )
    group.add_argument("--context", help="kubeconfig context (default: the current context)")
    group.add_argument("-n", "--namespace", help="show only this namespace (default: all namespaces)")
    add_dashboard_port(dash, "--port")
    dash.add_argument(
        "--data-dir",
        metavar="DIR",
        default=None,
        help=f"show the job history of this data directory (default: {default_data_dir()}, if any)",
    )
    dash.add_argument(
        "--history", metavar="FILE", default=None, help="show this history file (as `operator --history`)"
    )
    dash.add_argument("--no-history", action="store_true", help="show no job history")
    dash.add_argument("--open", action="store_true", help="open it in a browser (when there is a display)")
    dash.set_defaults(handler=_dashboard)


def history_path(args: argparse.Namespace) -> Path | None:
    if getattr(args, "no_history", False):
        return None
    if getattr(args, "history", None):
        return Path(args.history).expanduser()
    data_dir = Path(args.data_dir).expanduser() if getattr(args, "data_dir", None) else default_data_dir()
    return data_dir / HISTORY_FILE


def _dashboard(args: argparse.Namespace) -> int:
    if not valid_port(args.dashboard_port):
        return 2
    return run_async(_serve(args))


async def _serve(args: argparse.Namespace) -> int:
    from kubetrain.cli.signals import Interrupts
    from kubetrain.client.aio import AsyncClient
    from kubetrain.dashboard.server import Dashboard
    from kubetrain.dashboard.usage import PodMetricsAPI

    client = await AsyncClient.connect(args.kubeconfig, args.context, args.namespace)
    try:
        dashboard = Dashboard(
            client,
            history=history_path(args),
            usage=PodMetricsAPI(client.kube.api),
            namespace=args.namespace or "",
            title="kubetrain",
        )
        async with Interrupts() as interrupts:
            await dashboard.start(args.dashboard_port)
            try:
                out.print(serving_line(dashboard, args.dashboard_port), style="bold", markup=False)
                out.print("Ctrl-C to stop.", style="dim", markup=False)
                if args.open:
                    open_in_browser(dashboard.url)
                await interrupts.first.wait()
            finally:
                await dashboard.stop()
        return 0
    finally:
        await client.close()


def serving_line(dashboard: Dashboard, asked: int, url: str | None = None) -> str:
    """`dashboard: http://127.0.0.1:8470/`, saying so when the asked port was taken."""
    note = f" (port {asked} is taken)" if dashboard.fell_back else ""
    return f"dashboard: {url or dashboard.url}{note}"


def plane_processes(plane: LocalPlane) -> Mapping[str, Mapping[str, int]]:
    """pod uid -> container -> pid of the processes the plane's node runs now."""
    agent = plane.agent
    if agent is None:
        return {}
    return {
        uid: {name: proc.pid for name, proc in list(worker.procs.items()) if proc.running}
        for uid, worker in list(agent.workers.items())
    }


async def start_for_plane(plane: LocalPlane, history: Path | None, port: int) -> Dashboard:
    """The dashboard of an in-process plane: its client, its history file, its pods' processes."""
    from kubetrain.dashboard.server import Dashboard
    from kubetrain.dashboard.usage import LocalProcesses

    client = plane.client()
    usage = LocalProcesses(lambda: plane_processes(plane))
    dashboard = Dashboard(client, history=history, usage=usage, title="kubetrain (local)")
    try:
        await dashboard.start(port)
    except OSError as exc:
        await client.close()
        from kubetrain.cli.plane import PlaneError

        raise PlaneError(
            f"cannot serve the dashboard on 127.0.0.1:{port}: {exc.strerror or exc} "
            "(pick another --dashboard-port, or --no-dashboard)"
        ) from None
    except BaseException:
        await client.close()
        raise
    return dashboard


async def stop_for_plane(dashboard: Dashboard | None) -> None:
    if dashboard is None:
        return
    try:
        await dashboard.stop()
    finally:
        if dashboard.client is not None:
            await dashboard.client.close()


def has_display() -> bool:
    """Whether a browser could show a window here (never a text browser in our terminal)."""
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def open_in_browser(url: str) -> bool:
    """Ask the desktop's browser to open `url`, in the background; False when there is no display.

    Never fails and never waits: a browser that cannot start only means the URL stays printed.
    """
    if not has_display():
        return False

    def open_it() -> None:
        with contextlib.suppress(Exception):  # webbrowser.Error, OSError from a broken browser setup
            webbrowser.open(url, new=2)

    threading.Thread(target=open_it, name="open dashboard", daemon=True).start()
    return True
