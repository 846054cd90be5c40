"""What the pages show of a job, its pods and events: pure functions from API objects to JSON.

The page never gets a whole object: only the fields below, so nothing it was not meant to see
(environment values, annotations, managed fields, a pod's volumes) reaches a browser. The same
shapes come from the history store (`history`), so one front end renders a live job and a
recorded one.
"""

from __future__ import annotations

from typing import Any

from kubetrain.api.kinds import KindInfo
from kubetrain.client import jobstate

JsonDict = dict[str, Any]
JobKey = tuple[str, str, str]
"""(namespace, kind, name): a job's identity in the URL (`/jobs/<namespace>/<kind>/<name>`)."""


def key_text(key: JobKey) -> str:
    return "/".join(key)


def job_key(job: JsonDict, kind: str = "") -> JobKey:
    meta = job.get("metadata") or {}
    return (str(meta.get("namespace") or ""), str(job.get("kind") or kind), str(meta.get("name") or ""))


def finished_at(job: JsonDict) -> str | None:
    """completionTime, else the time of the True Succeeded/Failed condition."""
    status = job.get("status") or {}
    if status.get("completionTime"):
        return str(status["completionTime"])
    for cond in jobstate.conditions(job):
        if cond.get("type") in jobstate.FINISHED and cond.get("status") == "True":
            return str(cond.get("lastTransitionTime") or "") or None
    return None


def job_state(job: JsonDict) -> str:
    """Succeeded or Failed once finished (whatever came after), else the last condition's type."""
    return jobstate.reached(job, jobstate.FINISHED) or jobstate.state(job) or "Pending"


def replica_rows(job: JsonDict, info: KindInfo | None) -> dict[str, JsonDict]:
    """`{type: {desired, active, succeeded, failed}}`: the spec's types, with the status counts."""
    counts = jobstate.replica_counts(job)
    desired = jobstate.desired_replicas(job, info) if info is not None else {}
    rows: dict[str, JsonDict] = {}
    for rtype in [*desired, *(t for t in counts if t.lower() not in {d.lower() for d in desired})]:
        got = counts.get(rtype) or next((v for k, v in counts.items() if k.lower() == rtype.lower()), {})
        rows[rtype] = {
            "desired": desired.get(rtype),
            **{k: int(got.get(k) or 0) for k in ("active", "succeeded", "failed")},
        }
    return rows


def job_summary(job: JsonDict, info: KindInfo | None) -> JsonDict:
    """One row of the jobs page."""
    meta = job.get("metadata") or {}
    status = job.get("status") or {}
    replicas = replica_rows(job, info)
    conds = jobstate.conditions(job)
    last = conds[-1] if conds else {}
    return {
        "key": key_text(job_key(job, info.kind if info else "")),
        "kind": str(job.get("kind") or (info.kind if info else "")),
        "namespace": str(meta.get("namespace") or ""),
        "name": str(meta.get("name") or ""),
        "uid": str(meta.get("uid") or ""),
        "state": job_state(job),
        "message": str(last.get("message") or ""),
        "deleting": bool(meta.get("deletionTimestamp")),
        "created": meta.get("creationTimestamp"),
        "started": status.get("startTime"),
        "finished": finished_at(job),
        "replicas": replicas,
        "totals": {
            k: sum(int(r.get(k) or 0) for r in replicas.values())
            for k in ("desired", "active", "succeeded", "failed")
        },
    }


def condition_rows(job: JsonDict) -> list[JsonDict]:
    return [
        {
            "type": str(c.get("type") or ""),
            "status": str(c.get("status") or ""),
            "reason": str(c.get("reason") or ""),
            "message": str(c.get("message") or ""),
            "time": str(c.get("lastTransitionTime") or c.get("lastUpdateTime") or ""),
        }
        for c in jobstate.conditions(job)
    ]


def merged_conditions(current: list[JsonDict], recorded: list[JsonDict]) -> list[JsonDict]:
    """The job's conditions now and every transition the history recorded, once each, by time."""
    seen: dict[tuple[str, str, str], JsonDict] = {}
    for c in [*recorded, *current]:
        seen.setdefault((c["type"], c["status"], c["time"]), c)
    return sorted(seen.values(), key=lambda c: c["time"])


