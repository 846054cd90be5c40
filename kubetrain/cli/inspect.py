"""`kubetrain get` and `kubetrain describe`: read-only views of jobs."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from kubetrain.cli import output
from kubetrain.cli.commands import HELP
from kubetrain.cli.common import KIND_HELP, SubParsers, err, out, target_parser, with_client

if TYPE_CHECKING:  # aiohttp and kubernetes_asyncio load only when a command connects
    from kubetrain.client.aio import AsyncClient


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
    get.set_defaults(handler=with_client(_get))

    describe = sub.add_parser(
        "describe",
        parents=[parent],
        help=HELP["describe"],
        description="Show one job as kubectl describe does: its spec summary, conditions, replica "
        "statuses, pods (phase, node, restarts, exit codes) and events, oldest first.",
    )
    describe.add_argument("kind", metavar="KIND", help=KIND_HELP)
    describe.add_argument("name", metavar="NAME", help="the job's name")
    describe.set_defaults(handler=with_client(_describe))


async def _get(client: AsyncClient, args: argparse.Namespace) -> int:
    if args.name:
        jobs = [await client.get(args.kind, args.name)]
    else:
        jobs = await client.list(args.kind)
    fmt = args.output or "table"
    if fmt in ("yaml", "json"):
        out.print(output.as_document(jobs, bool(args.name), fmt), markup=False)
    elif fmt == "name":
        if jobs:
            out.print(output.names(jobs), markup=False)
    elif not jobs:
        where = f"{args.kind} " if args.kind else ""
        err.print(f"No {where}jobs found in {client.namespace} namespace.", markup=False)
    else:
        headers, rows = output.job_rows(jobs, show_kind=not args.kind, wide=fmt == "wide")
        out.print(output.format_table(headers, rows), markup=False)
    return 0


async def _describe(client: AsyncClient, args: argparse.Namespace) -> int:
    out.print(await client.describe(args.kind, args.name), markup=False, end="")
    return 0
