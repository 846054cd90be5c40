"""`describe`: a kubectl-describe-like text view of a job, its pods and its events."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

import yaml

from kubetrain.api.kinds import KindInfo
from kubetrain.client import jobstate
from kubetrain.kube.duration import human_duration
from kubetrain.kube.timefmt import parse_time, seconds_between

JsonDict = dict[str, Any]
COUNTED = ("active", "succeeded", "failed")


def age(timestamp: str | None, now: datetime | None = None) -> str:
    """kubectl's HumanDuration: `45s`, `3m12s`, `125m`, `5h10m`, `30h`, `3d4h`, `45d`."""
    then = parse_time(timestamp)
    if then is None:
        return "<unknown>"
    return human_duration(max(0.0, seconds_between(then, now or datetime.now(UTC))))


def pod_status(pod: JsonDict) -> str:
    """kubectl's STATUS column: a waiting/terminated reason if any, else the phase."""
    meta, status = pod.get("metadata") or {}, pod.get("status") or {}
    if meta.get("deletionTimestamp"):
        return "Terminating"
    for cs in status.get("containerStatuses") or ():
        st = cs.get("state") or {}
        for key in ("waiting", "terminated"):
            reason = (st.get(key) or {}).get("reason")
            if reason:
                return str(reason)
    return str(status.get("phase") or "Pending")


def restarts(pod: JsonDict) -> int:
    statuses = (pod.get("status") or {}).get("containerStatuses") or ()
    return sum(int(cs.get("restartCount") or 0) for cs in statuses)


def _indent(text: str, spaces: int) -> str:
    pad = " " * spaces
    return "\n".join(pad + line if line else line for line in text.splitlines())


def _section(title: str, rows: Iterable[str]) -> list[str]:
    body = list(rows)
    return [f"{title}:", *(body or ["  <none>"])]


def render_describe(
    info: KindInfo, job: JsonDict, pods: list[JsonDict], events: list[JsonDict], now: datetime | None = None
) -> str:
    meta, status = job.get("metadata") or {}, job.get("status") or {}
    lines = [
        f"Name:          {meta.get('name', '')}",
        f"Namespace:     {meta.get('namespace', '')}",
        f"Kind:          {info.kind} ({info.api_version})",
        f"State:         {jobstate.state(job) or 'Pending'}",
        f"Created:       {meta.get('creationTimestamp', '')} ({age(meta.get('creationTimestamp'), now)} ago)",
    ]
    if meta.get("deletionTimestamp"):
        lines.append(f"Deleting:      since {meta['deletionTimestamp']}")
    for key, label in (("startTime", "Started"), ("completionTime", "Completed")):
        if status.get(key):
            lines.append(f"{label + ':':<15}{status[key]}")
    labels = meta.get("labels") or {}
    lines.append("Labels:        " + (", ".join(f"{k}={v}" for k, v in sorted(labels.items())) or "<none>"))
    lines.append("")
    desired = jobstate.desired_replicas(job, info)
    counts = jobstate.replica_counts(job)
    lines += _section(
        "Replicas",
        (
            f"  {rtype:<12} desired {want}  "
            + "  ".join(f"{what} {counts.get(rtype, {}).get(what, 0)}" for what in COUNTED)
            for rtype, want in desired.items()
        ),
    )
    run_policy = (job.get("spec") or {}).get("runPolicy")
    if run_policy:
        lines += ["Run Policy:", _indent(yaml.safe_dump(run_policy, sort_keys=True).rstrip(), 2)]
    lines.append("")
    lines += _section("Conditions", (_condition_line(c) for c in jobstate.conditions(job)))
    lines.append("")
    lines += _section(
        "Pods",
        (
            f"  {p['metadata'].get('name', ''):<40} {pod_status(p):<18} restarts {restarts(p)}  "
            f"{age(p['metadata'].get('creationTimestamp'), now)}"
            for p in pods
        ),
    )
    lines.append("")
    lines += _section(
        "Events",
        (
            f"  {e.get('type', ''):<8} {e.get('reason', ''):<28} "
            f"{age(e.get('lastTimestamp') or e.get('eventTime') or e.get('firstTimestamp'), now):>6}  "
            f"{e.get('message', '')}" + (f" (x{e['count']})" if int(e.get("count") or 1) > 1 else "")
            for e in events
        ),
    )
    return "\n".join(lines) + "\n"


def _condition_line(c: dict[str, Any]) -> str:
    return f"  {c.get('type', ''):<11} {c.get('status', ''):<6} {c.get('reason', '')}: {c.get('message', '')}"
