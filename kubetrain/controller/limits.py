"""backoffLimit and activeDeadlineSeconds (docs/upstream-behaviour.md#limits), with two upstream bugs fixed.

* The deadline fires on time: while a started job runs we ask to be requeued at
  `startTime + activeDeadlineSeconds` (upstream only notices it when something else happens).
* backoffLimit bounds every restart (kubeflow/trainer#2045): the in-place restarts of all the
  job's pods (any phase) plus the recreations the operator did, kept durable by the
  `RestartLedger`. A failure about to be recreated counts already, so a job whose replicas have
  failed `backoffLimit` times fails instead of being recreated once more. The comparison stays
  upstream's (`restarts >= backoffLimit`; backoffLimit 0 fails on the first restart or on any
  new pod failure).
"""

from __future__ import annotations

from kubetrain.controller.context import JobReconcile
from kubetrain.controller.ledger import RestartLedger
from kubetrain.controller.names import is_terminating
from kubetrain.controller.pods import phase
from kubetrain.controller.replicas import ReplicaView, restart_candidates
from kubetrain.kube.timefmt import parse_time, seconds_between


def backoff_message(name: str) -> str:
    return f"Job {name} has failed because it has reached the specified backoff limit"


def deadline_message(name: str) -> str:
    return f"Job {name} has failed because it was active longer than specified deadline"


def restarts_consumed(ctx: JobReconcile, views: list[ReplicaView], ledger: RestartLedger) -> int:
    """Restarts so far, counting the recreations this pass is about to do."""
    return ledger.restarts + ledger.live_restarts(ctx.pods) + len(restart_candidates(ctx, views, ledger))


def exceeds_backoff_limit(
    ctx: JobReconcile, views: list[ReplicaView], ledger: RestartLedger, prev_failed: int
) -> bool:
    limit = ctx.job.run_policy.backoff_limit
    if limit is None:
        return False
    failed = sum(1 for pod in ctx.pods if phase(pod) == "Failed")
    active = sum(
        1 for pod in ctx.pods if phase(pod) not in ("Succeeded", "Failed") and not is_terminating(pod)
    )
    total = sum(view.replicas for view in views)
    if limit < 1 and failed > prev_failed and active != total:
        return True  # upstream's "new failure" rule; with its requeue count always 0 it needs limit 0
    restarts = restarts_consumed(ctx, views, ledger)
    return restarts > 0 and restarts >= limit


def seconds_left(ctx: JobReconcile) -> float | None:
    """Seconds until activeDeadlineSeconds passes; None when no deadline applies yet."""
    deadline = ctx.job.run_policy.active_deadline_seconds
    start = parse_time(ctx.status.start_time)
    if deadline is None or start is None:
        return None
    return deadline - seconds_between(start, ctx.now)


def exceeded_limit(
    ctx: JobReconcile, views: list[ReplicaView], ledger: RestartLedger, prev_failed: int
) -> str | None:
    """The Failed message if a limit is hit (backoff checked first, as upstream), else None."""
    if exceeds_backoff_limit(ctx, views, ledger, prev_failed):
        return backoff_message(ctx.name)
    left = seconds_left(ctx)
    if left is not None and left <= 0:
        return deadline_message(ctx.name)
    return None


def requeue_for_deadline(ctx: JobReconcile) -> None:
    left = seconds_left(ctx)
    if left is not None and left > 0:
        ctx.requeue(left)
