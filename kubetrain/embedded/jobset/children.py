"""A JobSet's child Jobs sorted into upstream's buckets, and the per-replicated-job status.

As ``getChildJobs`` and ``calculateReplicatedJobStatuses`` (``pkg/controllers/jobset_controller.go``):
Jobs of an earlier restart attempt are ``previous`` (to be deleted); the current attempt's are
active, successful or failed by their terminal condition.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import constants as c

JsonDict = dict[str, Any]


@dataclass
class ChildJobs:
    active: list[JsonDict] = field(default_factory=list)
    successful: list[JsonDict] = field(default_factory=list)
    failed: list[JsonDict] = field(default_factory=list)
    previous: list[JsonDict] = field(default_factory=list)

    def names(self) -> set[str]:
        return {
            str((j.get("metadata") or {}).get("name"))
            for j in (*self.active, *self.successful, *self.failed, *self.previous)
        }


def labels(job: JsonDict) -> dict[str, str]:
    return dict((job.get("metadata") or {}).get("labels") or {})


def job_finished(job: JsonDict) -> str:
    """``Complete`` or ``Failed`` when that condition is True, else "" (``JobFinished``)."""
    for cond in (job.get("status") or {}).get("conditions") or []:
        if cond.get("type") in ("Complete", "Failed") and cond.get("status") == "True":
            return str(cond["type"])
    return ""


def classify(js: JsonDict, jobs: list[JsonDict]) -> ChildJobs:
    """Bucket `jobs` (those the JobSet controls). A Job whose restart label is not a number is
    ``previous``, so it is replaced (upstream returns an error and retries forever)."""
    restarts = int((js.get("status") or {}).get("restarts") or 0)
    out = ChildJobs()
    for job in sorted(jobs, key=lambda j: str((j.get("metadata") or {}).get("name"))):
        try:
            attempt = int(labels(job).get(c.RESTARTS_KEY, ""))
        except ValueError:
            out.previous.append(job)
            continue
        if attempt < restarts:
            out.previous.append(job)
            continue
        finished = job_finished(job)
        if finished == "Failed":
            out.failed.append(job)
        elif finished == "Complete":
            out.successful.append(job)
        else:
            out.active.append(job)
    return out


def job_suspended(job: JsonDict) -> bool:
    return bool((job.get("spec") or {}).get("suspend"))


def replicated_job_statuses(js: JsonDict, jobs: ChildJobs) -> list[JsonDict]:
    """One ``{name, ready, succeeded, failed, active, suspended}`` per replicated job.

    Ordered by name, descending: upstream builds them from a map and sorts them that way when it
    compares old and new, and the sorted slice is the one it writes.
    """
    counts = {
        str(r.get("name")): {"ready": 0, "succeeded": 0, "failed": 0, "active": 0, "suspended": 0}
        for r in (js.get("spec") or {}).get("replicatedJobs") or []
    }
    for job in jobs.active:
        bucket = counts.get(labels(job).get(c.REPLICATED_JOB_NAME_KEY, ""))
        if bucket is None:
            continue
        spec, status = job.get("spec") or {}, job.get("status") or {}
        parallelism = spec.get("parallelism")
        pods = 1 if parallelism is None else int(parallelism)
        if spec.get("completions") is not None and int(spec["completions"]) < pods:
            pods = int(spec["completions"])
        if int(status.get("succeeded") or 0) + int(status.get("ready") or 0) >= pods:
            bucket["ready"] += 1
        if int(status.get("active") or 0) > 0:
            bucket["active"] += 1
        if job_suspended(job):
            bucket["suspended"] += 1
    for kind, group in (("succeeded", jobs.successful), ("failed", jobs.failed)):
        for job in group:
            bucket = counts.get(labels(job).get(c.REPLICATED_JOB_NAME_KEY, ""))
            if bucket is not None:
                bucket[kind] += 1
    return [{"name": name, **counts[name]} for name in sorted(counts, reverse=True)]


def find_status(statuses: list[JsonDict], name: str) -> JsonDict | None:
    return next((s for s in statuses if s.get("name") == name), None)
