"""PaddleJob and JAXJob: env in both Paddle modes, JAX coordinator env, and their status rules."""

from __future__ import annotations

import pytest

from kubetrain.api.types import TrainingJob
from kubetrain.frameworks.base import TopologyError
from kubetrain.frameworks.jax import JAX
from kubetrain.frameworks.paddle import PADDLE
from tests.unit.frameworks.framework_builders import (
    build_pod,
    conds,
    created,
    env_of,
    job,
    replica,
    run_status,
    selector_of,
    status,
)

POD_IP = ("POD_IP_DUMMY", {"fieldRef": {"fieldPath": "status.podIP"}})


def paddle(master: int | None = None, workers: int = 2, port: int | None = -1) -> TrainingJob:
    specs = {}
    if master is not None:
        specs["Master"] = replica("PaddleJob", master, port=port)
    specs["Worker"] = replica("PaddleJob", workers, port=port)
    return job("PaddleJob", specs)


def test_collective_worker0_advertises_its_ip() -> None:
    pod = build_pod(paddle(), "Worker", 0)
    assert env_of(pod) == [
        ("PYTHONUNBUFFERED", "1"),
        ("PADDLE_JOB_ID", "j"),
        ("PADDLE_NNODES", "2"),
        POD_IP,
        ("PADDLE_MASTER", "$(POD_IP_DUMMY):36543"),
    ]
    assert pod["spec"]["containers"][0]["env"][3] == {
        "name": "POD_IP_DUMMY",
        "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}},
    }


def test_collective_other_workers_dial_worker0() -> None:
    assert env_of(build_pod(paddle(port=40000), "Worker", 1))[3:] == [("PADDLE_MASTER", "j-worker-0:40000")]


def test_missing_paddle_port_falls_back_to_default() -> None:
    assert env_of(build_pod(paddle(port=None), "Worker", 1))[3:] == [("PADDLE_MASTER", "j-worker-0:36543")]


@pytest.mark.parametrize(
    ("rtype", "index", "tail"),
    [
        ("Master", 0, [POD_IP, ("PADDLE_MASTER", "$(POD_IP_DUMMY):36543"), ("PADDLE_SERVER_NUM", "1")]),
        ("Master", 1, [("PADDLE_MASTER", "j-master-0:36543"), ("PADDLE_SERVER_NUM", "1")]),
        ("Worker", 0, [("PADDLE_MASTER", "j-master-0:36543"), ("PADDLE_TRAINER_NUM", "1")]),
    ],
)
def test_ps_mode(rtype: str, index: int, tail: list) -> None:
    env = env_of(build_pod(paddle(master=2, workers=2), rtype, index))
    assert env[:3] == [("PYTHONUNBUFFERED", "1"), ("PADDLE_JOB_ID", "j"), ("PADDLE_NNODES", "4")]
    assert env[3:] == tail


def test_paddle_master_role_and_status_messages() -> None:
    j = paddle(master=1, workers=1)
    assert PADDLE.is_master_role(j, "Master", 0) and not PADDLE.is_master_role(j, "Worker", 0)
    ctx = run_status(j, status([created("PaddleJob")], Master=(0, 1, 0), Worker=(1, 0, 0)))
    assert conds(ctx.status)[-1] == (
        "Succeeded",
        "True",
        "PaddleJobSucceeded",
        "PaddleJob j is successfully completed.",
    )
    collective = paddle(workers=2)
    ctx = run_status(collective, status([created("PaddleJob")], Worker=(1, 1, 0)))
    assert conds(ctx.status)[-1] == ("Running", "True", "PaddleJobRunning", "PaddleJob ns/j is running.")
    ctx = run_status(collective, status([created("PaddleJob")], Worker=(1, 0, 1)))
    assert conds(ctx.status)[-1] == (
        "Restarting",
        "True",
        "PaddleJobRestarting",
        "PaddleJob j is restarting because 1 Worker replica(s) failed.",
    )
    assert selector_of(ctx.status, "Worker").split(",")[1] == (
        "training.kubeflow.org/operator-name=paddlejob-controller"
    )


def test_jax_env() -> None:
    j = job("JAXJob", {"Worker": replica("JAXJob", 3)})
    assert env_of(build_pod(j, "Worker", 2)) == [
        ("PYTHONUNBUFFERED", "1"),
        ("COORDINATOR_PORT", "6666"),
        ("COORDINATOR_ADDRESS", "j-worker-0"),
        ("NUM_PROCESSES", "3"),
        ("PROCESS_ID", "2"),
    ]


def test_jax_missing_port() -> None:
    j = job("JAXJob", {"Worker": replica("JAXJob", 2, port=None)})
    with pytest.raises(TopologyError, match="default container port is not exposed"):
        build_pod(j, "Worker", 0)


def test_jax_master_role_and_status() -> None:
    j = job("JAXJob", {"Worker": replica("JAXJob", 2)})
    assert [JAX.is_master_role(j, "Worker", i) for i in (0, 1)] == [True, False]
    ctx = run_status(j, status([created("JAXJob")], Worker=(2, 0, 0)))
    assert conds(ctx.status)[-1] == ("Running", "True", "JAXJobRunning", "JAXJob ns/j is running.")
    ctx = run_status(j, status([created("JAXJob")], Worker=(0, 2, 0)))
    assert conds(ctx.status)[-1] == (
        "Succeeded",
        "True",
        "JAXJobSucceeded",
        "JAXJob ns/j successfully completed.",
    )
    ctx = run_status(j, status([created("JAXJob")], Worker=(1, 0, 1)))
    assert conds(ctx.status)[-1] == (
        "Failed",
        "True",
        "JAXJobFailed",
        "JAXJob j is failed because 1 Worker replica(s) failed.",
    )
    assert ctx.events == [
        ("Normal", "JAXJobFailed", "JAXJob j is failed because 1 Worker replica(s) failed.")
    ]
