"""`kubetrain node`: this machine joins a cluster as a Node that runs pods as local processes.

The node agent of the local plane, pointed at any API server through a kubeconfig: it registers
a Node, heartbeats its Lease in kube-node-lease, and runs the pods bound to it. `--bind-pending`
also runs the binder (a small default scheduler), which makes a control-plane-only cluster (no
kube-scheduler, no kubelets: kcp-like test servers, envtest, our embedded API server) usable for
end-to-end tests of the operator.

What a kubelet does and this agent does not, on a real cluster: it serves no kubelet API on :10250,
so `kubectl logs`/`exec`/`port-forward` on its pods fail (the API server proxies those to the
kubelet); container output goes to files under the node's root directory and to this process's
own log. Images are not pulled: each container's command runs in this machine's Python
environment (or one the image map names). Pod IPs are loopback addresses of this machine, so pods
on other nodes cannot reach them. Stopping the agent kills its pods and leaves the Node NotReady;
`kubectl delete node NAME` removes it.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from kubetrain.cli.common import SubParsers, err, out, run_async
from kubetrain.cli.serve import add_network_option
from kubetrain.cli.signals import Interrupts
from kubetrain.client.errors import ConfigError, KubetrainError
from kubetrain.embedded.node import KubeAPI, NetworkUnavailable, NodeAgent, NodeConfig
from kubetrain.embedded.node.kubeapi import ApiError
from kubetrain.embedded.node.network import NetworkMode
from kubetrain.embedded.scheduler import Binder

log = logging.getLogger(__name__)


def register(sub: SubParsers) -> None:
    p = sub.add_parser(
        "node",
        help="join a cluster as a node that runs its pods as local processes",
        description="Register this machine as a Node of the cluster in --kubeconfig and run the pods "
        "bound to it as local processes (no container runtime, no kubelet API: see the docs). "
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
    p.set_defaults(handler=_node)


def _node(args: argparse.Namespace) -> int:
    workdir = Path(args.workdir).expanduser().resolve()
    if not workdir.is_dir():
        err.print(f"invalid --workdir {workdir}: not a directory", style="red", markup=False)
        return 2
    config = NodeConfig(working_dir=workdir, network=args.network)
    if args.name:
        config.node_name = args.name
    if args.root_dir:
        config.root_dir = Path(args.root_dir).expanduser().resolve()
    return run_async(_serve(args.kubeconfig, args.context, config, args.bind_pending, args.network))


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
                    binder = Binder(api)
                    await binder.start()
            except (ApiError, OSError) as exc:
                raise KubetrainError(f"cannot join the cluster at {api.base_url}: {exc}") from None
            out.print(
                f"node {agent.name} joined {api.base_url} (network: {network}"
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
