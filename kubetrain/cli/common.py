"""What every command shares: the cluster-target options, the consoles, running a coroutine.

Commands that talk to a cluster take `--kubeconfig`, `--context` and `-n/--namespace` like
kubectl, so they work the same against `kubetrain up` and any real cluster.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

from rich.console import Console

if TYPE_CHECKING:  # aiohttp and kubernetes_asyncio: only for commands that talk to a cluster
    from kubetrain.client.aio import AsyncClient

T = TypeVar("T")
Handler = Callable[[argparse.Namespace], int]
SubParsers: TypeAlias = "argparse._SubParsersAction[Any]"
"""What `register(sub)` of each command module receives."""


class _Stdout(Console):
    """stdout whose closed pipe is the command's to handle (rich's default: SystemExit(1) mid-print).

    `kubetrain run` then stops its job and plane as on Ctrl-C; other commands exit 141 at the top.
    """

    def on_broken_pipe(self) -> None:
        self.quiet = True  # drop whatever else is printed
        raise BrokenPipeError


out = _Stdout(highlight=False, soft_wrap=True)
"""Results (tables, YAML, logs) go to stdout, so they can be piped."""
err = Console(stderr=True, highlight=False, soft_wrap=True)
"""Errors, progress and status go to stderr."""


KIND_HELP = "tfjob, pytorchjob, mpijob, ... (any case, plural or singular)"
"""The help of every command's KIND argument."""


def add_job_arguments(parser: argparse.ArgumentParser, optional: bool = False) -> None:
    """The KIND NAME pair of a command about one job (`optional`: when -f may name them instead)."""
    nargs = "?" if optional else None
    parser.add_argument("kind", metavar="KIND", nargs=nargs, help=KIND_HELP)
    parser.add_argument("name", metavar="NAME", nargs=nargs, help="the job's name")


def target_parser() -> argparse.ArgumentParser:
    """A parent parser with kubectl's connection flags."""
    parent = argparse.ArgumentParser(add_help=False)
    group = parent.add_argument_group("cluster")
    group.add_argument(
        "--kubeconfig", metavar="PATH", help="kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)"
    )
    group.add_argument("--context", help="kubeconfig context (default: the current context)")
    group.add_argument("-n", "--namespace", help="namespace (default: the context's, else 'default')")
    return parent


async def connect(args: argparse.Namespace) -> AsyncClient:
    from kubetrain.client.aio import AsyncClient

    return await AsyncClient.connect(args.kubeconfig, args.context, args.namespace)


def with_client(body: Callable[[AsyncClient, argparse.Namespace], Awaitable[int]]) -> Handler:
    """Turn `async body(client, args) -> exit code` into a command handler owning the client."""

    def handler(args: argparse.Namespace) -> int:
        async def run() -> int:
            client = await connect(args)
            try:
                return await body(client, args)
            finally:
                await client.close()

        return run_async(run())

    return handler


def run_async(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def positive_float(text: str) -> float:
    """argparse type for durations: `--timeout 90` or `--timeout 90s`/`5m`/`1h`."""
    units = {"s": 1.0, "m": 60.0, "h": 3600.0}
    scale = units.get(text[-1:].lower(), 1.0)
    number = text[:-1] if text[-1:].lower() in units else text
    try:
        value = float(number) * scale
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid duration {text!r}: use e.g. 90, 90s, 5m") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"invalid duration {text!r}: must be greater than 0")
    return value


def _whole_number(text: str, minimum: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number {text!r}: expected a whole number") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"invalid number {text!r}: must be {minimum} or more")
    return value


def positive_int(text: str) -> int:
    """argparse type for counts that must be at least 1."""
    return _whole_number(text, 1)


def non_negative_int(text: str) -> int:
    """argparse type for counts that may be 0."""
    return _whole_number(text, 0)
