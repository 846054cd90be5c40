"""`kubetrain logs KIND NAME` (every replica, prefixed) and `kubetrain logs POD`."""

from __future__ import annotations

import argparse
import asyncio
from typing import TYPE_CHECKING

from kubetrain.cli.commands import HELP
from kubetrain.cli.common import (
    KIND_HELP,
    Handler,
    SubParsers,
    err,
    non_negative_int,
    out,
    target_parser,
    with_client,
)
from kubetrain.cli.history import add_history_file_options, find_job, open_history
from kubetrain.cli.prefixer import Prefixer, container_label
from kubetrain.client import jobstate
from kubetrain.client.errors import ApiFailure, InvalidInput, NotFound
from kubetrain.client.joblogs import JobLogFollower, Stream
from kubetrain.client.kinds import resolve_kind
from kubetrain.history.store import LogRecord

if TYPE_CHECKING:  # aiohttp and kubernetes_asyncio load only when a command connects
    from kubetrain.client.aio import AsyncClient

JsonDict = dict


def register(sub: SubParsers) -> None:
    logs = sub.add_parser(
        "logs",
        parents=[target_parser()],
        help=HELP["logs"],
        description="`logs KIND NAME` prints every replica's log prefixed by replica (`worker-1 | ...`), "
        "or one replica's with --replica; `logs POD` prints one pod's log.",
    )
    logs.add_argument("first", metavar="KIND|POD", help=f"a job's kind ({KIND_HELP}), or a pod's name")
    logs.add_argument("name", metavar="NAME", nargs="?", help="the job's name (after KIND)")
    logs.add_argument("--replica", metavar="TYPE-INDEX", help="only this replica, e.g. worker-1 or master-0")
    logs.add_argument("-c", "--container", help="container name (default: the job kind's main container)")
    logs.add_argument(
        "-f",
        "--follow",
        action="store_true",
        help="stream new lines (with a job: until it finishes, across restarts)",
    )
    logs.add_argument("--tail", type=non_negative_int, default=None, help="only the last N lines of each log")
    logs.add_argument("--timestamps", action="store_true", help="prefix each line with its RFC3339 time")
    logs.add_argument(
        "-p", "--previous", action="store_true", help="the previous (restarted) container's log"
    )
    logs.add_argument(
        "--from-history",
        action="store_true",
        help="a past job's logs, every container attempt, from the history (no API server needed)",
    )
    add_history_file_options(logs)
    logs.set_defaults(handler=_from_history_or(with_client(_logs)))


def _from_history_or(live: Handler) -> Handler:
    def handler(args: argparse.Namespace) -> int:
        return _history_logs(args) if args.from_history else live(args)

    return handler


def _history_logs(args: argparse.Namespace) -> int:
    """Every recorded attempt of the job's containers, oldest first, each line naming its replica
    (and its attempt, once a container restarted)."""
    if args.name is None:
        raise InvalidInput("--from-history needs a job: kubetrain logs KIND NAME --from-history")
    store = open_history(args)
    try:
        job = find_job(store, args.name, args.first, args.namespace)
        records = store.logs(job.uid)
    finally:
        store.close()
    default = resolve_kind(args.first).default_container
    picked = []
    for record in records:
        replica = record.pod.removeprefix(f"{args.name}-")
        if args.replica and replica != args.replica.lower():
            continue
        if args.container and record.container != args.container:
            continue
        if not args.container and record.container != default and len({r.container for r in records}) > 1:
            continue  # as the live `logs`: the main container's, unless -c names another
        picked.append((replica, record))
    if not picked:
        raise NotFound(f"the history has no logs of {job.kind} {job.name!r}" + _which(args))
    restarted = {(r.pod, r.container) for _, r in picked if r.attempt > 0}
    labels = [_attempt_label(replica, r, restarted) for replica, r in picked]
    prefixer = None if args.replica and not restarted else Prefixer(labels)
    for label, (_, record) in zip(labels, picked, strict=True):
        lines = record.text.splitlines()
        for line in lines[-args.tail :] if args.tail is not None else lines:
            out.print(prefixer.text(label, line) if prefixer else line, markup=False, highlight=False)
    return 0


