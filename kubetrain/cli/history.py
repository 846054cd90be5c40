"""`kubetrain history` (past jobs), `kubetrain history show NAME`, and the history file to read.

These read the history database directly, with no API server: the jobs they show may be long
gone from any plane (`logs --from-history` in `kubetrain.cli.logs` reads the same file).
"""

from __future__ import annotations

import argparse
import sqlite3
from datetime import datetime
from pathlib import Path

from kubetrain.cli.commands import HELP
from kubetrain.cli.common import SubParsers, out, positive_float, positive_int
from kubetrain.cli.datadir import default_data_dir
from kubetrain.cli.output import format_table
from kubetrain.client.errors import KubetrainError, NotFound
from kubetrain.client.kinds import resolve_kind
from kubetrain.history.store import (
    DEFAULT_MAX_AGE_SECONDS,
    DEFAULT_MAX_JOBS,
    HISTORY_FILE,
    HistoryStore,
    JobSummary,
)
from kubetrain.kube.duration import human_duration

DAY = 24 * 3600.0


def add_history_file_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data-dir",
        metavar="DIR",
        default=None,
        help=f"the plane's data directory (default: {default_data_dir()})",
    )
    parser.add_argument(
        "--history", metavar="FILE", default=None, help="a history file (as `operator --history`)"
    )


def add_history_bounds(parser: argparse.ArgumentParser, off_switch: bool = True) -> argparse._ArgumentGroup:
    """`--history-max-jobs`, `--history-max-age` (and `--no-history`) for a plane that records."""
    group = parser.add_argument_group("job history (`kubetrain history`)")
    group.add_argument(
        "--history-max-jobs",
        type=positive_int,
        default=DEFAULT_MAX_JOBS,
        metavar="N",
        help=f"keep the newest N jobs, the oldest go first (default {DEFAULT_MAX_JOBS})",
    )
    group.add_argument(
        "--history-max-age",
        type=positive_float,
        default=DEFAULT_MAX_AGE_SECONDS / DAY,
        metavar="DAYS",
        help=f"forget jobs first seen longer ago (default {DEFAULT_MAX_AGE_SECONDS / DAY:g} days)",
    )
    if off_switch:
        group.add_argument("--no-history", action="store_true", help="record no job history")
    return group


def history_store(path: Path, args: argparse.Namespace) -> HistoryStore | None:
    """The store the bounds flags describe at `path`, or None with --no-history."""
    if getattr(args, "no_history", False):
        return None
    try:
        return HistoryStore(path, max_jobs=args.history_max_jobs, max_age_seconds=args.history_max_age * DAY)
    except (OSError, sqlite3.Error) as exc:
        raise KubetrainError(f"cannot open the job history {path}: {exc} (or pass --no-history)") from None


def open_history(args: argparse.Namespace) -> HistoryStore:
    """The history the flags name, read-only; NotFound when no plane has written one there yet."""
    if args.history:
        path = Path(args.history).expanduser()
    else:
        path = (Path(args.data_dir).expanduser() if args.data_dir else default_data_dir()) / HISTORY_FILE
    if not path.is_file():
        raise NotFound(f"no job history at {path} (a local plane or `operator --history` writes one)")
    return HistoryStore(path, read_only=True)


def find_job(store: HistoryStore, name: str, kind: str | None, namespace: str | None) -> JobSummary:
    """The newest recorded job of that name (a name reused by later runs shows its latest)."""
    wanted = resolve_kind(kind).kind if kind else None
    found = store.find(name, kind=wanted, namespace=namespace)
    if not found:
        raise NotFound(f"no job {name!r} in the history" + (f" of kind {wanted}" if wanted else ""))
    return found[-1]


def register(sub: SubParsers) -> None:
    history = sub.add_parser(
        "history",
        help=HELP["history"],
        description="Jobs a local plane (or `operator --history`) recorded, kept after they are deleted.",
    )
    add_history_file_options(history)
    history.add_argument("--kind", help="only jobs of this kind")
    history.add_argument("-n", "--namespace", default=None, help="only jobs of this namespace")
    actions = history.add_subparsers(
        dest="history_action", metavar="show NAME", help="show one job (without it: list them all)"
    )
    show = actions.add_parser("show", help="one job's conditions, pods and events")
    show.add_argument("name", metavar="NAME", help="the job's name (its newest run, if reused)")
    add_history_file_options(show)
    show.add_argument("--kind", help="the job's kind, when several kinds used the name")
    show.add_argument("-n", "--namespace", default=None, help="the job's namespace, if several")
    history.set_defaults(handler=_history)


