"""Reading a job's status the way users talk about it: its state, replica counts, failure message.

Pure functions over raw dicts, shared by `wait`, `describe`, `kubetrain get` and the live status
of `kubetrain run`, so they all agree on what "the state" of a job is.
"""

from __future__ import annotations

from typing import Any

from kubetrain.api.kinds import LABEL_JOB_ROLE, LABEL_REPLICA_INDEX, LABEL_REPLICA_TYPE, KindInfo

JsonDict = dict[str, Any]
FINISHED = ("Succeeded", "Failed")
JOBSET_REPLICATED_JOB = "jobset.sigs.k8s.io/replicatedjob-name"
JOBSET_JOB_INDEX = "jobset.sigs.k8s.io/job-index"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"


def conditions(job: JsonDict) -> list[JsonDict]:
    return [c for c in (job.get("status") or {}).get("conditions") or () if isinstance(c, dict)]


def state(job: JsonDict) -> str:
    """The last condition's type (upstream's STATE printer column), "" before the first one."""
    conds = conditions(job)
    return str(conds[-1].get("type", "")) if conds else ""


def true_conditions(job: JsonDict) -> set[str]:
    types = {str(c.get("type")) for c in conditions(job) if c.get("status") == "True"}
    if "Complete" in types:  # a ChainerJob's status is its master batch/v1 Job's: Complete = Succeeded
        types.add("Succeeded")
    return types


def reached(job: JsonDict, wanted: tuple[str, ...]) -> str | None:
    """The first of `wanted` whose condition is True, or None."""
    current = true_conditions(job)
    return next((w for w in wanted if w in current), None)


def condition(job: JsonDict, ctype: str) -> JsonDict | None:
    return next((c for c in conditions(job) if c.get("type") == ctype), None)


def failure_message(job: JsonDict) -> str:
    cond = condition(job, "Failed")
    if cond is None:
        return ""
    reason, message = cond.get("reason") or "", cond.get("message") or ""
    return f"{reason}: {message}" if reason and message else str(message or reason)


def replica_counts(job: JsonDict) -> dict[str, dict[str, int]]:
    """`{replicaType: {active, succeeded, failed}}` from status.replicaStatuses (zeros omitted)."""
    out: dict[str, dict[str, int]] = {}
    for rtype, rs in ((job.get("status") or {}).get("replicaStatuses") or {}).items():
        if isinstance(rs, dict):
            out[str(rtype)] = {k: int(rs.get(k) or 0) for k in ("active", "succeeded", "failed")}
    return out


def desired_replicas(job: JsonDict, info: KindInfo) -> dict[str, int]:
    specs = (job.get("spec") or {}).get(info.replica_specs_field) or {}
    out: dict[str, int] = {}
    for rtype, rspec in specs.items():
        replicas = (rspec or {}).get("replicas") if isinstance(rspec, dict) else None
        out[str(rtype)] = 1 if replicas is None else int(replicas)
    return out


def summary(job: JsonDict, info: KindInfo) -> str:
    """`Running  master 1/1 active  worker 1 succeeded, 1 active` — one line for a status bar."""
    counts = replica_counts(job)
    # A finished job's replicas without counts were cleaned up (cleanPodPolicy), not pending.
    nothing = "none left" if reached(job, FINISHED) else "pending"
    parts = []
    for rtype, want in desired_replicas(job, info).items():
        got = counts.get(rtype) or next((v for k, v in counts.items() if k.lower() == rtype.lower()), {})
        bits = [f"{n} {what}" for what, n in got.items() if n]
        parts.append(f"{rtype.lower()} {'/'.join(bits) or nothing} of {want}")
    return f"{state(job) or 'Pending'}  " + "  ".join(parts)


def replica_label(pod: JsonDict, job_name: str = "") -> str:
    """`worker-1` for a pod of a job: replica type and index labels, else the pod name's suffix."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    rtype, index = labels.get(LABEL_REPLICA_TYPE), labels.get(LABEL_REPLICA_INDEX)
    if rtype is not None and index is not None:
        return f"{str(rtype).lower()}-{index}"
    rjob, job_index, completion = (
        labels.get(k) for k in (JOBSET_REPLICATED_JOB, JOBSET_JOB_INDEX, COMPLETION_INDEX)
    )
    if rjob is not None and job_index is not None and completion is not None:
        return (
            f"{rjob}-{job_index}-{completion}"  # a JobSet's pod (a TrainJob's): its name without the suffix
        )
    if str(rtype or labels.get(LABEL_JOB_ROLE, "")).lower() == "launcher":
        return "launcher"  # an MPIJob's single launcher (v2beta1: a batch Job's pod, random suffix)
    name = str((pod.get("metadata") or {}).get("name", ""))
    prefix = f"{job_name}-"
    return name[len(prefix) :] if job_name and name.startswith(prefix) else name


def replica_sort_key(pod: JsonDict) -> tuple[str, int, str]:
    labels = (pod.get("metadata") or {}).get("labels") or {}
    try:
        index = int(labels.get(LABEL_REPLICA_INDEX, 0))
    except (TypeError, ValueError):
        index = 0
    return (str(labels.get(LABEL_REPLICA_TYPE, "")), index, str(pod["metadata"].get("name", "")))