def _attempt_label(replica: str, record: LogRecord, restarted: set[tuple[str, str]]) -> str:
    return f"{replica}#{record.attempt}" if (record.pod, record.container) in restarted else replica


def _which(args: argparse.Namespace) -> str:
    flags = (("--replica", args.replica), ("-c", args.container))
    return "".join(f" {flag} {value}" for flag, value in flags if value)


async def _logs(client: AsyncClient, args: argparse.Namespace) -> int:
    if args.name is None:
        return await _pod_logs(client, args, args.first, args.container)
    info = resolve_kind(args.first)
    await client.get(info.kind, args.name)  # a clear "pytorchjob "x" not found" first
    if args.follow and not args.previous:
        return await _follow_job(client, args, info.kind, info.default_container)
    pods = await client.pods(info.kind, args.name)
    if args.replica:
        pods = [p for p in pods if jobstate.replica_label(p, args.name) == args.replica.lower()]
        if not pods:
            raise NotFound(
                f'{info.singular} "{args.name}" has no replica {args.replica} (replicas are named '
                "like master-0, worker-1)"
            )
    if not pods:
        raise NotFound(
            f'{info.singular} "{args.name}" has no pods (yet): see `kubetrain describe '
            f"{info.singular} {args.name}`"
        )
    # One replica asked for: its lines as they are, as with -f; else each line names its replica.
    prefixer = None if args.replica else Prefixer(jobstate.replica_label(p, args.name) for p in pods)
    for pod in pods:
        container = args.container or _main_container(pod, info.default_container)
        label = jobstate.replica_label(pod, args.name)
        try:
            async for line in client.logs(
                pod["metadata"]["name"],
                container,
                tail=args.tail,
                timestamps=args.timestamps,
                previous=args.previous,
            ):
                out.print(prefixer.text(label, line) if prefixer else line, markup=False, highlight=False)
        except ApiFailure as exc:
            if exc.status != 400 or len(pods) == 1:
                raise
            # One replica not started yet must not hide the others' logs.
            err.print(f"{label}: {exc}", style="dim", markup=False)
    return 0


async def _pod_logs(client: AsyncClient, args: argparse.Namespace, pod: str, container: str | None) -> int:
    if args.replica:
        raise InvalidInput("--replica needs a job: kubetrain logs KIND NAME --replica worker-1")
    async for line in client.logs(
        pod, container, follow=args.follow, tail=args.tail, timestamps=args.timestamps, previous=args.previous
    ):
        out.print(line, markup=False, highlight=False)
    return 0


async def _follow_job(
    client: AsyncClient, args: argparse.Namespace, kind: str, default_container: str
) -> int:
    prefixer = Prefixer()

    def emit(stream: Stream, line: str) -> None:
        if args.container and stream.container != args.container:
            return
        if args.replica:  # as without -f: the main container (or -c's), its lines unprefixed
            if not (args.container or stream.sole or stream.container == default_container):
                return
            out.print(line, markup=False, highlight=False)
            return
        label = container_label(stream.replica, stream.container, default_container, stream.init)
        out.print(prefixer.text(label, line), markup=False, highlight=False)

    follower = JobLogFollower(
        client,
        args.name,
        emit,
        replica=args.replica,
        timestamps=args.timestamps,
        include_init=False,
        tail=args.tail,
        kind=kind,
    )
    task = asyncio.create_task(follower.run())
    try:
        await client.wait(kind, args.name)
        await follower.drain(5.0)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    return 0


def _main_container(pod: JsonDict, default_container: str) -> str | None:
    names = [c.get("name") for c in (pod.get("spec") or {}).get("containers") or ()]
    if len(names) <= 1:
        return None
    return default_container if default_container in names else None
