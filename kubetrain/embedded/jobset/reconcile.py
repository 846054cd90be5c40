"""One JobSet pass as a pure function: the JobSet and its Jobs in, the writes to make out.

It follows upstream's ``reconcile()`` (``pkg/controllers/jobset_controller.go``) step by step,
in the same order, because the order is the policy: a finished JobSet only cleans up (and
expires); Jobs of an earlier restart attempt are deleted first; a failed Job runs the failure
policy and nothing else happens in that pass; then the success policy; then the headless
Service, the Jobs still missing (startup order and ``dependsOn`` permitting), and suspend or
resume. Status changes and their events are collected and written once at the end by the
caller, events only after that write succeeds, as upstream does.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from kubetrain.kube.timefmt import format_time

from . import constants as c
from . import failure_policy, success_policy, ttl
from .children import ChildJobs, classify, find_status, job_suspended, labels, replicated_job_statuses
from .conditions import (
    Event,
    finished,
    set_completed,
    set_resumed,
    set_startup_completed,
    set_startup_in_progress,
    set_suspended,
)
from .construct import construct_job, headless_service, suspended
from .defaults import defaulted
from .naming import dns_hostnames_enabled, job_name
from .startup_policy import all_replicas_started, dependency_reached_status, in_order

JsonDict = dict[str, Any]

MERGED_TEMPLATE_MAPS = ("nodeSelector",)
MERGED_TEMPLATE_LISTS = ("tolerations", "schedulingGates")


@dataclass
class Plan:
    """What to write for one JobSet; `status` is written only when `status_changed`."""

    status: JsonDict
    status_changed: bool = False
    events: list[Event] = field(default_factory=list)
    create_service: JsonDict | None = None
    create_jobs: list[JsonDict] = field(default_factory=list)
    delete_jobs: list[JsonDict] = field(default_factory=list)
    suspend_jobs: list[JsonDict] = field(default_factory=list)
    resume_jobs: list[tuple[JsonDict, JsonDict]] = field(default_factory=list)
    delete_jobset: bool = False
    requeue_after: float | None = None

    @property
    def empty(self) -> bool:
        return not (
            self.status_changed
            or self.create_service
            or self.create_jobs
            or self.delete_jobs
            or self.suspend_jobs
            or self.resume_jobs
            or self.delete_jobset
        )


def managed_by_external_controller(js: JsonDict) -> str | None:
    manager = (js.get("spec") or {}).get("managedBy")
    return str(manager) if manager and manager != c.JOBSET_CONTROLLER_NAME else None


def plan(jobset: JsonDict, jobs: list[JsonDict], *, service_exists: bool, now: float) -> Plan | None:
    """The writes for `jobset` given the Jobs it controls; None when it is not ours to reconcile."""
    meta = jobset.get("metadata") or {}
    if meta.get("deletionTimestamp") or managed_by_external_controller(jobset):
        return None
    js = defaulted(jobset)
    old_status = jobset.get("status") or {}
    status: JsonDict = copy.deepcopy(old_status)
    status.setdefault("restarts", 0)
    out = Plan(status=status)
    stamp = format_time(now)
    owned = classify(js, jobs)
    statuses = replicated_job_statuses(js, owned)
    status["replicatedJobsStatus"] = statuses
    try:
        _reconcile(js, owned, statuses, out, service_exists, now, stamp)
    finally:
        out.status_changed = status != old_status
    return out


def _reconcile(
    js: JsonDict,
    owned: ChildJobs,
    statuses: list[JsonDict],
    out: Plan,
    service_exists: bool,
    now: float,
    stamp: str,
) -> None:
    status = out.status
    if finished(status):
        out.delete_jobs = _live(owned.active)
        left = ttl.seconds_left(js, status, now)
        if left is not None and left <= 0:
            out.delete_jobset = True
        elif left is not None:
            out.requeue_after = left
        return
    out.delete_jobs = _live(owned.previous)
    if owned.failed:
        failure_policy.execute(js, status, owned.failed, out.events, stamp)
        return
    if owned.successful and success_policy.succeeded(js, owned.successful):
        set_completed(status, out.events, stamp)
        return
    if dns_hostnames_enabled(js) and not service_exists:
        out.create_service = headless_service(js)
    _replicated_jobs(js, owned, statuses, out, stamp)
    if suspended(js):
        out.suspend_jobs = [j for j in owned.active if not job_suspended(j)]
        set_suspended(status, out.events, stamp)
    else:
        _resume_if_necessary(js, owned, statuses, out, stamp)


def _live(jobs: list[JsonDict]) -> list[JsonDict]:
    return [j for j in jobs if not (j.get("metadata") or {}).get("deletionTimestamp")]


def _replicated_jobs(js: JsonDict, owned: ChildJobs, statuses: list[JsonDict], out: Plan, stamp: str) -> None:
    """``reconcileReplicatedJobs``: create the missing Jobs, one replicated job at a time InOrder."""
    policy = (js.get("spec") or {}).get("failurePolicy") or {}
    blocking = policy.get("restartStrategy") == c.BLOCKING_RECREATE and bool(owned.previous)
    existing = owned.names()
    name = str((js.get("metadata") or {}).get("name"))
    ordered = in_order(js) and not suspended(js)
    replicas: dict[str, int] = {}
    for rjob in (js.get("spec") or {}).get("replicatedJobs") or []:
        rname, count = str(rjob.get("name")), int(rjob.get("replicas") or 0)
        replicas[rname] = count
        if not dependency_reached_status(rjob, replicas, statuses):
            continue
        if ordered and all_replicas_started(count, find_status(statuses, rname)):
            continue
        if not blocking:
            out.create_jobs += [
                construct_job(js, rjob, i) for i in range(count) if job_name(name, rname, i) not in existing
            ]
        if ordered:
            set_startup_in_progress(out.status, out.events, stamp)
            return
    if ordered:
        set_startup_completed(out.status, out.events, stamp)


def _resume_if_necessary(
    js: JsonDict, owned: ChildJobs, statuses: list[JsonDict], out: Plan, stamp: str
) -> None:
    """``resumeJobsIfNecessary``: unsuspend the active Jobs (InOrder: one replicated job a pass)."""
    by_rjob: dict[str, list[JsonDict]] = {}
    for job in owned.active:
        by_rjob.setdefault(labels(job).get(c.REPLICATED_JOB_NAME_KEY, ""), []).append(job)
    replicas: dict[str, int] = {}
    for rjob in (js.get("spec") or {}).get("replicatedJobs") or []:
        rname, count = str(rjob.get("name")), int(rjob.get("replicas") or 0)
        replicas[rname] = count
        if not dependency_reached_status(rjob, replicas, statuses):
            continue
        if in_order(js) and all_replicas_started(count, find_status(statuses, rname)):
            continue
        for job in by_rjob.get(rname, []):
            if job_suspended(job):
                out.resume_jobs.append((job, resume_patch(job, rjob)))
        if in_order(js):
            set_startup_in_progress(out.status, out.events, stamp)
            return
    set_resumed(out.status, out.events, stamp)


def resume_patch(job: JsonDict, rjob: JsonDict) -> JsonDict:
    """The Job spec merge-patch that resumes it, carrying over the replicated job's pod template
    labels, annotations, nodeSelector, tolerations and scheduling gates (Kueue may change them
    while the JobSet is suspended; upstream merges rather than overwrites)."""
    source = (rjob.get("template") or {}).get("spec", {}).get("template") or {}
    current = (job.get("spec") or {}).get("template") or {}
    smeta, cmeta = source.get("metadata") or {}, current.get("metadata") or {}
    sspec, cspec = source.get("spec") or {}, current.get("spec") or {}
    template_meta = {
        key: {**(cmeta.get(key) or {}), **(smeta.get(key) or {})} for key in ("labels", "annotations")
    }
    template_spec: JsonDict = {}
    for key in MERGED_TEMPLATE_MAPS:
        merged = {**(cspec.get(key) or {}), **(sspec.get(key) or {})}
        if merged:
            template_spec[key] = merged
    for key in MERGED_TEMPLATE_LISTS:
        merged_list = list(cspec.get(key) or [])
        merged_list += [x for x in sspec.get(key) or [] if x not in merged_list]
        if merged_list:
            template_spec[key] = merged_list
    template: JsonDict = {"metadata": template_meta}
    if template_spec:
        template["spec"] = template_spec
    return {"spec": {"suspend": False, "template": template}}
