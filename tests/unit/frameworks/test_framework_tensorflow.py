"""TFJob: TF_CONFIG bytes, master role and status rules (docs/upstream-behaviour.md#tfjob,
#upstream-tests)."""

from __future__ import annotations

import json

import pytest

from kubetrain.api.types import TrainingJob
from kubetrain.frameworks.base import FrameworkSettings, TopologyError
from kubetrain.frameworks.tensorflow import TENSORFLOW
from kubetrain.frameworks.tensorflow import plugin as tf
from tests.unit.frameworks.framework_builders import (
    EARLIER,
    NOW,
    build_pod,
    conds,
    container,
    created,
    env_dict,
    env_of,
    job,
    observed_pod,
    replica,
    run_status,
    status,
    template_of,
)

RUNNING = ("Running", "True", "TFJobRunning", "TFJob ns/j is running.")
SUCCEEDED = ("Succeeded", "True", "TFJobSucceeded", "TFJob ns/j successfully completed.")


def tfjob(**counts: int) -> TrainingJob:
    specs = {rtype: replica("TFJob", n) for rtype, n in counts.items()}
    return job("TFJob", specs)


# ---- TF_CONFIG --------------------------------------------------------------------------------


def test_tf_config_matches_spec_example_byte_for_byte() -> None:
    j = tfjob(Chief=1, Evaluator=1, PS=2, Worker=2)
    pod = build_pod(j, "Worker", 1)
    assert env_of(pod) == [
        (
            "TF_CONFIG",
            '{"cluster":{"chief":["j-chief-0.ns.svc:2222"],"evaluator":["j-evaluator-0.ns.svc:2222"],'
            '"ps":["j-ps-0.ns.svc:2222","j-ps-1.ns.svc:2222"],'
            '"worker":["j-worker-0.ns.svc:2222","j-worker-1.ns.svc:2222"]},'
            '"task":{"type":"worker","index":1},"environment":"cloud"}',
        )
    ]


def test_tf_config_cluster_domain_and_per_type_port() -> None:
    j = job(
        "TFJob",
        {
            "PS": replica("TFJob", 1, port=3333),
            "Worker": replica("TFJob", 1, containers=[container("tensorflow")]),  # no port: 2222
        },
    )
    pod = build_pod(j, "PS", 0, FrameworkSettings(cluster_domain="cluster.local"))
    assert env_dict(pod)["TF_CONFIG"] == (
        '{"cluster":{"ps":["j-ps-0.ns.svc.cluster.local:3333"],"worker":["j-worker-0.ns.svc.cluster.local:2222"]},'
        '"task":{"type":"ps","index":0},"environment":"cloud"}'
    )


def test_tf_config_only_in_first_tensorflow_container_after_user_env() -> None:
    user_env = [{"name": "A", "value": "1"}]
    containers = [
        container("sidecar", env=[{"name": "S", "value": "s"}]),
        container("tensorflow", 2222, "tfjob-port", user_env),
    ]
    j = job("TFJob", {"Worker": replica("TFJob", 2, containers=containers)})
    pod = build_pod(j, "Worker", 0)
    assert env_of(pod, 0) == [("S", "s")]
    names = [name for name, _ in env_of(pod, 1)]
    assert names == ["A", "TF_CONFIG"]
    assert template_of(j, "Worker")["spec"]["containers"][1]["env"] == user_env  # template untouched


@pytest.mark.parametrize(
    ("counts", "distributed"),
    [({"Worker": 1}, False), ({"Chief": 1}, False), ({"Worker": 2}, True), ({"Worker": 1, "PS": 1}, True)],
)
def test_single_replica_job_gets_no_tf_config(counts: dict[str, int], distributed: bool) -> None:
    j = tfjob(**counts)
    rtype = next(iter(counts))
    assert ("TF_CONFIG" in env_dict(build_pod(j, rtype, 0))) is distributed


def test_lower_case_rtype_is_accepted() -> None:
    j = tfjob(PS=1, Worker=2)
    assert env_dict(build_pod(j, "Worker", 1)) == env_dict(_pod_with(j, "worker", 1))


def _pod_with(j: object, rtype: str, index: int) -> dict:
    pod = {"spec": {"containers": [container("tensorflow")]}}
    TENSORFLOW.set_cluster_spec(j, pod, rtype, index, FrameworkSettings())  # type: ignore[arg-type]
    return pod


