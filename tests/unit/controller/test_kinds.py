"""Per-kind plans: the objects of a new job (names, labels, env compared exactly) and the
Created -> Running -> Succeeded sequence of each kind's status rule (docs/upstream-behaviour.md#names,
#status-rules, #upstream-tests)."""

from __future__ import annotations

import json

import pytest

from kubetrain.controller.plan import CreateObject

from .builders import (
    Cluster,
    actions_summary,
    at,
    conditions,
    created,
    env_of,
    event_list,
    job,
    stamp,
)

SELECTOR = (
    "training.kubeflow.org/job-name=test-job,training.kubeflow.org/operator-name={op},"
    "training.kubeflow.org/replica-type={rt}"
)


def test_pytorch_new_job_creates_pods_and_services_with_exact_env_and_labels() -> None:
    c = Cluster(job("PyTorchJob").replicas("Master", 1).replicas("Worker", 2).build())
    result = c.step()
    assert actions_summary(result) == [
        ("create", "Pod", "test-job-master-0"),
        ("create", "Service", "test-job-master-0"),
        ("create", "Pod", "test-job-worker-0"),
        ("create", "Pod", "test-job-worker-1"),
        ("create", "Service", "test-job-worker-0"),
        ("create", "Service", "test-job-worker-1"),
    ]
    pods = created(result)
    master, worker1 = pods["test-job-master-0"], pods["test-job-worker-1"]
    assert master["metadata"]["labels"] == {
        "training.kubeflow.org/operator-name": "pytorchjob-controller",
        "training.kubeflow.org/job-name": "test-job",
        "training.kubeflow.org/replica-type": "master",
        "training.kubeflow.org/replica-index": "0",
        "training.kubeflow.org/job-role": "master",
    }
    assert "training.kubeflow.org/job-role" not in worker1["metadata"]["labels"]
    assert master["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "kubeflow.org/v1",
            "kind": "PyTorchJob",
            "name": "test-job",
            "uid": "job-uid-1",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert env_of(worker1) == [
        ("PYTHONUNBUFFERED", "1"),
        ("MASTER_PORT", "23456"),
        ("PET_MASTER_PORT", "23456"),
        ("MASTER_ADDR", "test-job-master-0"),
        ("PET_MASTER_ADDR", "test-job-master-0"),
        ("WORLD_SIZE", "3"),
        ("RANK", "2"),
        ("PET_NODE_RANK", "2"),
        ("PET_NPROC_PER_NODE", "auto"),
        ("PET_NNODES", "3"),
    ]
    assert env_of(master)[5:8] == [("WORLD_SIZE", "3"), ("RANK", "0"), ("PET_NODE_RANK", "0")]
    assert master["spec"]["restartPolicy"] == "OnFailure"
    assert [c["name"] for c in worker1["spec"]["initContainers"]] == ["init-pytorch"]
    assert "initContainers" not in master["spec"]
    svc = created(result, "Service")["test-job-master-0"]
    assert svc["spec"] == {
        "clusterIP": "None",
        "selector": {
            "training.kubeflow.org/operator-name": "pytorchjob-controller",
            "training.kubeflow.org/job-name": "test-job",
            "training.kubeflow.org/replica-type": "master",
            "training.kubeflow.org/replica-index": "0",
        },
        "ports": [{"name": "pytorchjob-port", "port": 23456}],
    }
    assert svc["metadata"]["labels"] == svc["spec"]["selector"]
    assert event_list(result)[:2] == [
        ("Normal", "SuccessfulCreatePod", "Created pod: test-job-master-0"),
        ("Normal", "SuccessfulCreateService", "Created service: test-job-master-0"),
    ]
    assert conditions(result.status) == [
        ("Created", "True", "PyTorchJobCreated", "PyTorchJob test-job is created.")
    ]
    assert result.status is not None and result.status["startTime"] == stamp()
    assert [(m.name, dict(m.labels)) for m in result.metrics] == [
        ("training_operator_jobs_created_total", {"job_namespace": "default", "framework": "pytorch"})
    ]


def test_pytorch_running_then_succeeded() -> None:
    c = Cluster(job("PyTorchJob").replicas("Master", 1).replicas("Worker", 1).build())
    c.step()
    c.set_pods(None, lambda p: p.running())
    running = c.step(at(10))
    assert running.actions == []
    assert conditions(running.status) == [
        ("Created", "True", "PyTorchJobCreated", "PyTorchJob test-job is created."),
        ("Running", "True", "PyTorchJobRunning", "PyTorchJob test-job is running."),
    ]
    assert running.status is not None
    assert running.status["replicaStatuses"]["Worker"] == {
        "active": 1,
        "selector": SELECTOR.format(op="pytorchjob-controller", rt="worker"),
    }
    c.set_pods("Master", lambda p: p.succeeded())
    done = c.step(at(20))
    assert conditions(done.status) == [
        ("Created", "True", "PyTorchJobCreated", "PyTorchJob test-job is created."),
        ("Running", "False", "PyTorchJobRunning", "PyTorchJob test-job is running."),
        ("Succeeded", "True", "PyTorchJobSucceeded", "PyTorchJob test-job is successfully completed."),
    ]
    assert done.status is not None
    assert done.status["completionTime"] == stamp(20)
    # Succeeded: whatever was still active is counted as succeeded.
    assert done.status["replicaStatuses"]["Master"]["succeeded"] == 1
    assert done.status["replicaStatuses"]["Worker"].get("active", 0) == 0
    assert done.status["replicaStatuses"]["Worker"]["succeeded"] == 1
    assert ("Normal", "PyTorchJobSucceeded", "PyTorchJob test-job is successfully completed.") in event_list(
        done
    )
    assert ("training_operator_jobs_successful_total") in [m.name for m in done.metrics]
    assert done.actions == []  # cleanPodPolicy None keeps the pods
    again = c.plan(at(30))
    assert again.actions == [] and again.status is None and again.metrics == []


def test_tfjob_tf_config_exact_and_worker0_success() -> None:
    c = Cluster(job("TFJob", namespace="ns").replicas("PS", 1).replicas("Worker", 2).build())
    result = c.step()
    pods = created(result)
    env = dict(env_of(pods["test-job-worker-1"]))
    assert env["TF_CONFIG"] == json.dumps(
        {
            "cluster": {
                "ps": ["test-job-ps-0.ns.svc:2222"],
                "worker": ["test-job-worker-0.ns.svc:2222", "test-job-worker-1.ns.svc:2222"],
            },
            "task": {"type": "worker", "index": 1},
            "environment": "cloud",
        },
        separators=(",", ":"),
    )
    assert pods["test-job-worker-0"]["metadata"]["labels"]["training.kubeflow.org/job-role"] == "master"
    assert pods["test-job-ps-0"]["spec"]["restartPolicy"] == "Never"
    c.set_pods(None, lambda p: p.running())
    running = c.step(at(5))
    assert conditions(running.status)[-1] == (
        "Running",
        "True",
        "TFJobRunning",
        "TFJob ns/test-job is running.",
    )
    c.set_pods("Worker", lambda p: p.succeeded())
    done = c.step(at(9))
    assert conditions(done.status)[-1] == (
        "Succeeded",
        "True",
        "TFJobSucceeded",
        "TFJob ns/test-job successfully completed.",
    )


def test_tfjob_single_replica_has_no_tf_config() -> None:
    result = Cluster(job("TFJob").replicas("Worker", 1).build()).step()
    assert env_of(created(result)["test-job-worker-0"]) == []


def test_xgboost_env_and_failure_with_never() -> None:
    c = Cluster(job("XGBoostJob").replicas("Master", 1).replicas("Worker", 2).build())
    result = c.step()
    pods = created(result)
    assert env_of(pods["test-job-worker-1"]) == [
        ("MASTER_PORT", "9999"),
        ("MASTER_ADDR", "test-job-master-0"),
        ("WORLD_SIZE", "3"),
        ("RANK", "2"),
        ("PYTHONUNBUFFERED", "1"),
        ("WORKER_PORT", "9999"),
        ("WORKER_ADDRS", "test-job-worker-0,test-job-worker-1"),
    ]
    c.set_pods(None, lambda p: p.running())
    c.step(at(1))
    c.set_pods("Worker", lambda p: p.failed(1))
    failed = c.step(at(2))
    assert conditions(failed.status)[-1] == (
        "Failed",
        "True",
        "XGBoostJobFailed",
        "XGBoostJob test-job is failed because 2 Worker replica(s) failed.",
    )
    assert failed.status is not None and failed.status["completionTime"] == stamp(2)
    assert "training_operator_jobs_failed_total" in [m.name for m in failed.metrics]


def test_paddle_collective_env() -> None:
    result = Cluster(job("PaddleJob").replicas("Worker", 2).build()).step()
    pods = created(result)
    assert env_of(pods["test-job-worker-0"]) == [
        ("PYTHONUNBUFFERED", "1"),
        ("PADDLE_JOB_ID", "test-job"),
        ("PADDLE_NNODES", "2"),
        ("POD_IP_DUMMY", {"fieldRef": {"fieldPath": "status.podIP"}}),
        ("PADDLE_MASTER", "$(POD_IP_DUMMY):36543"),
    ]
    assert env_of(pods["test-job-worker-1"])[-1] == ("PADDLE_MASTER", "test-job-worker-0:36543")
    assert created(result, "Service")["test-job-worker-0"]["spec"]["ports"] == [
        {"name": "master", "port": 36543}
    ]


def test_jax_env_and_success() -> None:
    c = Cluster(job("JAXJob").replicas("Worker", 2).build())
    result = c.step()
    assert env_of(created(result)["test-job-worker-1"]) == [
        ("PYTHONUNBUFFERED", "1"),
        ("COORDINATOR_PORT", "6666"),
        ("COORDINATOR_ADDRESS", "test-job-worker-0"),
        ("NUM_PROCESSES", "2"),
        ("PROCESS_ID", "1"),
    ]
    c.set_pods(None, lambda p: p.succeeded())
    done = c.step(at(3))
    assert conditions(done.status) == [
        ("Created", "True", "JAXJobCreated", "JAXJob test-job is created."),
        ("Succeeded", "True", "JAXJobSucceeded", "JAXJob default/test-job successfully completed."),
    ]


def test_mxjob_env() -> None:
    result = Cluster(
        job("MXJob").replicas("Scheduler", 1).replicas("Server", 1).replicas("Worker", 1).build()
    ).step()
    env = dict(env_of(created(result)["test-job-worker-0"]))
    assert json.loads(env["MX_CONFIG"]) == {
        "cluster": {
            "scheduler": [{"url": "test-job-scheduler-0", "port": 9091}],
            "server": [{"url": "test-job-server-0", "port": 9091}],
            "worker": [{"url": "test-job-worker-0", "port": 9091}],
        },
        "labels": {"scheduler": "", "server": "", "worker": ""},
        "task": {"type": "worker", "index": 0},
    }
    assert env["DMLC_ROLE"] == "worker" and env["DMLC_PS_ROOT_URI"] == "test-job-scheduler-0"
    assert (
        created(result)["test-job-server-0"]["metadata"]["labels"]["training.kubeflow.org/job-role"]
        == "master"
    )


@pytest.mark.parametrize(
    ("kind", "types"),
    [
        ("TFJob", ("PS", "Worker")),
        ("PyTorchJob", ("Master", "Worker")),
        ("XGBoostJob", ("Master", "Worker")),
        ("PaddleJob", ("Master", "Worker")),
        ("JAXJob", ("Worker",)),
        ("MXJob", ("Scheduler", "Server", "Worker")),
    ],
)
def test_every_kind_converges_after_create(kind: str, types: tuple[str, ...]) -> None:
    builder = job(kind)
    for rtype in types:
        builder.replicas(rtype, 1)
    c = Cluster(builder.build())
    first = c.step()
    assert len(created(first)) == len(types) and len(created(first, "Service")) == len(types)
    assert conditions(first.status)[0] == (
        "Created",
        "True",
        f"{kind}Created",
        f"{kind} test-job is created.",
    )
    second = c.plan()
    assert second.actions == [] and second.status is None


def test_template_labels_annotations_kept_and_restart_policy_warning() -> None:
    builder = job("TFJob").replicas(
        "Worker",
        1,
        labels={"team": "a", "training.kubeflow.org/job-name": "spoof"},
        annotations={"note": "x"},
        pod_spec={"restartPolicy": "Always"},
        restart_policy="ExitCode",
    )
    result = Cluster(builder.build()).step()
    pod = created(result)["test-job-worker-0"]
    assert pod["metadata"]["labels"]["team"] == "a"
    assert pod["metadata"]["labels"]["training.kubeflow.org/job-name"] == "test-job"
    assert pod["metadata"]["annotations"] == {"note": "x"}
    assert pod["spec"]["restartPolicy"] == "Never"  # ExitCode -> Never
    assert (
        "Warning",
        "SetPodTemplateRestartPolicy",
        "Restart policy in pod template will be overwritten by restart policy in replica spec",
    ) in event_list(result)


def test_created_objects_are_independent_per_pod() -> None:
    result = Cluster(job("PyTorchJob").replicas("Master", 1).replicas("Worker", 3).build()).step()
    pods = [a.obj for a in result.actions if isinstance(a, CreateObject) and a.obj["kind"] == "Pod"]
    envs = [p["spec"]["containers"][0]["env"] for p in pods]
    assert len({id(e) for e in envs}) == len(envs)
    assert len({id(p["metadata"]["labels"]) for p in pods}) == len(pods)
