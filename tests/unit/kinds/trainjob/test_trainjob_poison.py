"""Fuzz: a TrainJob, its runtime and its JobSet with any node replaced by a hostile value never make
the planner raise, and every write it plans is encodable (the operator's pure path, issue 17)."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubetrain.controller.config import ControllerConfig
from kubetrain.controller.plan import CreateObject, Observed, PatchObject
from kubetrain.kinds import registry
from kubetrain.runtime.transport import _encode
from tests.poison_jobs import paths
from tests.unit.kinds.trainjob.test_trainjob_plan import (
    CTR_KEY,
    JOBSET_KEY,
    created_jobset,
    plan,
    stored,
    torch_distributed,
    trainjob,
)

NOW = datetime(2026, 12, 2, 12, 30, tzinfo=UTC)
JOB = trainjob(
    trainer={
        "numNodes": 2,
        "numProcPerNode": "cpu",
        "image": "i",
        "command": ["torchrun"],
        "args": ["a"],
        "env": [{"name": "A", "value": "1"}],
        "resourcesPerNode": {"limits": {"cpu": "2"}, "requests": {"cpu": "1"}},
    },
    suspend=False,
    activeDeadlineSeconds=60,
    initializer={
        "dataset": {"storageUri": "hf://x", "env": [{"name": "E", "value": "v"}], "secretRef": {"name": "s"}}
    },
    runtimePatches=[
        {
            "manager": "m",
            "trainingRuntimeSpec": {
                "template": {
                    "metadata": {"labels": {"l": "v"}},
                    "spec": {"replicatedJobs": [{"name": "node", "template": {"spec": {"parallelism": 1}}}]},
                }
            },
        }
    ],
)
JOB["status"] = {
    "conditions": [{"type": "Suspended", "status": "False", "reason": "Resumed", "lastTransitionTime": "x"}],
    "jobsStatus": [{"name": "node"}],
}
RUNTIME = torch_distributed()
JOBSET = stored(
    created_jobset(plan(trainjob(trainer={"numNodes": 2}))),
    conditions=[{"type": "Completed", "status": "True", "reason": "r", "message": "m"}],
    replicatedJobsStatus=[{"name": "node", "ready": 1, "succeeded": 1}],
)
BASES = (JOB, RUNTIME, JOBSET)
HOSTILE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True),
    st.text(max_size=8),
    st.sampled_from(["2500m", "auto", "gpu", "1e400", "", "-1", "True"]),
    st.lists(st.none() | st.integers() | st.text(max_size=3), max_size=3),
    st.dictionaries(st.text(max_size=4), st.none() | st.integers() | st.text(max_size=3), max_size=3),
)


@st.composite
def poisoned(draw: Any) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    docs = [copy.deepcopy(d) for d in BASES]
    which = draw(st.integers(0, len(docs) - 1))
    path = draw(st.sampled_from([p for p in paths(docs[which]) if p]))
    node: Any = docs[which]
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = draw(HOSTILE)
    return docs[0], docs[1], docs[2]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(poisoned())
def test_poisoned_trainjobs_runtimes_and_jobsets_never_raise(docs: tuple[dict[str, Any], ...]) -> None:
    job, runtime, jobset = docs
    for others in ({CTR_KEY: [runtime], JOBSET_KEY: [jobset]}, {CTR_KEY: [runtime]}):
        result = registry.plan(job, Observed(others=others), NOW, ControllerConfig())
        for action in result.actions:
            if isinstance(action, CreateObject | PatchObject):
                _encode(action.obj if isinstance(action, CreateObject) else action.patch)
        if result.status is not None:
            _encode(result.status)
