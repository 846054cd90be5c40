"""`kubetrain create -f` and `kubetrain apply -f`: submit job files as kubectl does.

Every document of every file is read and validated first (the webhook's rules, offline): one
invalid job means nothing is submitted and exit 2. Then each job is created (or server-side
applied); one line per job in kubectl's words, and exit 1 if the API refused any of them.
"""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from kubetrain.cli.commands import HELP
from kubetrain.cli.common import SubParsers, err, out, target_parser, with_client
from kubetrain.client.errors import EXIT_FAILED, KubetrainError
from kubetrain.client.kinds import resolve_kind
from kubetrain.client.source import LoadedJob, job_files, load_jobs

if TYPE_CHECKING:  # aiohttp and kubernetes_asyncio load only when a command connects
    from kubetrain.client.aio import AsyncClient


def add_file_option(parser: argparse.ArgumentParser, what: str, required: bool = True) -> None:
    parser.add_argument(
        "-f",
        "--filename",
        dest="files",
        action="append",
        metavar="FILE",
        required=required,
        help=f"{what}: a YAML/JSON file, a directory of them, or - for stdin (repeatable)",
    )


def register(sub: SubParsers) -> None:
    parent = target_parser()
    create = sub.add_parser(
        "create",
        parents=[parent],
        help=HELP["create"],
        description="Create every job in the files (validated first: an invalid job submits nothing). "
        "A job that already exists is an error; `apply` updates it instead.",
    )
    add_file_option(create, "the jobs to create")
    create.set_defaults(handler=with_client(_create))

    apply = sub.add_parser(
        "apply",
        parents=[parent],
        help=HELP["apply"],
        description="Create each job in the files, or update the one that exists, by server-side "
        "apply (field manager `kubetrain`, like `kubectl apply --server-side`).",
    )
    add_file_option(apply, "the jobs to apply")
    apply.add_argument(
        "--force-conflicts",
        action="store_true",
        help="take over fields another field manager owns (as kubectl's flag)",
    )
    apply.set_defaults(handler=with_client(_apply))


def read_all(values: list[str]) -> list[LoadedJob]:
    """Every job of every file, all validated before any is submitted."""
    jobs: list[LoadedJob] = []
    for path in job_files(values):
        jobs += load_jobs(path)
    for job in jobs:
        for warning in job.warnings:
            err.print(f"Warning: {warning}", style="yellow", markup=False)
    return jobs


def _named(job: LoadedJob) -> str:
    info = resolve_kind(job.kind)
    return f"{info.singular}.{info.group}/{job.name}"


async def _submit(args: argparse.Namespace, submit: Callable[[LoadedJob], Awaitable[str]]) -> int:
    """Every job of the files through `submit` (which says what happened), one line each."""
    code = 0
    for job in read_all(args.files):
        try:
            outcome = await submit(job)
        except KubetrainError as exc:
            err.print(f"error: {exc}", style="red", markup=False)
            code = EXIT_FAILED
            continue
        out.print(f"{_named(job)} {outcome}", markup=False)
    return code


async def _create(client: AsyncClient, args: argparse.Namespace) -> int:
    async def create(job: LoadedJob) -> str:
        await client.create(job.raw)
        return "created"

    return await _submit(args, create)


async def _apply(client: AsyncClient, args: argparse.Namespace) -> int:
    async def apply(job: LoadedJob) -> str:
        _, outcome = await client.apply(job.raw, force_conflicts=args.force_conflicts)
        return outcome

    return await _submit(args, apply)
