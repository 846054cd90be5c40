"""Level-triggered and idempotent, checked over random jobs and pod states: the same input plans
the same, and a plan that has landed plans nothing.

For any job and any observed pods: planning twice gives the same plan, and applying plans
reaches a fixpoint (no actions, no status write) within four passes — one for most states;
a restart needs two (delete, then recreate under the same name), a finished job with
cleanPodPolicy one more, and a restart beside a replica that failed for good one more again:
as upstream, a Restarting job is not failed in the pass that restarts it, so the failure is
seen once the restarted pod is back (TFJob: Worker OnFailure restarting, Evaluator Never failed).
Once there, it stays there.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubetrain.controller.config import ControllerConfig

from .builders import Cluster, PodBuilder, at, job, pod, service

SHAPES: dict[str, list[str]] = {
    "TFJob": ["Chief", "PS", "Worker", "Evaluator"],
    "PyTorchJob": ["Master", "Worker"],
    "XGBoostJob": ["Master", "Worker"],
    "PaddleJob": ["Master", "Worker"],
    "JAXJob": ["Worker"],
    "MXJob": ["Scheduler", "Server", "Worker"],
}
PASSES_TO_SETTLE = 4
POD_STATES = [
    "absent",
    "pending",
    "running",
    "restarted",
    "succeeded",
    "failed1",
    "failed137",
    "failed?",
    "terminating",
]


def _pod(builder: Any, rtype: str, index: int, state: str) -> dict[str, Any] | None:
    p: PodBuilder = pod(builder, rtype, index)
    if state == "absent":
        return None
    if state == "running":
        p.running()
    elif state == "restarted":
        p.running().restarts(2)
    elif state == "succeeded":
        p.succeeded()
    elif state.startswith("failed"):
        code = state[len("failed") :]
        p.failed(None if code == "?" else int(code))
    elif state == "terminating":
        p.running().terminating()
    return p.build()


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[Cluster, Any]:
    kind = draw(st.sampled_from(sorted(SHAPES)))
    types = draw(st.lists(st.sampled_from(SHAPES[kind]), min_size=1, max_size=len(SHAPES[kind]), unique=True))
    builder = job(kind)
    for rtype in types:
        builder.replicas(
            rtype,
            draw(st.integers(0, 3)),
            restart_policy=draw(st.sampled_from([None, "Never", "OnFailure", "Always", "ExitCode"])),
        )
    policy: dict[str, Any] = {}
    if draw(st.booleans()):
        policy["cleanPodPolicy"] = draw(st.sampled_from(["All", "Running", "None"]))
    if draw(st.booleans()):
        policy["backoffLimit"] = draw(st.integers(0, 4))
    if draw(st.booleans()):
        policy["activeDeadlineSeconds"] = draw(st.integers(1, 100))
    if draw(st.booleans()):
        policy["ttlSecondsAfterFinished"] = draw(st.integers(0, 100))
    policy["suspend"] = draw(st.booleans())
    builder.run_policy(**policy)
    gang = draw(st.sampled_from(["", "", "volcano", "scheduler-plugins"]))
    c = Cluster(builder.build(), config=ControllerConfig(gang_scheduler_name=gang))
    for rtype in types:
        for index in range(draw(st.integers(0, 4))):
            obj = _pod(builder, rtype, index, draw(st.sampled_from(POD_STATES)))
            if obj is not None:
                if draw(st.integers(0, 9)) == 0:
                    del obj["metadata"]["ownerReferences"]
                c.pods[obj["metadata"]["name"]] = obj
                if draw(st.booleans()):
                    svc = service(builder, rtype, index, owned=draw(st.integers(0, 4)) > 0)
                    c.services[svc["metadata"]["name"]] = svc
    return c, draw(st.integers(0, 200))


def test_a_restart_beside_a_replica_failed_for_good_settles_in_four_passes() -> None:
    """The case hypothesis found: the Worker restarts (delete, recreate), then the job fails on the
    Evaluator's permanent failure, then nothing; three passes were not enough."""
    builder = job("TFJob")
    builder.replicas("Evaluator", 1).replicas("Worker", 2, restart_policy="OnFailure")
    c = Cluster(builder.build(), config=ControllerConfig())
    for rtype, index, state in (
        ("Evaluator", 0, "failed1"),
        ("Worker", 0, "running"),
        ("Worker", 1, "failed1"),
    ):
        obj = _pod(builder, rtype, index, state)
        assert obj is not None
        c.pods[obj["metadata"]["name"]] = obj
    now = at(0)
    conditions = []
    for _ in range(PASSES_TO_SETTLE):
        result = c.step(now)
        if result.status is not None:
            conditions.append([x["type"] for x in result.status["conditions"] if x["status"] == "True"])
    assert conditions == [["Created", "Restarting"], ["Created", "Running"], ["Created", "Failed"]]
    settled = c.plan(now)
    assert settled.actions == [] and settled.status is None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_plans_are_deterministic_and_converge(scenario: tuple[Cluster, int]) -> None:
    c, offset = scenario
    now = at(offset)
    if c.config.uses_volcano:
        c.step(now)
        for group in c.others.get("scheduling.volcano.sh/v1beta1/PodGroup", {}).values():
            group["status"] = {"phase": "Inqueue"}
    snapshot = (copy.deepcopy(c.job), copy.deepcopy(c.pods), copy.deepcopy(c.services))
    first = c.plan(now)
    assert c.plan(now) == first, "same input, different plan"
    assert (c.job, c.pods, c.services) == snapshot, "the planner mutated its input"
    for _ in range(PASSES_TO_SETTLE):
        result = c.step(now)
        if not result.actions and result.status is None:
            break
        if c.job_deleted:
            return
    else:
        raise AssertionError(f"no fixpoint after {PASSES_TO_SETTLE} passes")
    settled = c.plan(now)
    assert settled.actions == [] and settled.status is None
