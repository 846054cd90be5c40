"""What the pages see of a job, its pods and events: the fields they show, and nothing else."""

from __future__ import annotations

from typing import Any

from kubetrain.client.kinds import resolve_kind
from kubetrain.dashboard.views import (
    event_rows,
    job_detail,
    job_summary,
    merged_conditions,
    pod_row,
)

PYTORCH = resolve_kind("pytorchjob")


def job(**status: Any) -> dict[str, Any]:
    container = {
        "name": "pytorch",
        "image": "pytorch/pytorch",
        "command": ["python", "train.py", "--api-key", "hunter2"],
        "env": [{"name": "TOKEN", "value": "s3cret-value"}],
    }
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {
            "name": "digits",
            "namespace": "team",
            "uid": "u-1",
            "creationTimestamp": "2024-05-01T10:00:00Z",
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "s3cret-value"},
        },
        "spec": {
            "pytorchReplicaSpecs": {
                "Master": {"replicas": 1, "template": {"spec": {"containers": [container]}}},
                "Worker": {
                    "replicas": 2,
                    "restartPolicy": "Never",
                    "template": {"spec": {"containers": [container]}},
                },
            }
        },
        "status": status,
    }


def test_a_running_jobs_row_has_its_state_and_replica_counts() -> None:
    row = job_summary(
        job(
            startTime="2024-05-01T10:00:01Z",
            conditions=[
                {"type": "Created", "status": "True", "lastTransitionTime": "2024-05-01T10:00:00Z"},
                {"type": "Running", "status": "True", "message": "is running", "lastTransitionTime": "t1"},
            ],
            replicaStatuses={"Master": {"active": 1}, "Worker": {"active": 1, "failed": 1}},
        ),
        PYTORCH,
    )
    assert row["key"] == "team/PyTorchJob/digits"
    assert row["state"] == "Running" and row["message"] == "is running"
    assert row["replicas"] == {
        "Master": {"desired": 1, "active": 1, "succeeded": 0, "failed": 0},
        "Worker": {"desired": 2, "active": 1, "succeeded": 0, "failed": 1},
    }
    assert row["totals"] == {"desired": 3, "active": 2, "succeeded": 0, "failed": 1}
    assert (row["created"], row["started"], row["finished"]) == (
        "2024-05-01T10:00:00Z",
        "2024-05-01T10:00:01Z",
        None,
    )


def test_a_finished_job_is_succeeded_with_its_finish_time_whatever_came_after() -> None:
    row = job_summary(
        job(
            conditions=[
                {"type": "Succeeded", "status": "True", "lastTransitionTime": "2024-05-01T10:05:00Z"},
                {"type": "Running", "status": "False", "lastTransitionTime": "2024-05-01T10:05:00Z"},
            ]
        ),
        PYTORCH,
    )
    assert row["state"] == "Succeeded" and row["finished"] == "2024-05-01T10:05:00Z"
    assert job_summary(job(), PYTORCH)["state"] == "Pending"


def test_the_detail_shows_images_but_no_command_env_or_annotations() -> None:
    detail = job_detail(job(), PYTORCH)
    assert detail["specs"][1] == {
        "type": "Worker",
        "replicas": 2,
        "restartPolicy": "Never",
        "containers": [{"name": "pytorch", "image": "pytorch/pytorch"}],
    }
    assert detail["specs"][0]["restartPolicy"] == "OnFailure"  # PyTorchJob's default
    text = repr(detail)
    assert "s3cret-value" not in text and "hunter2" not in text


def test_a_pod_row_has_node_address_restarts_and_exit_codes() -> None:
    pod = {
        "metadata": {
            "name": "digits-worker-1",
            "uid": "p-1",
            "labels": {
                "training.kubeflow.org/replica-type": "worker",
                "training.kubeflow.org/replica-index": "1",
            },
        },
        "spec": {"nodeName": "kubetrain-local", "containers": [{"name": "pytorch", "env": [{"value": "x"}]}]},
        "status": {
            "phase": "Running",
            "podIP": "127.3.0.4",
            "initContainerStatuses": [
                {"name": "init-pytorch", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}
            ],
            "containerStatuses": [
                {
                    "name": "pytorch",
                    "restartCount": 2,
                    "state": {"running": {"startedAt": "t"}},
                    "lastState": {"terminated": {"exitCode": 3}},
                    "ready": True,
                }
            ],
        },
    }
    row = pod_row(pod, "digits")
    assert (row["replica"], row["node"], row["address"], row["restarts"]) == (
        "worker-1",
        "kubetrain-local",
        "127.3.0.4",
        2,
    )
    init, main = row["containers"]
    assert (init["init"], init["state"], init["exitCode"]) == (True, "terminated", 0)
    assert (main["state"], main["exitCode"], main["lastExitCode"], main["restarts"]) == (
        "running",
        None,
        3,
        2,
    )
    assert "env" not in repr(row)


def test_events_are_ordered_by_time_and_name_their_object() -> None:
    rows = event_rows(
        [
            {
                "involvedObject": {"kind": "Pod", "name": "p"},
                "reason": "Started",
                "lastTimestamp": "2024-05-01T10:00:02Z",
            },
            {
                "involvedObject": {"kind": "PyTorchJob", "name": "digits"},
                "reason": "SuccessfulCreatePod",
                "type": "Normal",
                "message": "Created pod: p",
                "count": 1,
                "lastTimestamp": "2024-05-01T10:00:01Z",
            },
        ]
    )
    assert [(r["object"], r["reason"]) for r in rows] == [
        ("pytorchjob/digits", "SuccessfulCreatePod"),
        ("pod/p", "Started"),
    ]


def test_conditions_merge_the_recorded_transitions_once_each() -> None:
    current = [
        {"type": "Running", "status": "False", "time": "t2", "reason": "", "message": ""},
        {"type": "Succeeded", "status": "True", "time": "t2", "reason": "", "message": ""},
    ]
    recorded = [
        {"type": "Running", "status": "True", "time": "t1", "reason": "", "message": ""},
        {"type": "Running", "status": "False", "time": "t2", "reason": "", "message": ""},
    ]
    merged = merged_conditions(current, recorded)
    assert [(c["type"], c["status"]) for c in merged] == [
        ("Running", "True"),
        ("Running", "False"),
        ("Succeeded", "True"),
    ]
