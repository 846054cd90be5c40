"""`kubetrain node`: this machine joins a cluster as its kubelet, running pods as local processes.

Pointed at any API server through a kubeconfig, it registers a Node as a 1.36 kubelet does
(capacity/allocatable incl. ``pods``, Ready and pressure conditions, addresses, nodeInfo), renews
its Lease in kube-node-lease, runs the pods the scheduler binds to it and writes their status
(phase, conditions, container statuses) and graceful deletion as the kubelet does, so the real
kube-scheduler, node-lifecycle controller, garbage collector and namespace controller work with
it. It serves the kubelet API over TLS on ``--port`` (default: a free port, since several nodes
may share a machine; the Node's ``daemonEndpoints`` advertises it): ``/containerLogs`` and
``/exec`` (WebSocket and SPDY/3.1), so ``kubectl logs`` and ``kubectl exec`` reach its pods
through kube-apiserver. Callers need a client certificate of the cluster CA
(``--client-ca-file``, default: the kubeconfig's CA; with neither, the kubelet API is not
served);
``--authorization-mode Webhook`` also asks the API server (SubjectAccessReview on nodes/proxy).

`--bind-pending` also runs the binder (a small default scheduler), for control-plane-only
clusters (no kube-scheduler: envtest-like servers, our embedded API server).

What it does not do: images are not pulled (each container's command runs in this machine's
Python environment, or one the image map names); pod IPs are loopback addresses of this machine,
so pods on other nodes cannot reach them; no ``port-forward``, ``attach``, TTYs, metrics or
probes. Stopping it kills its pods and leaves the Node NotReady; `kubectl delete node NAME`
removes it.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
from pathlib import Path

from kubetrain.cli.commands import HELP
from kubetrain.cli.common import SubParsers, err, out, run_async
from kubetrain.cli.nodesize import add_node_size_options, never_fits_hint, node_size
from kubetrain.cli.serve import add_network_option
from kubetrain.cli.signals import Interrupts
from kubetrain.client.errors import ConfigError, KubetrainError
from kubetrain.embedded.node import KubeAPI, NetworkUnavailable, NodeAgent, NodeConfig, certs
from kubetrain.embedded.node.config import KubeletAPIConfig
from kubetrain.embedded.node.network import NetworkMode
from kubetrain.embedded.scheduler import Binder
from kubetrain.kube.errors import ApiError
from kubetrain.kube.quantity import quantity_value

log = logging.getLogger(__name__)


def register(sub: SubParsers) -> None:
    p = sub.add_parser(
        "node",
        help=HELP["node"],
        description="Register this machine as a Node of the cluster in --kubeconfig, run the pods "
        "bound to it as local processes and serve the kubelet API (logs, exec) over TLS. "
        "--bind-pending also binds pending pods, for clusters without a scheduler.",
    )
    p.add_argument(
        "--kubeconfig",
        metavar="PATH",
        help="kubeconfig of the cluster to join (default: $KUBECONFIG, then ~/.kube/config)",
    )
    p.add_argument("--context", help="kubeconfig context (default: the current one)")
    p.add_argument(
        "--name", default=None, help="the Node name (default: $KUBETRAIN_NODE_NAME, else kubetrain-local)"
    )
    p.add_argument(
        "--bind-pending",
        action="store_true",
        help="also bind pending pods of the default scheduler to ready nodes",
    )
    p.add_argument(
        "--workdir",
        metavar="DIR",
        default=".",
        help="working directory of pod processes whose container sets none (default: .)",
    )
    p.add_argument(
        "--root-dir",
        metavar="DIR",
        default=None,
        help="where pod sandboxes (volumes, logs) live (default: a temporary directory)",
    )
    add_network_option(p)
    add_node_size_options(p)
    p.add_argument(
        "--max-pods",
        metavar="N",
        type=int,
        default=110,
        help="pods the node runs at once, its pods capacity and allocatable (default 110, the "
        "kubelet's); the scheduler keeps the others Pending",
    )
    p.add_argument(
        "--container-log-max-size",
        metavar="SIZE",
        default=None,
        help="rotate a container's log when it would pass SIZE (default 10Mi, the kubelet's; "
        "also $KUBETRAIN_CONTAINER_LOG_MAX_SIZE)",
    )
    p.add_argument(
        "--container-log-max-files",
        metavar="N",
        type=int,
        default=None,
        help="log files kept per container, the current one included (default 5, the kubelet's; "
        "also $KUBETRAIN_CONTAINER_LOG_MAX_FILES)",
    )
    kubelet = p.add_argument_group("kubelet API (what kube-apiserver calls for logs and exec)")
    kubelet.add_argument(
        "--port",
        type=int,
        default=0,
        help="its port, advertised on the Node (default 0: a free one; kubelet uses 10250; -1: none)",
    )
    kubelet.add_argument("--address", default="127.0.0.1", help="its listen address (default: 127.0.0.1)")
    kubelet.add_argument(
        "--client-ca-file",
        metavar="PATH",
        help="CA of the client certificates it accepts (default: the kubeconfig's cluster CA)",
    )
    kubelet.add_argument("--tls-cert-file", metavar="PATH", help="serving certificate (default: self-signed)")
    kubelet.add_argument("--tls-private-key-file", metavar="PATH", help="key of --tls-cert-file")
    kubelet.add_argument(
        "--authorization-mode",
        choices=("AlwaysAllow", "Webhook"),
        default="AlwaysAllow",
        help="AlwaysAllow (default, as the kubelet flag): any caller the client CA signed; "
        "Webhook: ask the API server (SubjectAccessReview on nodes/proxy)",
    )
    p.set_defaults(handler=_node)


def _node(args: argparse.Namespace) -> int:
    workdir = Path(args.workdir).expanduser().resolve()
    if not workdir.is_dir():
        err.print(f"invalid --workdir {workdir}: not a directory", style="red", markup=False)
        return 2
    try:
        config = node_size(args).apply(NodeConfig(working_dir=workdir, network=args.network))
        if args.container_log_max_size is not None:
            config.container_log_max_size = _size(args.container_log_max_size)
        if args.container_log_max_files is not None:
            config.container_log_max_files = args.container_log_max_files
        config.log_policy  # noqa: B018 -- validates both
    except ValueError as exc:
        err.print(f"invalid container log settings: {exc}", style="red", markup=False)
        return 2
    if args.max_pods < 1:
        err.print(f"invalid --max-pods {args.max_pods}: use 1 or more", style="red", markup=False)
        return 2
    config.max_pods = args.max_pods
    if args.name:
        config.node_name = args.name
    if args.root_dir:
        config.root_dir = Path(args.root_dir).expanduser().resolve()
    if not -1 <= args.port <= 65535:
        err.print(f"invalid --port {args.port}: use 1-65535, 0 for a free port, -1 for none", style="red")
        return 2
    if bool(args.tls_cert_file) != bool(args.tls_private_key_file):
        err.print("--tls-cert-file and --tls-private-key-file go together", style="red")
        return 2
    if args.port >= 0:
        config.kubelet_api = KubeletAPIConfig(
            port=args.port,
            address=args.address,
            client_ca_file=_path(args.client_ca_file),
            tls_cert_file=_path(args.tls_cert_file),
            tls_private_key_file=_path(args.tls_private_key_file),
            authorization_mode=args.authorization_mode,
        )
    return run_async(_serve(args.kubeconfig, args.context, config, args.bind_pending, args.network))


def _path(value: str | None) -> Path | None:
    return Path(value).expanduser().resolve() if value else None


def _kubeconfig_path(kubeconfig: str | None) -> Path | None:
    for candidate in (kubeconfig, *os.environ.get("KUBECONFIG", "").split(os.pathsep), "~/.kube/config"):
        if candidate and Path(candidate).expanduser().is_file():
            return Path(candidate).expanduser()
    return None


async def _connect(kubeconfig: str | None, context: str | None) -> KubeAPI:
    if kubeconfig is not None and not Path(kubeconfig).expanduser().is_file():
        raise ConfigError(f"kubeconfig {kubeconfig}: no such file")
    try:
        return await KubeAPI.from_kubeconfig(kubeconfig, context)
    except Exception as exc:
        raise ConfigError(f"cannot load the kubeconfig {kubeconfig or '(default)'}: {exc}") from None


async def _serve(
    kubeconfig: str | None, context: str | None, config: NodeConfig, bind: bool, network: NetworkMode
) -> int:
    api = await _connect(kubeconfig, context)
    if config.api_service is None and api.base_url.startswith("https://"):
        # Pods are local processes: the `kubernetes` Service's cluster IP needs a kube-proxy, so
        # they reach the API server where this node does (KUBETRAIN_API_SERVICE).
        address = api.base_url.removeprefix("https://").split("/", 1)[0]
        config.api_service = address if re.search(r":\d+$", address) else f"{address}:443"
    kubelet = config.kubelet_api
    if kubelet is not None and kubelet.client_ca_file is None:
        path = _kubeconfig_path(kubeconfig)
        kubelet.client_ca_pem = certs.kubeconfig_ca(path, context) if path is not None else None
        if not kubelet.client_ca_pem:  # a plain-HTTP server has no client certificates
            err.print(
                "kubelet API not served: the kubeconfig names no cluster CA to check callers against "
                "(give --client-ca-file to serve it)",
                style="yellow",
                markup=False,
            )
            config.kubelet_api = None
    agent: NodeAgent | None = None
    binder: Binder | None = None
    async with Interrupts() as interrupts:
        try:
            try:
                agent = NodeAgent(api, config)
            except NetworkUnavailable as exc:
                raise KubetrainError(
                    f"cannot start the node: {exc} (`--network host` runs every pod on 127.0.0.1 instead)"
                ) from None
            try:
                await agent.start()
                if bind:
                    binder = Binder(api, never_fits=never_fits_hint)
                    await binder.start()
            except (ApiError, OSError, ValueError) as exc:
                raise KubetrainError(f"cannot join the cluster at {api.base_url}: {exc}") from None
            served = agent.kubelet_server
            api_note = f", kubelet API on {served.config.address}:{served.port}" if served else ""
            out.print(
                f"node {agent.name} joined {api.base_url} (network: {network}{api_note}"
                f"{', binding pending pods' if bind else ''}); Ctrl-C to stop",
                markup=False,
            )
            await interrupts.first.wait()
            return 0
        finally:
            if binder is not None:
                await binder.stop()
            if agent is not None:
                await agent.stop()
            await api.close()


def _size(text: str) -> int:
    try:
        return int(quantity_value(text))
    except ValueError:
        raise ValueError(f"--container-log-max-size {text!r} is not a size: use e.g. 10Mi") from None
