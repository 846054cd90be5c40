"""The XGBoost plugin through the TrainJob planner: the JobSet compared with the one upstream
v2.3.0's controller builds for its shipped `xgboost-distributed` runtime
(`plugins/xgboost/xgboost.go`, then `plugins/jobset`)."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.controller.config import ControllerConfig
from kubetrain.controller.plan import Observed
from kubetrain.kinds import registry
from kubetrain.kinds.trainjob.xgboost import gpus_per_node
from tests.unit.kinds.trainjob.test_trainjob_plan import (
    CTR_KEY,
    NOW,
    RANK,
    created_jobset,
    node_container,
    one_node_jobset,
    shipped_runtime,
    trainjob_on,
)

JsonDict = dict[str, Any]
IMAGE = "ghcr.io/kubeflow/trainer/xgboost-runtime"


def xgboost_distributed() -> JsonDict:
    return shipped_runtime("xgboost_distributed")


def trainjob(name: str = "tj", **spec: Any) -> JsonDict:
    return trainjob_on("xgboost-distributed", name, **spec)


def jobset_of(job: JsonDict, runtime: JsonDict | None = None) -> JsonDict:
    others = {CTR_KEY: [runtime or xgboost_distributed()]}
    return created_jobset(registry.plan(job, Observed(others=others), NOW, ControllerConfig()))


def dmlc_env(workers: int, name: str = "tj") -> list[JsonDict]:
    return [
        {"name": "DMLC_TRACKER_URI", "value": f"{name}-node-0-0.{name}"},
        {"name": "DMLC_TRACKER_PORT", "value": "29500"},
        {"name": "DMLC_TASK_ID", "valueFrom": RANK},
        {"name": "DMLC_NUM_WORKER", "value": str(workers)},
    ]


def test_the_jobset_of_xgboost_distributed_with_two_nodes_is_upstreams() -> None:
    job = trainjob(trainer={"numNodes": 2, "command": ["python", "train.py"]})
    assert jobset_of(job) == one_node_jobset(IMAGE, ["python", "train.py"], dmlc_env(2))


GPU2 = {"limits": {"nvidia.com/gpu": "2"}}


@pytest.mark.parametrize(
    ("name", "trainer", "count", "env"),
    [
        pytest.param("tj", {"numNodes": 4}, 4, dmlc_env(4), id="cpu-one-worker-per-node"),
        pytest.param("xgb", {"numNodes": 3}, 3, dmlc_env(3, "xgb"), id="the-tracker-is-pod-0-of-the-service"),
        pytest.param("tj", {}, 1, dmlc_env(1), id="without-numNodes-the-runtimes-count"),
        pytest.param(
            "tj", {"numNodes": 2, "resourcesPerNode": GPU2}, 2, dmlc_env(4), id="gpu-one-worker-per-gpu"
        ),
        pytest.param(
            "tj",
            {"numNodes": 2, "env": [{"name": "DATA", "value": "/d"}]},
            2,
            [*dmlc_env(2), {"name": "DATA", "value": "/d"}],
            id="the-trainers-env-after-the-plugins",
        ),
        pytest.param("tj", None, 1, None, id="without-a-trainer-no-env-and-no-port"),
    ],
)
def test_the_xgboost_plugins_node_container(
    name: str, trainer: JsonDict | None, count: int, env: list[JsonDict] | None
) -> None:
    job = trainjob(name, **({} if trainer is None else {"trainer": trainer}))
    jobset = jobset_of(job)
    rjob = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]
    assert (rjob["parallelism"], rjob["completions"]) == (count, count)
    container = node_container(jobset)
    assert container.get("env") == env
    assert container.get("ports") == (None if env is None else [{"containerPort": 29500}])


def runtime_with_resources(resources: JsonDict) -> JsonDict:
    runtime = xgboost_distributed()
    node = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    node["containers"][0]["resources"] = resources
    return runtime


def test_the_runtimes_gpus_count_unless_the_trainjob_sets_resources() -> None:
    runtime = runtime_with_resources({"requests": {"amd.com/gpu": "3"}})
    env = node_container(jobset_of(trainjob(trainer={"numNodes": 2}), runtime))["env"]
    assert env[3] == {"name": "DMLC_NUM_WORKER", "value": "6"}
    # the TrainJob's resourcesPerNode replaces the runtime's whole: no GPU there, 1 per node
    job = trainjob(trainer={"numNodes": 2, "resourcesPerNode": {"limits": {"cpu": "4"}}})
    env = node_container(jobset_of(job, runtime))["env"]
    assert env[3] == {"name": "DMLC_NUM_WORKER", "value": "2"}


@pytest.mark.parametrize(
    ("resources", "want"),
    [
        (None, 0),
        ({"limits": {"cpu": "8"}}, 0),
        ({"limits": {"nvidia.com/gpu": "4"}}, 4),
        ({"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "4"}}, 1),
        ({"requests": {"cpu": "1"}, "limits": {"NVIDIA.COM/GPU": "2"}}, 2),
        ({"limits": {"nvidia.com/gpu": "500m"}}, 1),
    ],
)
def test_gpus_per_node_as_upstream_counts_them(resources: JsonDict | None, want: int) -> None:
    assert gpus_per_node(resources) == want


def test_reserved_dmlc_envs_are_forbidden_by_the_webhook() -> None:
    from kubetrain.kinds.trainjob.validation import runtime_rules

    job = trainjob(trainer={"env": [{"name": "X", "value": "1"}, {"name": "DMLC_TASK_ID", "value": "0"}]})
    errors = runtime_rules(job, xgboost_distributed())
    assert [str(e) for e in errors] == [
        "spec.trainer.env[1]: Forbidden: DMLC_TASK_ID is reserved for the XGBoost runtime"
    ]
