"""PyTorchJob: env order and values, init container, HPA and status rules
(docs/upstream-behaviour.md#pytorchjob, #pytorchjob-elastic, #upstream-tests)."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.api.types import RunPolicy, TrainingJob
from kubetrain.frameworks.base import FrameworkSettings, TopologyError
from kubetrain.frameworks.pytorch import DEFAULT_INIT_CONTAINER_TEMPLATE, PYTORCH, ElasticPolicy, RDZVConf
from tests.unit.frameworks.framework_builders import (
    NOW,
    build_pod,
    conds,
    container,
    created,
    env_of,
    job,
    replica,
    run_status,
    selector_of,
    status,
    template_of,
)

KIND = "PyTorchJob"


def ptjob(master: int | None = 1, workers: int = 2, nproc: str | None = "auto", **fields: Any) -> TrainingJob:
    specs = {}
    if master is not None:
        specs["Master"] = replica(KIND, master)
    specs["Worker"] = replica(KIND, workers)
    return job(KIND, specs, nproc_per_node=nproc, **fields)


# ---- env --------------------------------------------------------------------------------------


def test_spec_example_worker_env() -> None:
    assert env_of(build_pod(ptjob(), "Worker", 1)) == [
        ("PYTHONUNBUFFERED", "1"),
        ("MASTER_PORT", "23456"),
        ("PET_MASTER_PORT", "23456"),
        ("MASTER_ADDR", "j-master-0"),
        ("PET_MASTER_ADDR", "j-master-0"),
        ("WORLD_SIZE", "3"),
        ("RANK", "2"),
        ("PET_NODE_RANK", "2"),
        ("PET_NPROC_PER_NODE", "auto"),
        ("PET_NNODES", "3"),
    ]


def test_master_rank_and_integer_nproc_world_size() -> None:
    env = dict(env_of(build_pod(ptjob(nproc="4"), "Master", 0)))
    assert (env["RANK"], env["PET_NODE_RANK"], env["WORLD_SIZE"], env["PET_NPROC_PER_NODE"]) == (
        "0",
        "0",
        "12",
        "4",
    )


@pytest.mark.parametrize("nproc", ["auto", "cpu", "gpu", "x1"])
def test_non_integer_nproc_counts_one(nproc: str) -> None:
    assert dict(env_of(build_pod(ptjob(nproc=nproc), "Worker", 0)))["WORLD_SIZE"] == "3"


def test_without_master_only_nproc_and_nnodes() -> None:
    assert env_of(build_pod(ptjob(master=None, workers=2), "Worker", 1)) == [
        ("PYTHONUNBUFFERED", "1"),
        ("PET_NPROC_PER_NODE", "auto"),
        ("PET_NNODES", "2"),
    ]


def test_env_goes_to_every_container_after_user_env() -> None:
    containers = [
        container("pytorch", 23456, "pytorchjob-port", [{"name": "RANK", "value": "user"}]),
        container("side"),
    ]
    j = job(
        KIND,
        {"Master": replica(KIND, 1), "Worker": replica(KIND, 1, containers=containers)},
        nproc_per_node="auto",
    )
    pod = build_pod(j, "Worker", 0)
    first = env_of(pod, 0)
    assert first[0] == ("RANK", "user") and first[1:] == env_of(pod, 1)
    assert ("RANK", "1") in first  # appended, so it wins over the user's value


def test_missing_master_port_is_a_topology_error() -> None:
    j = job(KIND, {"Master": replica(KIND, 1, port=None), "Worker": replica(KIND, 1)}, nproc_per_node="auto")
    with pytest.raises(TopologyError, match="port not found"):
        build_pod(j, "Worker", 0)


def test_elastic_env_spec_11_2() -> None:
    policy = ElasticPolicy(
        min_replicas=1, max_replicas=3, max_restarts=3, rdzv_backend="c10d", metrics=[{"type": "Resource"}]
    )
    j = ptjob(master=None, workers=1, elastic_policy=policy)
    assert env_of(build_pod(j, "Worker", 0)) == [
        ("PYTHONUNBUFFERED", "1"),
        ("PET_NPROC_PER_NODE", "auto"),
        ("PET_RDZV_ENDPOINT", "j-worker-0:23456"),
        ("PET_RDZV_BACKEND", "c10d"),
        ("PET_NNODES", "1:3"),
        ("PET_MAX_RESTARTS", "3"),
    ]


def test_elastic_env_all_options() -> None:
    policy = ElasticPolicy(
        min_replicas=2,
        max_replicas=4,
        rdzv_host="etcd",
        rdzv_port=2379,
        rdzv_backend="etcd-v2",
        rdzv_id="abc",
        rdzv_conf=[RDZVConf(key="k1", value="v1"), RDZVConf(key="k2", value="v2")],
        standalone=True,
        n_proc_per_node=2,
    )
    j = ptjob(master=None, workers=2, nproc=None, elastic_policy=policy)
    assert env_of(build_pod(j, "Worker", 0)) == [
        ("PYTHONUNBUFFERED", "1"),
        ("PET_RDZV_ENDPOINT", "etcd:2379"),
        ("PET_RDZV_BACKEND", "etcd-v2"),
        ("PET_NNODES", "2:4"),
        ("PET_NPROC_PER_NODE", "2"),
        ("PET_RDZV_ID", "abc"),
        ("PET_RDZV_CONF", "k1=v1,k2=v2"),
        ("PET_STANDALONE", ""),
    ]


def test_elastic_without_bounds_uses_worker_replicas() -> None:
    j = ptjob(master=None, workers=5, elastic_policy=ElasticPolicy())
    assert ("PET_NNODES", "5") in env_of(build_pod(j, "Worker", 0))


# ---- init container ---------------------------------------------------------------------------

EXPECTED_INIT = {
    "name": "init-pytorch",
    "image": "alpine:3.10",
    "imagePullPolicy": "IfNotPresent",
    "resources": {"limits": {"cpu": "100m", "memory": "20Mi"}, "requests": {"cpu": "50m", "memory": "10Mi"}},
    "command": [
        "sh",
        "-c",
        "err=1;for i in $(seq 100); do if nslookup j-master-0; then err=0 && break; fi;"
        "echo waiting for master; sleep 2; done; exit $err",
    ],
}


def test_workers_wait_for_master_with_upstream_init_container() -> None:
    j = ptjob()
    template_of(j, "Worker")["spec"]["initContainers"] = [{"name": "user-init"}]
    worker = build_pod(j, "Worker", 0)
    assert worker["spec"]["initContainers"] == [{"name": "user-init"}, EXPECTED_INIT]
    assert "initContainers" not in build_pod(j, "Master", 0)["spec"]
    assert "initContainers" not in build_pod(ptjob(master=None), "Worker", 0)["spec"]


def test_init_container_copies_are_independent() -> None:
    j = ptjob()
    first, second = build_pod(j, "Worker", 0), build_pod(j, "Worker", 1)
    first["spec"]["initContainers"][0]["command"].append("x")
    assert second["spec"]["initContainers"][0] == EXPECTED_INIT


def test_init_container_settings_and_custom_template() -> None:
    settings = FrameworkSettings(pytorch_init_container_image="busybox:1", pytorch_init_container_max_tries=7)
    init = build_pod(ptjob(), "Worker", 0, settings)["spec"]["initContainers"][0]
    assert init["image"] == "busybox:1" and "seq 7" in init["command"][2]
    custom = FrameworkSettings(
        pytorch_init_container_template=(
            "- name: wait\n  image: {{ .InitContainerImage }}\n  args: ['{{.MasterAddr}}']\n"
        )
    )
    assert build_pod(ptjob(), "Worker", 0, custom)["spec"]["initContainers"] == [
        {"name": "wait", "image": "alpine:3.10", "args": ["j-master-0"]}
    ]


@pytest.mark.parametrize("template", ["- name: x\n  image: {{.Nope}}\n", "name: [unclosed", "just-a-string"])
def test_bad_custom_template_is_a_topology_error(template: str) -> None:
    with pytest.raises(TopologyError):
        build_pod(ptjob(), "Worker", 0, FrameworkSettings(pytorch_init_container_template=template))


def test_default_template_is_upstreams_text() -> None:
    assert DEFAULT_INIT_CONTAINER_TEMPLATE.startswith(
        "\n- name: init-pytorch\n  image: {{.InitContainerImage}}\n"
    )
    assert DEFAULT_INIT_CONTAINER_TEMPLATE.endswith(
        "command: ['sh', '-c', 'err=1;for i in $(seq {{.MaxTries}}); do if nslookup {{.MasterAddr}}; "
        "then err=0 && break; fi;echo waiting for master; sleep 2; done; exit $err']"
    )


# ---- master role ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("master", "rtype", "index", "expected"),
    [(1, "Master", 0, True), (1, "Worker", 0, False), (None, "Worker", 0, True), (None, "Worker", 1, False)],
)
def test_master_role(master: int | None, rtype: str, index: int, expected: bool) -> None:
    assert PYTORCH.is_master_role(ptjob(master=master), rtype, index) is expected


# ---- HPA --------------------------------------------------------------------------------------


def test_hpa_for_elastic_metrics() -> None:
    metrics = [
        {
            "type": "Resource",
            "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}},
        }
    ]
    j = ptjob(
        master=None, workers=1, elastic_policy=ElasticPolicy(min_replicas=1, max_replicas=3, metrics=metrics)
    )
    assert PYTORCH.desired_children(j, FrameworkSettings()) == [
        {
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": {
                "name": "j",
                "namespace": "ns",
                "ownerReferences": [
                    {
                        "apiVersion": "kubeflow.org/v1",
                        "kind": "PyTorchJob",
                        "name": "j",
                        "uid": "uid-1",
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": {
                "scaleTargetRef": {"kind": "PyTorchJob", "name": "j", "apiVersion": "kubeflow.org/v1"},
                "minReplicas": 1,
                "maxReplicas": 3,
                "metrics": metrics,
            },
        }
    ]


def test_no_hpa_without_metrics_or_while_suspended() -> None:
    settings = FrameworkSettings()
    assert (
        PYTORCH.desired_children(
            ptjob(master=None, elastic_policy=ElasticPolicy(min_replicas=1, max_replicas=2)), settings
        )
        == []
    )
    suspended = ptjob(
        master=None,
        elastic_policy=ElasticPolicy(min_replicas=1, max_replicas=2, metrics=[]),
        run_policy=RunPolicy(suspend=True),
    )
    assert PYTORCH.desired_children(suspended, settings) == []


# ---- status -----------------------------------------------------------------------------------

RUNNING = ("Running", "True", "PyTorchJobRunning", "PyTorchJob j is running.")


@pytest.mark.parametrize(
    ("replicas", "prior", "expected", "events", "metrics"),
    [
        pytest.param({"Master": (1, 0, 0), "Worker": (2, 0, 0)}, [], [RUNNING], [], [], id="master-running"),
        pytest.param(
            {"Master": (0, 1, 0), "Worker": (2, 0, 0)},
            [RUNNING],
            [
                ("Running", "False", *RUNNING[2:]),
                ("Succeeded", "True", "PyTorchJobSucceeded", "PyTorchJob j is successfully completed."),
            ],
            [("Normal", "PyTorchJobSucceeded", "PyTorchJob j is successfully completed.")],
            ["training_operator_jobs_successful_total"],
            id="master-succeeded-workers-still-running",
        ),
        pytest.param(
            {"Master": (1, 0, 0), "Worker": (1, 0, 1)},
            [RUNNING],
            [
                (
                    "Restarting",
                    "True",
                    "PyTorchJobRestarting",
                    "PyTorchJob j is restarting because 1 Worker replica(s) failed.",
                )
            ],
            [
                (
                    "Warning",
                    "PyTorchJobRestarting",
                    "PyTorchJob j is restarting because 1 Worker replica(s) failed.",
                )
            ],
            ["training_operator_jobs_restarted_total"],
            id="worker-failed-onfailure-restarts",
        ),
        pytest.param(
            {"Master": (1, 0, 0), "Worker": (2, 0, 1)},
            [RUNNING],
            [RUNNING],
            [],
            [],
            id="failed-but-replicas-covered",
        ),
        pytest.param({"Master": (1, 0, 0), "Worker": (0, 0, 0)}, [], [RUNNING], [], [], id="workers-pending"),
    ],
)
def test_status_with_master(replicas: dict, prior: list, expected: list, events: list, metrics: list) -> None:
    ctx = run_status(ptjob(), status([created(KIND), *prior], **replicas))
    assert conds(ctx.status) == [created(KIND), *expected]
    assert ctx.events == events
    assert ctx.metrics == metrics


def test_worker_failure_under_never_fails() -> None:
    j = job(
        KIND, {"Master": replica(KIND, 1), "Worker": replica(KIND, 2, restart="Never")}, nproc_per_node="auto"
    )
    ctx = run_status(j, status([created(KIND), RUNNING], Master=(1, 0, 0), Worker=(1, 0, 1)))
    failed = (
        "Failed",
        "True",
        "PyTorchJobFailed",
        "PyTorchJob j is failed because 1 Worker replica(s) failed.",
    )
    assert conds(ctx.status) == [created(KIND), ("Running", "False", *RUNNING[2:]), failed]
    assert ctx.events == [("Normal", "PyTorchJobFailed", failed[3])]
    assert ctx.metrics == ["training_operator_jobs_failed_total"]
    assert ctx.status.completion_time == NOW


def test_without_master_workers_decide_with_namespaced_messages() -> None:
    j = ptjob(master=None, workers=2)
    ctx = run_status(j, status([created(KIND)], Worker=(2, 0, 0)))
    assert conds(ctx.status)[-1] == ("Running", "True", "PyTorchJobRunning", "PyTorchJob ns/j is running.")
    ctx = run_status(j, status([created(KIND)], Worker=(1, 1, 0)))
    assert conds(ctx.status)[-1][0] == "Running"
    ctx = run_status(j, status([created(KIND)], Worker=(0, 2, 0)))
    assert conds(ctx.status)[-1] == (
        "Succeeded",
        "True",
        "PyTorchJobSucceeded",
        "PyTorchJob ns/j successfully completed.",
    )


def test_elastic_job_succeeds_with_one_worker_done() -> None:
    j = ptjob(master=None, workers=3, elastic_policy=ElasticPolicy(min_replicas=1, max_replicas=3))
    ctx = run_status(j, status([created(KIND)], Worker=(2, 1, 0)))
    assert conds(ctx.status)[-1][:3] == ("Succeeded", "True", "PyTorchJobSucceeded")


def test_selector_set_on_every_replica_status() -> None:
    ctx = run_status(ptjob(), status([], Master=(0, 1, 0)))
    assert ctx.status.replica_statuses["Master"].selector == (
        "training.kubeflow.org/job-name=j,training.kubeflow.org/operator-name=pytorchjob-controller,"
        "training.kubeflow.org/replica-type=master"
    )
    assert selector_of(ctx.status, "Worker").endswith("replica-type=worker")
    assert ctx.status.start_time == NOW
