"""XGBoostJob and MXJob: env, master role and status rules (docs/upstream-behaviour.md#xgboostjob,
#mxjob, #quirks-kept)."""

from __future__ import annotations

import json

import pytest

from kubetrain.api.types import TrainingJob
from kubetrain.frameworks.base import TopologyError
from kubetrain.frameworks.mxnet import MXNET
from kubetrain.frameworks.xgboost import XGBOOST
from tests.unit.frameworks.framework_builders import (
    NOW,
    build_pod,
    conds,
    created,
    env_of,
    job,
    replica,
    run_status,
    status,
)

XGB = "XGBoostJob"


def xgb(workers: int = 2, restart: str = "Never", master_port: int | None = -1) -> TrainingJob:
    return job(
        XGB, {"Master": replica(XGB, 1, port=master_port), "Worker": replica(XGB, workers, restart=restart)}
    )


def test_xgboost_worker_env() -> None:
    assert env_of(build_pod(xgb(), "Worker", 1)) == [
        ("MASTER_PORT", "9999"),
        ("MASTER_ADDR", "j-master-0"),
        ("WORLD_SIZE", "3"),
        ("RANK", "2"),
        ("PYTHONUNBUFFERED", "1"),
        ("WORKER_PORT", "9999"),
        ("WORKER_ADDRS", "j-worker-0,j-worker-1"),
    ]


def test_xgboost_single_master_has_no_worker_vars() -> None:
    j = job(XGB, {"Master": replica(XGB, 1)})
    assert [name for name, _ in env_of(build_pod(j, "Master", 0))] == [
        "MASTER_PORT",
        "MASTER_ADDR",
        "WORLD_SIZE",
        "RANK",
        "PYTHONUNBUFFERED",
    ]


def test_xgboost_missing_master_port() -> None:
    with pytest.raises(TopologyError, match="failed to found the port"):
        build_pod(xgb(master_port=None), "Worker", 0)


def test_xgboost_master_role() -> None:
    assert XGBOOST.is_master_role(xgb(), "Master", 0) and not XGBOOST.is_master_role(xgb(), "Worker", 0)


RUNNING = ("Running", "True", "XGBoostJobRunning", "XGBoostJob j is running.")
RUNNING_FALSE = ("Running", "False", "XGBoostJobRunning", "XGBoostJob j is running.")


@pytest.mark.parametrize(
    ("restart", "replicas", "prior", "expected"),
    [
        pytest.param("Never", {"Master": (1, 0, 0), "Worker": (2, 0, 0)}, [], [RUNNING], id="running"),
        pytest.param(
            "Never",
            {"Master": (0, 1, 0), "Worker": (0, 0, 0)},
            [],
            [
                RUNNING_FALSE,
                ("Succeeded", "True", "XGBoostJobSucceeded", "XGBoostJob j is successfully completed."),
            ],
            id="fast-success-running-first-then-flipped",
        ),
        pytest.param(
            "OnFailure",
            {"Master": (1, 0, 0), "Worker": (1, 0, 1)},
            [RUNNING],
            [
                RUNNING_FALSE,
                (
                    "Failed",
                    "True",
                    "XGBoostJobFailed",
                    "XGBoostJob j is failed because 1 Worker replica(s) failed.",
                ),
            ],
            id="onfailure-still-fails-13.11",
        ),
        pytest.param(
            "ExitCode",
            {"Master": (1, 0, 0), "Worker": (1, 0, 1)},
            [RUNNING],
            [
                (
                    "Restarting",
                    "True",
                    "XGBoostJobRestarting",
                    "XGBoostJob j is restarting because 1 Worker replica(s) failed.",
                )
            ],
            id="exitcode-restarts",
        ),
        pytest.param(
            "Never",
            {"Master": (1, 0, 0), "Worker": (2, 0, 0)},
            [RUNNING_FALSE],
            [RUNNING],
            id="running-master-sets-running-again",
        ),
    ],
)
def test_xgboost_status(restart: str, replicas: dict, prior: list, expected: list) -> None:
    ctx = run_status(xgb(restart=restart), status([created(XGB), *prior], **replicas))
    assert conds(ctx.status) == [created(XGB), *expected]
    assert ctx.status.replica_statuses["Worker"].selector is None  # XGBoost publishes none


