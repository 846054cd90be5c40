"""`kubetrain up`: keep a local plane (API server, operator, node) running for many jobs.

Its objects (jobs with their status, pods, events...) live in ``<data dir>/plane.db`` (see
`datadir`), so the next `kubetrain up` comes back with them, also after a SIGKILL; the pods a
stopped plane was running are restarted or failed by their restartPolicy, as after a kubelet
restart. The kubeconfig goes to ~/.kube/kubetrain.yaml by default: a stable place tools already
look near, separate from the user's ~/.kube/config (which we never edit). It is removed again on a
clean exit, because it would otherwise point at a port nobody listens on any more; after a SIGKILL
the next start rewrites it.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from pathlib import Path

from kubetrain.cli.commands import HELP
from kubetrain.cli.common import SubParsers, err, out, run_async
from kubetrain.cli.dashboard import (
    add_dashboard_port,
    serving_line,
    start_for_plane,
    stop_for_plane,
    valid_port,
)
from kubetrain.cli.datadir import PODS_DIR, STATE_FILE, DataDirLock, default_data_dir
from kubetrain.cli.history import add_history_bounds, history_store
from kubetrain.cli.nodesize import NodeSize, add_node_size_options, node_size
from kubetrain.cli.plane import LocalPlane
from kubetrain.cli.signals import Interrupts
from kubetrain.embedded.node.network import NetworkMode
from kubetrain.history.store import HISTORY_FILE, HistoryStore

DEFAULT_KUBECONFIG = "~/.kube/kubetrain.yaml"


def register(sub: SubParsers) -> None:
    up = sub.add_parser(
        "up",
        help=HELP["up"],
        description="Serve a Kubernetes-compatible API with the kubetrain operator and a process node on "
        "loopback, write a kubeconfig for it, and run jobs submitted with kubectl, the SDK "
        "or `kubetrain`/`kubetrain.Client` until Ctrl-C.",
    )
    up.add_argument("--port", type=int, default=0, help="API server port on 127.0.0.1 (default: a free one)")
    up.add_argument(
        "--kubeconfig",
        metavar="PATH",
        default=DEFAULT_KUBECONFIG,
        help=f"where to write the kubeconfig (default: {DEFAULT_KUBECONFIG})",
    )
    up.add_argument(
        "--workdir",
        metavar="DIR",
        default=".",
        help="working directory of pod processes whose container sets none (default: .)",
    )
    up.add_argument("-n", "--namespace", default="default", help="the kubeconfig context's namespace")
    add_data_dir_option(up, f"where the plane keeps its state (default: {default_data_dir()})")
    up.add_argument(
        "--reset", action="store_true", help="delete the stored state first: start with an empty plane"
    )
    add_history_bounds(up)
    add_network_option(up)
    add_node_size_options(up)
    add_gang_scheduler_option(up)
    dashboard = up.add_argument_group("web dashboard (jobs, logs, loss curves, history; loopback only)")
    add_dashboard_port(dashboard)
    dashboard.add_argument("--no-dashboard", action="store_true", help="serve no web dashboard")
    up.set_defaults(handler=_up)


def add_data_dir_option(parser: argparse.ArgumentParser, help_text: str) -> None:
    parser.add_argument("--data-dir", metavar="DIR", default=None, help=help_text)


def add_network_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--network",
        choices=("isolated", "host"),
        default="isolated",
        help="isolated (default): one loopback IP per pod, replica names resolve (Linux, "
        "needs nss_wrapper and a C compiler); host: every pod on 127.0.0.1",
    )


def add_gang_scheduler_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--gang-scheduler-name",
        default="",
        metavar="NAME",
        help="gang schedule every job with this scheduler's PodGroup, as `kubetrain operator "
        "--gang-scheduler-name` ('volcano' or a scheduler-plugins name); without it, jobs whose pods "
        "name volcano or scheduler-plugins-scheduler are gang scheduled by it",
    )


def _up(args: argparse.Namespace) -> int:
    if not 0 <= args.port <= 65535:
        err.print(f"invalid --port {args.port}: use 1-65535, or 0 for a free port", style="red", markup=False)
        return 2
    if not valid_port(args.dashboard_port):
        return 2
    workdir = Path(args.workdir).expanduser().resolve()
    if not workdir.is_dir():
        err.print(f"invalid --workdir {workdir}: not a directory", style="red", markup=False)
        return 2
    data_dir = Path(args.data_dir).expanduser().resolve() if args.data_dir else default_data_dir()
    with DataDirLock(data_dir) as lock:
        if args.reset:
            lock.reset()
        state = data_dir / STATE_FILE
        size = node_size(args)
        history = history_store(data_dir / HISTORY_FILE, args)
        return run_async(
            _serve(
                args.port,
                args.kubeconfig,
                args.namespace,
                workdir,
                args.network,
                state,
                size,
                args.gang_scheduler_name,
                history,
                data_dir / PODS_DIR,
                None if args.no_dashboard else args.dashboard_port,
            )
        )


async def _serve(
    port: int,
    kubeconfig: str,
    namespace: str,
    workdir: Path,
    network: NetworkMode,
    state: Path,
    size: NodeSize,
    gang_scheduler_name: str = "",
    history: HistoryStore | None = None,
    pods_dir: Path | None = None,
    dashboard_port: int | None = None,
) -> int:
    """`dashboard_port` None: no dashboard."""
    plane = LocalPlane(
        port=port,
        working_dir=workdir,
        network=network,
        state_file=state,
        node_size=size,
        gang_scheduler_name=gang_scheduler_name,
        history=history,
        pods_dir=pods_dir,
    )
    dashboard = None
    async with Interrupts() as interrupts:
        try:
            await plane.start()
            await plane.ensure_namespace(namespace)
            out.print(f"state kept in {state} (`kubetrain up --reset` starts empty)", markup=False)
            if pods_dir is not None:
                out.print(
                    f"pods run in their own views of their jobs' directories, kept in {pods_dir}",
                    markup=False,
                )
            line = None
            if dashboard_port is not None:
                dashboard = await start_for_plane(plane, history.path if history else None, dashboard_port)
                line = serving_line(dashboard, dashboard_port)
            await serve_until_interrupted(plane, kubeconfig, namespace, interrupts, line)
            return 0
        finally:
            await stop_for_plane(dashboard)
            await plane.stop()


async def serve_until_interrupted(
    plane: LocalPlane, kubeconfig: str, namespace: str, interrupts: Interrupts, dashboard: str | None = None
) -> None:
    """Write the kubeconfig, say how to use it (and `dashboard`, the dashboard's line), wait for
    Ctrl-C/SIGTERM, remove the file."""
    path = Path(kubeconfig).expanduser()
    written = plane.write_kubeconfig(path, namespace)
    out.print(f"kubetrain plane serving at {plane.url}", style="bold", markup=False)
    if dashboard is not None:
        out.print(dashboard, style="bold", markup=False)
    out.print(f"kubeconfig written to {written}; use it with:", markup=False)
    out.print(f"  export KUBECONFIG={written}", markup=False)
    out.print(
        "  kubetrain get            # or kubectl get pytorchjobs,pods; kubetrain logs KIND NAME -f",
        markup=False,
    )
    out.print(f"  python -c \"import kubetrain; print(kubetrain.Client('{written}').list())\"", markup=False)
    out.print("Ctrl-C to stop (running jobs' processes are stopped too).", style="dim", markup=False)
    try:
        await interrupts.first.wait()
    finally:
        with contextlib.suppress(OSError):
            if path.is_file() and plane.url in path.read_text(encoding="utf-8"):
                os.unlink(path)