def replica_specs(job: JsonDict, info: KindInfo | None) -> list[JsonDict]:
    """Each replica type's count, restart policy and container images (not commands or env)."""
    specs = (job.get("spec") or {}).get(info.replica_specs_field if info else "") or {}
    rows: list[JsonDict] = []
    if not isinstance(specs, dict):
        return rows
    for rtype, spec in specs.items():
        if not isinstance(spec, dict):
            continue
        pod = (spec.get("template") or {}).get("spec") or {}
        containers = [c for c in pod.get("containers") or () if isinstance(c, dict)]
        rows.append(
            {
                "type": str(rtype),
                "replicas": spec.get("replicas", 1),
                "restartPolicy": spec.get("restartPolicy") or (info.default_restart_policy if info else ""),
                "containers": [
                    {"name": str(c.get("name") or ""), "image": str(c.get("image") or "")} for c in containers
                ],
            }
        )
    return rows


def job_detail(job: JsonDict, info: KindInfo | None) -> JsonDict:
    """The job page's header, timeline and spec."""
    return {
        **job_summary(job, info),
        "apiVersion": str(job.get("apiVersion") or (info.api_version if info else "")),
        "conditions": condition_rows(job),
        "specs": replica_specs(job, info),
    }


def _container_row(cs: JsonDict, init: bool) -> JsonDict:
    state = cs.get("state") or {}
    current = next(iter(state), "")
    detail = state.get(current) or {}
    last = (cs.get("lastState") or {}).get("terminated") or {}
    return {
        "name": str(cs.get("name") or ""),
        "init": init,
        "state": current,
        "reason": str(detail.get("reason") or ""),
        "exitCode": detail.get("exitCode") if current == "terminated" else None,
        "lastExitCode": last.get("exitCode"),
        "restarts": int(cs.get("restartCount") or 0),
        "ready": bool(cs.get("ready")),
    }


def pod_row(pod: JsonDict, job_name: str) -> JsonDict:
    """A replica pod: where it runs (node, address), its containers' restarts and exit codes."""
    meta = pod.get("metadata") or {}
    status = pod.get("status") or {}
    containers = [
        *(_container_row(cs, True) for cs in status.get("initContainerStatuses") or ()),
        *(_container_row(cs, False) for cs in status.get("containerStatuses") or ()),
    ]
    return {
        "uid": str(meta.get("uid") or ""),
        "name": str(meta.get("name") or ""),
        "replica": jobstate.replica_label(pod, job_name),
        "phase": str(status.get("phase") or "Pending"),
        "reason": str(status.get("reason") or ""),
        "node": str((pod.get("spec") or {}).get("nodeName") or ""),
        "address": str(status.get("podIP") or ""),
        "started": status.get("startTime"),
        "deleting": bool(meta.get("deletionTimestamp")),
        "restarts": sum(c["restarts"] for c in containers),
        "containers": containers,
    }


def pod_rows(pods: list[JsonDict], job_name: str) -> list[JsonDict]:
    return [pod_row(p, job_name) for p in sorted(pods, key=jobstate.replica_sort_key)]


def event_time(event: JsonDict) -> str:
    return str(
        event.get("lastTimestamp")
        or event.get("eventTime")
        or event.get("firstTimestamp")
        or (event.get("metadata") or {}).get("creationTimestamp")
        or ""
    )


def event_row(event: JsonDict) -> JsonDict:
    involved = event.get("involvedObject") or event.get("regarding") or {}
    return {
        "time": event_time(event),
        "type": str(event.get("type") or ""),
        "reason": str(event.get("reason") or ""),
        "object": f"{str(involved.get('kind') or '').lower()}/{involved.get('name') or ''}",
        "message": str(event.get("message") or event.get("note") or ""),
        "count": int(event.get("count") or 1),
    }


def event_rows(events: list[JsonDict]) -> list[JsonDict]:
    return [event_row(e) for e in sorted(events, key=event_time)]
