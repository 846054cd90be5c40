"""`kubetrain up`: keep a local plane (API server, operator, node) running for many jobs.

The kubeconfig goes to ~/.kube/kubetrain.yaml by default: a stable place tools already look
near, separate from the user's ~/.kube/config (which we never edit). It is removed again on a
clean exit, because it would otherwise point at a port nobody listens on any more.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from pathlib import Path

from kubetrain.cli.common import SubParsers, err, out, run_async
from kubetrain.cli.plane import LocalPlane
from kubetrain.cli.signals import Interrupts
from kubetrain.embedded.node.network import NetworkMode

DEFAULT_KUBECONFIG = "~/.kube/kubetrain.yaml"


def register(sub: SubParsers) -> None:
    up = sub.add_parser(
        "up",
        help="run a local plane (API server + operator + node) until Ctrl-C",
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
    add_network_option(up)
    up.set_defaults(handler=_up)


def add_network_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--network",
        choices=("isolated", "host"),
        default="isolated",
        help="isolated (default): one loopback IP per pod, replica names resolve (Linux, "
        "needs nss_wrapper and a C compiler); host: every pod on 127.0.0.1",
    )


def _up(args: argparse.Namespace) -> int:
    if not 0 <= args.port <= 65535:
        err.print(f"invalid --port {args.port}: use 1-65535, or 0 for a free port", style="red", markup=False)
        return 2
    workdir = Path(args.workdir).expanduser().resolve()
    if not workdir.is_dir():
        err.print(f"invalid --workdir {workdir}: not a directory", style="red", markup=False)
        return 2
    return run_async(_serve(args.port, args.kubeconfig, args.namespace, workdir, args.network))


async def _serve(port: int, kubeconfig: str, namespace: str, workdir: Path, network: NetworkMode) -> int:
    plane = LocalPlane(port=port, working_dir=workdir, network=network)
    async with Interrupts() as interrupts:
        try:
            await plane.start()
            await plane.ensure_namespace(namespace)
            await serve_until_interrupted(plane, kubeconfig, namespace, interrupts)
            return 0
        finally:
            await plane.stop()


async def serve_until_interrupted(
    plane: LocalPlane, kubeconfig: str, namespace: str, interrupts: Interrupts
) -> None:
    """Write the kubeconfig, say how to use it, wait for Ctrl-C/SIGTERM, remove the file."""
    path = Path(kubeconfig).expanduser()
    written = plane.write_kubeconfig(path, namespace)
    out.print(f"kubetrain plane serving at {plane.url}", style="bold", markup=False)
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
