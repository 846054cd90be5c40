"""`kubetrain get` and `kubetrain describe`: read-only views of jobs."""

from __future__ import annotations

import argparse
import asyncio
from typing import TYPE_CHECKING, Any

from kubetrain.cli import output
from kubetrain.cli.commands import HELP
from kubetrain.cli.common import (
    KIND_HELP,
    SubParsers,
    add_job_arguments,
    err,
    out,
    target_parser,
    with_client,
)
from kubetrain.cli.signals import Interrupts
from kubetrain.client.errors import InvalidInput
from kubetrain.kube.tasks import cancel_and_wait

if TYPE_CHECKING:  # aiohttp and kubernetes_asyncio load only when a command connects
    from kubetrain.client.aio import AsyncClient

JsonDict = dict[str, Any]


def register(sub: SubParsers) -> None:
    parent = target_parser()
    get = sub.add_parser(
        "get",
        parents=[parent],
        help=HELP["get"],
        description="List jobs of every kind (no KIND), of one kind, or show one job.",
    )
    get.add_argument("kind", nargs="?", metavar="KIND", help=KIND_HELP)
    get.add_argument("name", nargs="?", metavar="NAME", help="a job name")
    get.add_argument("-o", "--output", choices=output.FORMATS[1:], help="output format (default: a table)")
    get.add_argument(
        "-A", "--all-namespaces", action="store_true", help="jobs of every namespace (a NAMESPACE column)"
    )
    get.add_argument(
        "-l",
        "--selector",
        metavar="SELECTOR",
        help="only jobs whose labels match, e.g. team=vision,tier!=dev",
    )
    get.add_argument(
        "-w",
        "--watch",
        action="store_true",
        help="after the list, print a line for every change until Ctrl-C (table output only)",
    )
    get.set_defaults(handler=with_client(_get))

    describe = sub.add_parser(
        "describe",
        parents=[parent],
        help=HELP["describe"],
        description="Show one job as kubectl describe does: its spec summary, conditions, replica "
        "statuses, pods (phase, node, restarts, exit codes) and events, oldest first.",
    )
    add_job_arguments(describe)
    describe.set_defaults(handler=with_client(_describe))


async def _get(client: AsyncClient, args: argparse.Namespace) -> int:
    if args.name and (args.all_namespaces or args.selector):
        raise InvalidInput("a NAME is one job of one namespace: drop -A/-l, or the NAME")
    if args.watch:
        if args.output not in (None, "wide"):
            raise InvalidInput("-w prints table lines: use it without -o, or with -o wide")
        return await _watch(client, args)
    if args.name:
        jobs = [await client.get(args.kind, args.name)]
    else:
        jobs = await client.list(args.kind, all_namespaces=args.all_namespaces, selector=args.selector)
    fmt = args.output or "table"
    if fmt in ("yaml", "json"):
        out.print(output.as_document(jobs, bool(args.name), fmt), markup=False)
    elif fmt == "name":
        if jobs:
            out.print(output.names(jobs), markup=False)
    elif not jobs:
        _say_none_found(client, args)
    else:
        headers, rows = _rows(jobs, args)
        out.print(output.format_table(headers, rows), markup=False)
    return 0


def _rows(jobs: list[JsonDict], args: argparse.Namespace) -> tuple[list[str], list[list[str]]]:
    return output.job_rows(
        jobs,
        show_kind=not args.kind,
        wide=args.output == "wide",
        show_namespace=args.all_namespaces,
    )


def _say_none_found(client: AsyncClient, args: argparse.Namespace) -> None:
    what = f"{args.kind} jobs" if args.kind else "jobs"
    where = "" if args.all_namespaces else f" in {client.namespace} namespace"
    err.print(f"No {what} found{where}.", markup=False)


async def _watch(client: AsyncClient, args: argparse.Namespace) -> int:
    """Until SIGINT/SIGTERM (exit 130/143): also when started with SIGINT ignored, as a shell
    starts a background job, where Python would never raise KeyboardInterrupt."""
    async with Interrupts() as interrupts:
        watching = asyncio.ensure_future(_print_changes(client, args))
        stop = asyncio.ensure_future(interrupts.first.wait())
        try:
            await asyncio.wait({watching, stop}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            await cancel_and_wait([watching, stop])
        return interrupts.exit_code if stop.done() and not stop.cancelled() else watching.result()


async def _print_changes(client: AsyncClient, args: argparse.Namespace) -> int:
    """kubectl's `get -w`: the table, then one line per change, aligned with the table's columns."""
    from kubetrain.client.aio import LISTED, SYNCED  # loaded already: the client is connected

    listed: list[JsonDict] = []
    widths: list[int] = []
    async for event, job in client.watch_jobs(
        args.kind, all_namespaces=args.all_namespaces, selector=args.selector
    ):
        if args.name and event != SYNCED and job["metadata"].get("name") != args.name:
            continue
        if event == LISTED:
            listed.append(job)
        elif event == SYNCED:
            if not listed:
                _say_none_found(client, args)
            headers, rows = _rows(listed, args)
            widths = output.column_widths(headers, rows)
            out.print(output.format_table(headers, rows, widths), markup=False)
        else:
            _, rows = _rows([job], args)
            out.print(output.format_table([], rows, widths), markup=False)
    return 0


async def _describe(client: AsyncClient, args: argparse.Namespace) -> int:
    out.print(await client.describe(args.kind, args.name), markup=False, end="")
    return 0
