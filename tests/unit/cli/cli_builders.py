"""Small builders of raw jobs and pods for the CLI and client unit tests."""

from __future__ import annotations

from typing import Any

JsonDict = dict[str, Any]


def pytorchjob(
    name: str = "tiny",
    workers: int = 2,
    conditions: list[JsonDict] | None = None,
    replica_statuses: JsonDict | None = None,
    created: str = "2024-01-01T00:00:00Z",
) -> JsonDict:
    def spec(replicas: int) -> JsonDict:
        return {
            "replicas": replicas,
            "restartPolicy": "OnFailure",
            "template": {
                "spec": {
                    "containers": [
                        {"name": "pytorch", "image": "python:3.11", "command": ["python", "-c", "print(1)"]}
                    ]
                }
            },
        }

    job: JsonDict = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name, "namespace": "default", "creationTimestamp": created},
        "spec": {"pytorchReplicaSpecs": {"Master": spec(1), "Worker": spec(workers)}},
    }
    if conditions is not None or replica_statuses is not None:
        job["status"] = {"conditions": conditions or [], "replicaStatuses": replica_statuses or {}}
    return job


def cond(ctype: str, status: str = "True", reason: str = "", message: str = "") -> JsonDict:
    return {"type": ctype, "status": status, "reason": reason, "message": message}


def pod(
    name: str,
    rtype: str,
    index: int,
    *,
    uid: str = "u1",
    statuses: list[JsonDict] | None = None,
    init_statuses: list[JsonDict] | None = None,
    job: str = "tiny",
) -> JsonDict:
    return {
        "metadata": {
            "name": name,
            "uid": uid,
            "namespace": "default",
            "creationTimestamp": "2024-01-01T00:00:00Z",
            "labels": {
                "training.kubeflow.org/job-name": job,
                "training.kubeflow.org/replica-type": rtype,
                "training.kubeflow.org/replica-index": str(index),
            },
        },
        "spec": {"containers": [{"name": "pytorch"}]},
        "status": {
            "phase": "Running",
            "containerStatuses": statuses or [],
            "initContainerStatuses": init_statuses or [],
        },
    }