def _history(args: argparse.Namespace) -> int:
    store = open_history(args)
    try:
        if getattr(args, "history_action", None) == "show":
            _show(store, find_job(store, args.name, args.kind, args.namespace))
        else:
            kind = resolve_kind(args.kind).kind if args.kind else None
            rows = [_row(job) for job in store.jobs(kind=kind, namespace=args.namespace)]
            if rows:
                out.print(
                    format_table(["KIND", "NAME", "NAMESPACE", "OUTCOME", "STARTED", "DURATION"], rows),
                    markup=False,
                    highlight=False,
                )
            else:
                out.print("No jobs in the history.", markup=False)
    finally:
        store.close()
    return 0


def _row(job: JobSummary) -> list[str]:
    outcome = job.outcome or "Created"
    if job.deleted and outcome not in ("Succeeded", "Failed"):
        outcome += " (deleted)"
    return [job.kind, job.name, job.namespace, outcome, job.started or "", _duration(job)]


def _duration(job: JobSummary) -> str:
    if not job.started:
        return ""
    end = job.finished or job.deleted
    if not end:
        return ""
    seconds = (_parse(end) - _parse(job.started)).total_seconds()
    return human_duration(max(seconds, 0.0))


def _parse(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def _show(store: HistoryStore, job: JobSummary) -> None:
    spec = store.spec(job.uid)
    lines = [
        f"Name:        {job.name}",
        f"Namespace:   {job.namespace}",
        f"Kind:        {job.kind} ({spec.get('apiVersion', '')})",
        f"UID:         {job.uid}",
        f"Outcome:     {_row(job)[3]}",
        f"Started:     {job.started or ''}",
        f"Finished:    {job.finished or ''}",
        f"Duration:    {_duration(job)}",
    ]
    if job.deleted:
        lines.append(f"Deleted:     {job.deleted}")
    conditions = [[c.time, c.type, c.status, c.reason, c.message] for c in store.conditions(job.uid)]
    pods = [
        [
            pod.name,
            pod.phase,
            str(c.get("name")),
            str(c.get("restarts")),
            _text(c.get("exitCode")),
            _text(c.get("reason")),
        ]
        for pod in store.pods(job.uid)
        for c in pod.containers or [{}]
    ]
    attempts = [[pod, container, str(n), _text(code)] for pod, container, n, code in store.attempts(job.uid)]
    events = [[e.time, e.type, e.reason, e.object, e.message] for e in store.events(job.uid)]
    metrics = [
        [
            s.pod,
            s.container,
            s.name,
            str(len(s.points)),
            f"{s.points[-1][2]:g}",
            f"{min(p[2] for p in s.points):g}",
            f"{max(p[2] for p in s.points):g}",
        ]
        for s in store.metrics(job.uid)
    ]
    for title, headers, rows in (
        ("Conditions", ["TIME", "TYPE", "STATUS", "REASON", "MESSAGE"], conditions),
        ("Pods", ["NAME", "PHASE", "CONTAINER", "RESTARTS", "EXIT CODE", "REASON"], pods),
        (
            "Logged attempts (`kubetrain logs --from-history`)",
            ["POD", "CONTAINER", "ATTEMPT", "EXIT CODE"],
            attempts,
        ),
        ("Metrics (from the logs)", ["POD", "CONTAINER", "METRIC", "POINTS", "LAST", "MIN", "MAX"], metrics),
        ("Events", ["TIME", "TYPE", "REASON", "OBJECT", "MESSAGE"], events),
    ):
        lines.append(f"{title}:")
        table = format_table(headers, rows) if rows else "<none>"
        lines.extend("  " + line for line in table.splitlines())
    out.print("\n".join(lines), markup=False, highlight=False)


def _text(value: object) -> str:
    return "" if value is None else str(value)