@pytest.mark.parametrize(
    ("rtype", "index", "expected"),
    [
        (
            "Worker",
            1,
            '{"cluster":{"worker":{"1":"j-worker-1.ns.svc:2222"},"ps":["j-ps-0.ns.svc:2222","j-ps-1.ns.svc:2222"]},'
            '"task":{"type":"worker","index":1}}',
        ),
        ("PS", 1, '{"cluster":{"worker":{},"ps":["j-ps-1.ns.svc:2222"]},"task":{"type":"ps","index":1}}'),
        ("Chief", 0, '{"cluster":{"worker":{},"ps":[]},"task":{"type":"chief","index":0}}'),
    ],
)
def test_sparse_cluster_spec(rtype: str, index: int, expected: str) -> None:
    j = job(
        "TFJob",
        {"Chief": replica("TFJob", 1), "PS": replica("TFJob", 2), "Worker": replica("TFJob", 2)},
        enable_dynamic_worker=True,
    )
    assert env_dict(build_pod(j, rtype, index))["TF_CONFIG"] == expected


def test_sparse_worker_without_ps_has_null_ps_like_go() -> None:
    j = job("TFJob", {"Worker": replica("TFJob", 2)}, enable_dynamic_worker=True)
    expected = (
        '{"cluster":{"worker":{"0":"j-worker-0.ns.svc:2222"},"ps":null},"task":{"type":"worker","index":0}}'
    )
    assert tf.tf_config(j, "worker", 0) == expected


def test_sparse_index_out_of_range_is_a_topology_error() -> None:
    j = job("TFJob", {"Worker": replica("TFJob", 2)}, enable_dynamic_worker=True)
    with pytest.raises(TopologyError):
        tf.tf_config(j, "worker", 5)


def test_go_html_escaping_in_json() -> None:
    j = job("TFJob", {"Worker": replica("TFJob", 2)}, name="a<b>&c")
    value = tf.tf_config(j, "worker", 0)
    assert "\\u003c" in value and "\\u003e" in value and "\\u0026" in value
    assert json.loads(value)["cluster"]["worker"][0].startswith("a<b>&c-worker-0")


def test_cluster_built_once_for_a_thousand_pods() -> None:
    j = tfjob(PS=10, Worker=990)
    tf._cluster.cache_clear()
    for index in range(990):
        pod = {"spec": {"containers": [container("tensorflow")]}}
        TENSORFLOW.set_cluster_spec(j, pod, "Worker", index, FrameworkSettings())
    info = tf._cluster.cache_info()
    assert info.misses == 1 and info.hits == 989
    assert json.loads(pod["spec"]["containers"][0]["env"][0]["value"])["task"] == {
        "type": "worker",
        "index": 989,
    }


# ---- master role ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("counts", "rtype", "index", "master"),
    [
        ({"Chief": 1, "Worker": 2}, "Chief", 0, True),
        ({"Chief": 1, "Worker": 2}, "Worker", 0, False),
        ({"Master": 1, "Worker": 2}, "Master", 0, True),
        ({"PS": 1, "Worker": 2}, "Worker", 0, True),
        ({"PS": 1, "Worker": 2}, "Worker", 1, False),
        ({"PS": 1, "Worker": 2}, "PS", 0, False),
        ({"PS": 1, "Worker": 2}, "worker", 0, True),
    ],
)
def test_master_role(counts: dict[str, int], rtype: str, index: int, master: bool) -> None:
    assert TENSORFLOW.is_master_role(tfjob(**counts), rtype, index) is master


# ---- status -----------------------------------------------------------------------------------


def test_four_workers_two_ps_running_is_running() -> None:
    j = tfjob(PS=2, Worker=4)
    ctx = run_status(j, status([created("TFJob")[:4]], Worker=(4, 0, 0), PS=(2, 0, 0)))
    assert conds(ctx.status) == [created("TFJob"), RUNNING]
    assert ctx.status.start_time == NOW
    assert ctx.events == [] and ctx.metrics == []


def test_all_workers_succeeded_is_succeeded() -> None:
    j = tfjob(PS=2, Worker=4)
    st = status([created("TFJob"), RUNNING], Worker=(0, 4, 0), PS=(2, 0, 0))
    ctx = run_status(j, st)
    assert conds(ctx.status) == [created("TFJob"), ("Running", "False", *RUNNING[2:]), SUCCEEDED]
    assert ctx.events == [("Normal", "TFJobSucceeded", "TFJob ns/j successfully completed.")]
    assert ctx.metrics == ["training_operator_jobs_successful_total"]
    assert ctx.status.completion_time == NOW


