"""The JAX plugin through the TrainJob planner: the JobSet compared with the one upstream v2.3.0's
controller builds for its shipped `jax-distributed` runtime (`plugins/jax/jax.go`, then
`plugins/jobset`)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubetrain.controller.config import ControllerConfig
from kubetrain.controller.plan import Observed
from kubetrain.kinds import registry
from tests.unit.kinds.trainjob.test_trainjob_plan import (
    CTR_KEY,
    NOW,
    RANK,
    created_jobset,
    node_container,
    one_node_jobset,
    shipped_runtime,
    torch_distributed,
    trainjob_on,
)

JsonDict = dict[str, Any]
IMAGE = "nvcr.io/nvidia/jax:25.10-py3"


def jax_distributed() -> JsonDict:
    return shipped_runtime("jax_distributed")


def trainjob(name: str = "tj", **spec: Any) -> JsonDict:
    return trainjob_on("jax-distributed", name, **spec)


def jobset_of(job: JsonDict, runtime: JsonDict | None = None) -> JsonDict:
    others = {CTR_KEY: [runtime or jax_distributed(), torch_distributed()]}
    return created_jobset(registry.plan(job, Observed(others=others), NOW, ControllerConfig()))


def jax_env(nodes: int, name: str = "tj") -> list[JsonDict]:
    return [
        {"name": "JAX_NUM_PROCESSES", "value": str(nodes)},
        {"name": "JAX_PROCESS_ID", "valueFrom": RANK},
        {"name": "JAX_COORDINATOR_ADDRESS", "value": f"{name}-node-0-0.{name}:29500"},
    ]


def test_the_jobset_of_jax_distributed_with_two_nodes_is_upstreams() -> None:
    job = trainjob(trainer={"numNodes": 2, "command": ["python", "train.py"]})
    assert jobset_of(job) == one_node_jobset(IMAGE, ["python", "train.py"], jax_env(2))


@pytest.mark.parametrize(
    ("name", "trainer", "count", "env", "ports"),
    [
        pytest.param("tj", {"numNodes": 4}, 4, jax_env(4), [{"containerPort": 29500}], id="numNodes"),
        pytest.param(
            "multi-node-job",
            {"numNodes": 3},
            3,
            jax_env(3, "multi-node-job"),
            [{"containerPort": 29500}],
            id="the-coordinator-is-pod-0-of-the-trainjobs-service",
        ),
        pytest.param(
            "tj", {}, 1, jax_env(1), [{"containerPort": 29500}], id="without-numNodes-the-runtimes-count"
        ),
        pytest.param(
            "tj",
            {
                "numNodes": 2,
                "env": [{"name": "CUSTOM_VAR", "value": "v"}, {"name": "DATASET_PATH", "value": "/d"}],
            },
            2,
            [*jax_env(2), {"name": "CUSTOM_VAR", "value": "v"}, {"name": "DATASET_PATH", "value": "/d"}],
            [{"containerPort": 29500}],
            id="the-trainers-env-after-the-plugins",
        ),
        pytest.param(
            "tj",
            {"numNodes": 2, "env": [{"name": "JAX_NUM_PROCESSES", "value": "7"}]},
            2,
            [{"name": "JAX_NUM_PROCESSES", "value": "7"}, *jax_env(2)[1:]],
            [{"containerPort": 29500}],
            id="a-trainer-env-of-a-plugins-name-wins-no-reserved-names",
        ),
        pytest.param("tj", None, 1, None, None, id="without-a-trainer-no-env-and-no-port"),
    ],
)
def test_the_jax_plugins_node_container(
    name: str, trainer: JsonDict | None, count: int, env: list[JsonDict] | None, ports: list[JsonDict] | None
) -> None:
    job = trainjob(name, **({} if trainer is None else {"trainer": trainer}))
    jobset = jobset_of(job)
    rjob = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]
    assert (rjob["parallelism"], rjob["completions"]) == (count, count)
    container = node_container(jobset)
    assert container.get("env") == env
    assert container.get("ports") == ports


def test_the_runtimes_own_env_and_ports_are_kept_and_upserted() -> None:
    runtime = jax_distributed()
    node = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    node["containers"][0]["env"] = [
        {"name": "XLA_FLAGS", "value": "--x"},
        {"name": "JAX_PROCESS_ID", "value": "9"},
    ]
    node["containers"][0]["ports"] = [{"containerPort": 8080}, {"containerPort": 29500, "name": "coord"}]
    container = node_container(jobset_of(trainjob(trainer={"numNodes": 2}), runtime))
    assert container["env"] == [
        {"name": "XLA_FLAGS", "value": "--x"},
        {"name": "JAX_PROCESS_ID", "valueFrom": RANK},
        jax_env(2)[0],
        jax_env(2)[2],
    ]
    assert container["ports"] == [{"containerPort": 8080}, {"containerPort": 29500}]


def test_a_torch_runtime_gets_no_jax_env_and_a_jax_runtime_no_torch_env() -> None:
    torch_job = copy.deepcopy(trainjob(trainer={"numNodes": 2}))
    torch_job["spec"]["runtimeRef"]["name"] = "torch-distributed"
    torch_names = [e["name"] for e in node_container(jobset_of(torch_job))["env"]]
    assert torch_names and not any(n.startswith("JAX_") for n in torch_names)
    jax_names = [e["name"] for e in node_container(jobset_of(trainjob(trainer={"numNodes": 2})))["env"]]
    assert jax_names == ["JAX_NUM_PROCESSES", "JAX_PROCESS_ID", "JAX_COORDINATOR_ADDRESS"]
