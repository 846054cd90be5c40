"""ttlSecondsAfterFinished: delete the job itself once it has been finished long enough.

Upstream's: docs/upstream-behaviour.md#ttl.

Deleting the job cascades to its children through garbage collection. Until then the plan asks
to be requeued at the expiry, so the deletion happens on time without any other event.
"""

from __future__ import annotations

from datetime import timedelta

from kubetrain.controller import events
from kubetrain.controller.context import JobReconcile
from kubetrain.controller.plan import DeleteObject
from kubetrain.kube.timefmt import parse_time, seconds_between

METRIC_DELETED = "training_operator_jobs_deleted_total"


def apply_ttl(ctx: JobReconcile) -> None:
    """For a finished job: delete it when its TTL expired, else requeue at the expiry."""
    ttl = ctx.job.run_policy.ttl_seconds_after_finished
    if ttl is None:
        return
    completed = parse_time(ctx.status.completion_time)
    if completed is None:
        # Upstream errors out ("job completion time is nil"); a finished job gets one instead.
        ctx.status.completion_time = ctx.stamp
        completed = parse_time(ctx.stamp)
        assert completed is not None
    expiry = completed + timedelta(seconds=ttl)
    if ctx.now >= expiry:
        ctx.plan.actions.append(DeleteObject(ctx.ref()))
        ctx.event("Normal", events.SUCCESSFUL_DELETE_JOB, events.deleted_job(ctx.name))
        ctx.metric(METRIC_DELETED)
    else:
        ctx.requeue(seconds_between(ctx.now, expiry))