def test_xgboost_failure_effects() -> None:
    ctx = run_status(xgb(restart="OnFailure"), status([created(XGB)], Master=(1, 0, 0), Worker=(1, 0, 1)))
    assert ctx.events == [
        ("Normal", "XGBoostJobFailed", "XGBoostJob j is failed because 1 Worker replica(s) failed.")
    ]
    assert ctx.metrics == ["training_operator_jobs_failed_total"]
    assert ctx.status.completion_time == NOW


# ---- MXJob ------------------------------------------------------------------------------------

MX = "MXJob"


def mxjob() -> TrainingJob:
    return job(
        MX,
        {
            "Scheduler": replica(MX, 1),
            "Server": replica(MX, 1, annotations={"tuner-server-key": "srv"}),
            "Worker": replica(MX, 2, restart="ExitCode"),
        },
    )


def test_mx_config_and_dmlc_env() -> None:
    assert env_of(build_pod(mxjob(), "Worker", 1)) == [
        (
            "MX_CONFIG",
            '{"cluster":{"scheduler":[{"url":"j-scheduler-0","port":9091}],"server":[{"url":"j-server-0","port":9091}],'
            '"worker":[{"url":"j-worker-0","port":9091},{"url":"j-worker-1","port":9091}]},'
            '"labels":{"scheduler":"","server":"srv","worker":""},"task":{"type":"worker","index":1}}',
        ),
        ("DMLC_PS_ROOT_PORT", "9091"),
        ("DMLC_PS_ROOT_URI", "j-scheduler-0"),
        ("DMLC_NUM_SERVER", "1"),
        ("DMLC_NUM_WORKER", "2"),
        ("DMLC_ROLE", "worker"),
        ("DMLC_USE_KUBERNETES", "1"),
        ("DMLC_WORKER_ID", "1"),
    ]


def test_mx_without_scheduler_and_server_role() -> None:
    j = job(MX, {"Worker": replica(MX, 1)})
    env = dict(env_of(build_pod(j, "Worker", 0)))
    assert (env["DMLC_PS_ROOT_PORT"], env["DMLC_PS_ROOT_URI"], env["DMLC_NUM_SERVER"]) == ("0", "", "0")
    assert json.loads(env["MX_CONFIG"])["task"] == {"type": "worker", "index": 0}
    server = dict(env_of(build_pod(mxjob(), "Server", 0)))
    assert server["DMLC_ROLE"] == "server" and "DMLC_WORKER_ID" not in server


def test_mx_missing_port() -> None:
    j = job(MX, {"Scheduler": replica(MX, 1, port=None), "Worker": replica(MX, 1)})
    with pytest.raises(TopologyError, match="failed to found the port"):
        build_pod(j, "Worker", 0)


def test_mx_master_role_is_server() -> None:
    assert [MXNET.is_master_role(mxjob(), t, 0) for t in ("Scheduler", "Server", "Worker")] == [
        False,
        True,
        False,
    ]


def test_mx_status() -> None:
    ctx = run_status(mxjob(), status([created(MX)], Scheduler=(1, 0, 0), Server=(1, 0, 0), Worker=(2, 0, 0)))
    assert conds(ctx.status)[-1] == ("Running", "True", "MXJobRunning", "MXJob j is running.")
    ctx = run_status(mxjob(), status([created(MX)], Scheduler=(0, 1, 0), Server=(1, 0, 0), Worker=(1, 0, 1)))
    assert conds(ctx.status)[-1] == (
        "Succeeded",
        "True",
        "MXJobSucceeded",
        "MXJob j is successfully completed.",
    )
    ctx = run_status(mxjob(), status([created(MX)], Scheduler=(1, 0, 0), Server=(1, 0, 0), Worker=(1, 0, 1)))
    assert conds(ctx.status)[-1] == (
        "Restarting",
        "True",
        "MXJobRestarting",
        "mxjob j is restarting because 1 Worker replica(s) failed.",
    )
    assert ctx.events == [
        ("Warning", "MXJobRestarting", "mxjob j is restarting because 1 Worker replica(s) failed.")
    ]
    ctx = run_status(mxjob(), status([created(MX)], Scheduler=(1, 0, 0), Server=(0, 0, 1), Worker=(2, 0, 0)))
    assert conds(ctx.status)[-1] == (
        "Failed",
        "True",
        "MXJobFailed",
        "mxjob j is failed because 1 Server replica(s) failed.",
    )


def test_mx_single_worker_decides() -> None:
    j = job(MX, {"Worker": replica(MX, 1)})
    ctx = run_status(j, status([created(MX)], Worker=(0, 1, 0)))
    assert conds(ctx.status)[-1][:3] == ("Succeeded", "True", "MXJobSucceeded")
