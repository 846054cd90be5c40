"""`--node-cpu`, `--node-memory`, `--node-overcommit`, `--gpus`: the size the local node declares.

Upstream YAML is written for cluster nodes (upstream's JAXJob test asks 1.2 CPU for each of 2
workers); on a 2-core laptop it would stay Unschedulable. These flags, shared by `kubetrain run`,
`up` and `node`, let the node declare more than the machine has (processes then share the real
CPUs) or a GPU inventory (`gpus`), and `never_fits_hint` names them in the message of a pod
that asks more than the node has in all.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from fractions import Fraction

from kubetrain.embedded.node import NodeConfig
from kubetrain.embedded.node.gpus import GPU_RESOURCE, parse_gpus
from kubetrain.kube.quantity import quantity_value


@dataclass(frozen=True)
class NodeSize:
    """What the flags set; None leaves the machine's own value (or discovered GPUs)."""

    cpu: Fraction | None = None
    memory_bytes: int | None = None
    overcommit: Fraction = Fraction(1)
    gpus: tuple[str, ...] | None = None

    def apply(self, config: NodeConfig) -> NodeConfig:
        if self.cpu is not None:
            config.cpu = self.cpu
        if self.memory_bytes is not None:
            config.memory_bytes = self.memory_bytes
        config.overcommit = self.overcommit
        if self.gpus is not None:
            config.gpus = self.gpus
        return config


def _positive(flag: str, text: str) -> Fraction:
    try:
        value = quantity_value(text)
    except ValueError:
        value = Fraction(0)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{flag} {text!r}: use a positive quantity")
    return value


def _cpu(text: str) -> Fraction:
    return _positive("--node-cpu", text)  # 4, 2.5, 3500m


def _memory(text: str) -> int:
    return int(_positive("--node-memory", text))  # 64Gi, 16G


def _overcommit(text: str) -> Fraction:
    try:
        value = Fraction(text)
    except (ValueError, ZeroDivisionError):
        value = Fraction(0)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"--node-overcommit {text!r}: use a factor above 0, e.g. 2")
    return value


def _gpus(text: str) -> tuple[str, ...]:
    try:
        return parse_gpus(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_node_size_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("node size (what the local node declares to the scheduler)")
    group.add_argument(
        "--node-cpu", metavar="CPUS", type=_cpu, default=None, help="CPUs (default: the machine's)"
    )
    group.add_argument(
        "--node-memory",
        metavar="SIZE",
        type=_memory,
        default=None,
        help="memory, e.g. 64Gi (default: the machine's)",
    )
    group.add_argument(
        "--node-overcommit",
        metavar="FACTOR",
        type=_overcommit,
        default=Fraction(1),
        help="multiply the declared CPUs and memory, e.g. 4 (default 1)",
    )
    group.add_argument(
        "--gpus",
        metavar="N|IDS",
        type=_gpus,
        default=None,
        help="nvidia.com/gpu inventory: N (fake devices 0..N-1), ids (0,1 or GPU-uuids), or none "
        "(default: $KUBETRAIN_GPUS, else the machine's NVIDIA GPUs)",
    )


def node_size(args: argparse.Namespace) -> NodeSize:
    return NodeSize(args.node_cpu, args.node_memory, args.node_overcommit, args.gpus)


_FLAGS = {
    "cpu": "--node-cpu or --node-overcommit",
    "memory": "--node-memory or --node-overcommit",
    GPU_RESOURCE: "--gpus",
}


def never_fits_hint(resources: list[str]) -> str:
    """For the binder: the pod asks more `resources` than the node has; which flag declares more."""
    flags = [f"{_FLAGS[r]} for {r}" for r in resources if r in _FLAGS]
    where = f" (declare a bigger node with {'; '.join(flags)})" if flags else ""
    return f"The pod asks more {', '.join(resources)} than the node has in all{where}."
