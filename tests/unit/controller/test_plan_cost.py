"""One plan's work grows linearly with the job's replicas (issue 17: 10,000-replica jobs).

A job is planned again on every event of its pods, so a plan that does O(replicas) work per
replica makes a big job's life O(replicas^3). The work is counted, not timed: every Python and C
function call made during one `plan()` (dict lookups, label reads, matcher calls...). For linear
work, doubling the replicas again adds about as much as the previous doubling did; for quadratic
work it adds about four times as much.
"""

from __future__ import annotations

import copy
import sys
from collections.abc import Callable
from typing import Any

import pytest

from kubetrain.kinds.registry import plan

from .builders import T0, Cluster, PodBuilder, job

State = Callable[[PodBuilder], PodBuilder]


def _unschedulable(p: PodBuilder) -> PodBuilder:
    p.obj["status"] = {
        "phase": "Pending",
        "conditions": [
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": "0/1 nodes are available: 1 Too many pods.",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        ],
    }
    return p


STATES: dict[str, State] = {
    "running": lambda p: p.running(),
    "unschedulable": _unschedulable,
    "failed, being restarted": lambda p: p.failed(137),
}


def calls_in_one_plan(replicas: int, state: State) -> int:
    """Function calls of one plan of a job of `replicas` whose pods all exist in `state`."""
    cluster = Cluster(
        job("PyTorchJob")
        .replicas("Master", 1, restart_policy="OnFailure")
        .replicas("Worker", replicas - 1, restart_policy="OnFailure")
        .build()
    )
    cluster.step()
    cluster.step()
    cluster.set_pods(None, state)
    cluster.step()
    if state is STATES["failed, being restarted"]:
        # the restarts' deletes have not landed yet: every pod is in the job's restart ledger
        cluster.step()
        cluster.set_pods(None, state)
    observed = cluster.observed()
    the_job = copy.deepcopy(cluster.job)
    count = 0

    def profile(frame: Any, event: str, arg: Any) -> None:
        nonlocal count
        if event in ("call", "c_call"):
            count += 1

    sys.setprofile(profile)
    try:
        plan(the_job, observed, T0, cluster.config)
    finally:
        sys.setprofile(None)
    return count


@pytest.mark.parametrize("state", STATES)
def test_plan_work_is_linear_in_replicas(state: str) -> None:
    n = 100
    c1, c2, c4 = (calls_in_one_plan(k * n, STATES[state]) for k in (1, 2, 4))
    first, second = c2 - c1, c4 - c2
    assert first > 0
    assert second <= 2.3 * first, f"{state}: {c1} / {c2} / {c4} calls for {n} / {2 * n} / {4 * n} replicas"
