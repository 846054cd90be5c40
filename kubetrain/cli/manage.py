"""`kubetrain delete` and `kubetrain wait`: change or await a job's lifecycle."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from kubetrain.cli.commands import HELP
from kubetrain.cli.common import (
    SubParsers,
    add_job_arguments,
    err,
    out,
    positive_float,
    target_parser,
    with_client,
)
from kubetrain.cli.submit import add_file_option
from kubetrain.client import jobstate
from kubetrain.client.errors import EXIT_FAILED, InvalidInput, KubetrainError
from kubetrain.client.kinds import resolve_kind
from kubetrain.client.source import job_files, read_documents

if TYPE_CHECKING:  # aiohttp and kubernetes_asyncio load only when a command connects
    from kubetrain.client.aio import AsyncClient

CASCADE = ("background", "foreground")


def register(sub: SubParsers) -> None:
    parent = target_parser()
    delete = sub.add_parser(
        "delete",
        parents=[parent],
        help=HELP["delete"],
        description="Delete a job (KIND NAME), or the jobs of files (-f). Foreground cascade (default): "
        "the job stays, terminating, until the garbage collector removed its pods; --wait blocks "
        "until then.",
    )
    add_job_arguments(delete, optional=True)
    add_file_option(delete, "the jobs to delete (their kind, name and namespace)", required=False)
    delete.add_argument(
        "--cascade",
        choices=CASCADE,
        default="foreground",
        help="foreground (default: pods go first) or background (kubectl's default)",
    )
    delete.add_argument("--wait", action="store_true", help="block until the job (and so its pods) is gone")
    delete.add_argument(
        "--timeout", type=positive_float, default=None, help="with --wait: give up after S seconds"
    )
    delete.set_defaults(handler=with_client(_delete))

    wait = sub.add_parser(
        "wait",
        parents=[parent],
        help=HELP["wait"],
        description="Exit 0 when the job reaches a wanted condition; with the default "
        "(Succeeded or Failed), exit 1 if it Failed.",
    )
    add_job_arguments(wait)
    wait.add_argument(
        "--for",
        dest="for_",
        action="append",
        metavar="CONDITION",
        help="condition type to wait for (repeatable; default: Succeeded and Failed), "
        "e.g. Running, Succeeded, condition=Succeeded",
    )
    wait.add_argument("--timeout", type=positive_float, default=None, help="give up after S seconds (exit 1)")
    wait.set_defaults(handler=with_client(_wait))


async def _delete(client: AsyncClient, args: argparse.Namespace) -> int:
    if bool(args.files) == bool(args.kind):
        raise InvalidInput(
            "give KIND NAME or -f FILE: kubetrain delete pytorchjob NAME, kubetrain delete -f job.yaml"
        )
    if args.kind and not args.name:
        raise InvalidInput(f"which {args.kind}? kubetrain delete {args.kind} NAME")
    targets = [(args.kind, args.name, None)] if args.kind else _named_in(args.files)
    code = 0
    for kind, name, namespace in targets:
        info = resolve_kind(kind)
        scoped = client.in_namespace(namespace) if namespace else client
        try:
            await scoped.delete(kind, name, args.cascade.capitalize())  # the propagationPolicy
            if args.wait:
                await scoped.wait_deleted(kind, name, args.timeout)
        except KubetrainError as exc:
            if not args.files:
                raise
            err.print(f"error: {exc}", style="red", markup=False)
            code = EXIT_FAILED
            continue
        out.print(f'{info.singular}.{info.group} "{name}" deleted', markup=False)
    return code


def _named_in(values: list[str]) -> list[tuple[str, str, str | None]]:
    """(kind, name, namespace) of every document: deleting needs no valid spec, only identity."""
    targets = []
    for path in job_files(values):
        docs, label = read_documents(path)
        for doc in docs:
            meta = (doc.get("metadata") if isinstance(doc, dict) else None) or {}
            if not isinstance(doc, dict) or not doc.get("kind") or not meta.get("name"):
                raise InvalidInput(f"{label}: every document needs a kind and a metadata.name to delete")
            resolve_kind(str(doc["kind"]))  # an unknown kind fails before anything is deleted
            targets.append((str(doc["kind"]), str(meta["name"]), meta.get("namespace")))
    return targets


def _condition_names(values: list[str] | None) -> tuple[str, ...]:
    """`--for Succeeded`, `--for condition=Succeeded` (kubectl's spelling), any case."""
    if not values:
        return jobstate.FINISHED
    known = {c.lower(): c for c in ("Created", "Running", "Restarting", "Succeeded", "Failed", "Suspended")}
    names = []
    for value in values:
        text = value.split("=", 1)[1] if value.lower().startswith("condition=") else value
        names.append(known.get(text.lower(), text))
    return tuple(names)


async def _wait(client: AsyncClient, args: argparse.Namespace) -> int:
    wanted = _condition_names(args.for_)
    info = resolve_kind(args.kind)
    job = await client.wait(args.kind, args.name, wanted, args.timeout)
    hit = jobstate.reached(job, wanted) or ""
    out.print(f"{info.singular}.{info.group}/{args.name} condition met: {hit}", markup=False)
    if hit == "Failed" and not args.for_:
        err.print(f"job failed: {jobstate.failure_message(job)}", markup=False)
        return 1
    return 0
