"""kubectl-style output: plain column tables, and `-o yaml|json` documents.

Tables are plain text (no box drawing, no colour) so that `kubetrain get | awk` works and
the output looks like what kubectl users already read.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import yaml

from kubetrain.client import jobstate
from kubetrain.client.describe import age
from kubetrain.client.kinds import resolve_kind

JsonDict = dict[str, Any]
FORMATS = ("table", "wide", "yaml", "json", "name")


def column_widths(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[int]:
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            if i == len(widths):
                widths.append(0)
            widths[i] = max(widths[i], len(cell))
    return widths


def format_table(
    headers: Sequence[str], rows: Sequence[Sequence[str]], widths: Sequence[int] | None = None
) -> str:
    """Left-aligned columns separated by three spaces, like kubectl's printer; `widths` keeps
    later lines (`get -w`) aligned with the first table (a longer cell just pushes its line)."""
    widths = column_widths(headers, rows) if widths is None else widths
    lines = []
    for row in [list(headers), *map(list, rows)] if headers else list(map(list, rows)):
        cells = [
            cell.ljust(widths[i] if i < len(widths) else 0) if i < len(row) - 1 else cell
            for i, cell in enumerate(row)
        ]
        lines.append("   ".join(cells).rstrip())
    return "\n".join(lines)


def _replicas(job: JsonDict) -> str:
    info = resolve_kind(str(job.get("kind", "")))
    counts = jobstate.replica_counts(job)
    parts = []
    for rtype, want in jobstate.desired_replicas(job, info).items():
        got = counts.get(rtype, {})
        active, succeeded, failed = (got.get(k, 0) for k in ("active", "succeeded", "failed"))
        parts.append(f"{rtype}:{active}/{succeeded}/{failed} of {want}")
    return ",".join(parts) or "<none>"


def _message(job: JsonDict) -> str:
    conds = jobstate.conditions(job)
    return str(conds[-1].get("message") or "") if conds else ""


def job_rows(
    jobs: Sequence[JsonDict],
    *,
    show_kind: bool,
    wide: bool,
    show_namespace: bool = False,
    now: datetime | None = None,
) -> tuple[list[str], list[list[str]]]:
    """Headers and rows of `kubetrain get`: [NAMESPACE] NAME STATE AGE (+ replicas, message
    with -o wide)."""
    headers = ["NAMESPACE"] * show_namespace + ["NAME", "STATE", "AGE"]
    if wide:
        headers += ["REPLICAS(active/succeeded/failed)", "MESSAGE"]
    rows = []
    for job in jobs:
        meta = job.get("metadata") or {}
        name = str(meta.get("name", ""))
        if show_kind:
            name = f"{_resource(job)}/{name}"
        row = [str(meta.get("namespace", ""))] * show_namespace
        row += [name, jobstate.state(job), age(meta.get("creationTimestamp"), now)]
        if wide:
            row += [_replicas(job), _message(job)]
        rows.append(row)
    return headers, rows


def as_document(objs: Sequence[JsonDict], single: bool, fmt: str) -> str:
    """`-o yaml|json`: the object itself for one named object, else a v1 List (as kubectl does)."""
    body: JsonDict = (
        objs[0]
        if single and objs
        else {"apiVersion": "v1", "kind": "List", "items": list(objs), "metadata": {"resourceVersion": ""}}
    )
    if fmt == "json":
        return json.dumps(body, indent=4)
    return yaml.safe_dump(body, sort_keys=False, default_flow_style=False).rstrip("\n")


def names(objs: Sequence[JsonDict]) -> str:
    """`-o name`: `pytorchjob.kubeflow.org/x` per line."""
    return "\n".join(f"{_resource(o)}/{o['metadata']['name']}" for o in objs)


def _resource(obj: JsonDict) -> str:
    """`pytorchjob.kubeflow.org`, `trainjob.trainer.kubeflow.org`: kind and group, as kubectl names it."""
    group = str(obj.get("apiVersion", "")).rpartition("/")[0] or "kubeflow.org"
    return f"{str(obj.get('kind', '')).lower()}.{group}"