def test_non_zero_index_worker_succeeded_gives_no_condition() -> None:
    j = tfjob(PS=2, Worker=4)
    pods = [observed_pod("Worker", 1, "Succeeded", "tensorflow", 0), observed_pod("Worker", 0, "Pending")]
    ctx = run_status(j, status([created("TFJob")], Worker=(0, 1, 0)), pods)
    assert conds(ctx.status) == [created("TFJob")]


@pytest.mark.parametrize(
    ("pods", "policy", "expected_last"),
    [
        ([observed_pod("Worker", 0, "Succeeded", "tensorflow", 0)], None, SUCCEEDED),
        ([observed_pod("Worker", 0, "Succeeded", "tensorflow", 0)], "AllWorkers", RUNNING),
        ([observed_pod("Worker", 0, "Succeeded", "tensorflow", 1)], None, RUNNING),
        ([observed_pod("Worker", 0, "Succeeded")], None, RUNNING),  # no terminated state: 0xbeef
        ([observed_pod("Worker", 0, "Running", "tensorflow")], None, RUNNING),
        ([observed_pod("Worker", 0, "Succeeded", "tensorflow", 0)] * 2, None, RUNNING),  # duplicate index 0
    ],
)
def test_worker0_completion_decides_by_default(
    pods: list[dict], policy: str | None, expected_last: tuple
) -> None:
    j = job("TFJob", {"Worker": replica("TFJob", 3)}, success_policy=policy)
    ctx = run_status(j, status([created("TFJob")], Worker=(2, 1, 0)), pods)
    assert conds(ctx.status)[-1] == expected_last


@pytest.mark.parametrize("decider", ["Chief", "Master"])
def test_chief_or_master_decides(decider: str) -> None:
    j = tfjob(**{decider: 1, "Worker": 2})
    ctx = run_status(j, status([created("TFJob")], **{decider: (1, 0, 0), "Worker": (0, 2, 0)}))
    assert conds(ctx.status) == [created("TFJob"), RUNNING]  # workers done: not decisive
    ctx = run_status(j, status([created("TFJob"), RUNNING], **{decider: (0, 1, 0), "Worker": (2, 0, 0)}))
    assert conds(ctx.status)[-1] == SUCCEEDED


def test_ps_failure_fails_the_job() -> None:
    j = tfjob(PS=2, Worker=4)
    ctx = run_status(j, status([created("TFJob"), RUNNING], Worker=(4, 0, 0), PS=(1, 0, 1)))
    failed = ("Failed", "True", "TFJobFailed", "TFJob ns/j has failed because 1 PS replica(s) failed.")
    assert conds(ctx.status) == [created("TFJob"), ("Running", "False", *RUNNING[2:]), failed]
    assert ctx.events == [("Normal", "TFJobFailed", failed[3])]
    assert ctx.metrics == ["training_operator_jobs_failed_total"]
    assert ctx.status.completion_time == NOW


def test_restarting_present_at_start_is_reasserted_and_not_recounted() -> None:
    restarting = (
        "Restarting",
        "True",
        "TFJobRestarting",
        "job j is restarting because Worker replica(s) failed.",
    )
    j = tfjob(Chief=1, Worker=2)
    ctx = run_status(j, status([created("TFJob"), restarting], Chief=(1, 0, 0), Worker=(1, 0, 1)))
    assert conds(ctx.status) == [created("TFJob"), restarting]
    assert ctx.events == [] and ctx.metrics == []


def test_dynamic_worker_tolerates_worker_failures_but_not_ps() -> None:
    j = job("TFJob", {"PS": replica("TFJob", 1), "Worker": replica("TFJob", 3)}, enable_dynamic_worker=True)
    ctx = run_status(j, status([created("TFJob")], PS=(1, 0, 0), Worker=(2, 0, 1)))
    assert conds(ctx.status) == [created("TFJob"), RUNNING]
    ctx = run_status(j, status([created("TFJob")], PS=(0, 0, 1), Worker=(2, 0, 0)))
    assert conds(ctx.status)[-1][:3] == ("Failed", "True", "TFJobFailed")


def test_second_evaluation_changes_nothing_and_counts_nothing() -> None:
    j = tfjob(Worker=2)
    st = status([created("TFJob")], Worker=(0, 2, 0))
    st.start_time = EARLIER
    first = run_status(j, st)
    assert first.metrics == ["training_operator_jobs_successful_total"]
    again = run_status(j, first.status)
    assert again.metrics == [] and again.events == []
    assert again.status.start_time == EARLIER and again.status.completion_time == NOW
