"""The per-kind admission decision: what controller-runtime's validator plumbing would answer."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from webhook_jobs import replica, request, valid_job, with_run_policy

from kubetrain.api.validation import denied_message, validate_raw, webhook_name
from kubetrain.kinds.registry import REPLICA_SPEC_KINDS as KINDS
from kubetrain.webhook.handler import DEPRECATED_KINDS, admit, names, routes, webhook_path
from kubetrain.webhook.review import rejection_status

UPSTREAM_PATHS = {
    "TFJob": "/validate-kubeflow-org-v1-tfjob",
    "PyTorchJob": "/validate-kubeflow-org-v1-pytorchjob",
    "XGBoostJob": "/validate-kubeflow-org-v1-xgboostjob",
    "PaddleJob": "/validate-kubeflow-org-v1-paddlejob",
    "JAXJob": "/validate-kubeflow-org-v1-jaxjob",
    "MXJob": "/validate-kubeflow-org-v1-mxjob",
}
TRAINER_PATHS = {  # Kubeflow Trainer v2.3's manifests/base/webhook/manifests.yaml
    "TrainJob": "/validate-trainer-kubeflow-org-v1alpha1-trainjob",
    "TrainingRuntime": "/validate-trainer-kubeflow-org-v1alpha1-trainingruntime",
    "ClusterTrainingRuntime": "/validate-trainer-kubeflow-org-v1alpha1-clustertrainingruntime",
}


def test_every_kind_is_served_on_upstreams_path() -> None:
    assert {info.kind: path for path, info in routes().items()} == {**UPSTREAM_PATHS, **TRAINER_PATHS}
    assert webhook_path(KINDS["PyTorchJob"]) == "/validate-kubeflow-org-v1-pytorchjob"
    assert set(names()) == {
        f"validator.{k.lower()}.training-operator.kubeflow.org" for k in UPSTREAM_PATHS
    } | {f"validator.{k.lower()}.trainer.kubeflow.org" for k in TRAINER_PATHS}


@pytest.mark.parametrize("kind", list(KINDS))
def test_valid_create_is_allowed_with_code_200(kind: str) -> None:
    resp = admit(KINDS[kind], request("CREATE", valid_job(kind)))
    assert resp.allowed
    assert resp.status == {"metadata": {}, "code": 200}
    assert resp.warnings == ((DEPRECATED_KINDS[kind],) if kind in DEPRECATED_KINDS else ())


def invalid_cases() -> list[tuple[str, dict[str, Any], str]]:
    pytorch = valid_job("PyTorchJob")
    pytorch["spec"]["pytorchReplicaSpecs"]["Master"]["replicas"] = 2
    xgb = valid_job("XGBoostJob")
    del xgb["spec"]["xgbReplicaSpecs"]["Master"]
    paddle = valid_job("PaddleJob")
    paddle["spec"]["paddleReplicaSpecs"]["Worker"] = replica("PaddleJob", 1, container="main")
    tf = valid_job("TFJob")
    tf["spec"]["tfReplicaSpecs"].update(Chief=replica("TFJob"), Master=replica("TFJob"))
    jax = valid_job("JAXJob", name="Bad_Name")
    return [
        ("PyTorchJob", pytorch, "spec.pytorchReplicaSpecs[Master].replicas: Forbidden: must be 1"),
        ("XGBoostJob", xgb, "spec.xgbReplicaSpecs[Master]: Required value: must be present"),
        (
            "PaddleJob",
            paddle,
            "spec.paddleReplicaSpecs[Worker].template.spec.containers: Required value: must have at least one"
            ' container with name "paddle"',
        ),
        ("TFJob", tf, "spec.tfReplicaSpecs: Forbidden: must not have more than 1 Chief or Master role"),
        ("JAXJob", jax, 'metadata.name: Invalid value: "Bad_Name"'),
    ]


@pytest.mark.parametrize(("kind", "job", "message"), invalid_cases(), ids=[c[0] for c in invalid_cases()])
def test_invalid_create_is_denied_403_forbidden_with_upstreams_message(
    kind: str, job: dict[str, Any], message: str
) -> None:
    info = KINDS[kind]
    resp = admit(info, request("CREATE", job))
    assert not resp.allowed
    assert resp.status["code"] == 403
    assert resp.status["reason"] == "Forbidden"
    assert resp.status["message"].startswith(message)
    _, _, errors = validate_raw(job, kinds=KINDS)
    # What kubectl prints is the API server's wrapping of our message: the api layer's text exactly.
    assert rejection_status(webhook_name(info), resp)["message"] == denied_message(info, errors)
    assert rejection_status(webhook_name(info), resp)["code"] == 403


def test_several_errors_are_aggregated_in_brackets() -> None:
    job = valid_job("PyTorchJob", name="Bad")
    job["spec"]["pytorchReplicaSpecs"]["Master"]["replicas"] = 3
    resp = admit(KINDS["PyTorchJob"], request("CREATE", job))
    message = resp.status["message"]
    assert message.startswith("[") and message.endswith("]")
    assert "metadata.name" in message and "must be 1" in message


def test_deprecated_nproc_per_node_is_a_warning_not_a_denial() -> None:
    job = valid_job("PyTorchJob", elasticPolicy={"nProcPerNode": 2, "minReplicas": 1, "maxReplicas": 2})
    resp = admit(KINDS["PyTorchJob"], request("CREATE", job))
    assert resp.allowed
    assert resp.warnings == ("spec.elasticPolicy.nProcPerNode is deprecated, use spec.nprocPerNode instead",)


def test_warnings_ride_along_with_a_denial() -> None:
    job = valid_job("PyTorchJob", nprocPerNode="2", elasticPolicy={"nProcPerNode": 2})
    resp = admit(KINDS["PyTorchJob"], request("CREATE", job))
    assert not resp.allowed
    assert "must not be used with spec.nprocPerNode" in resp.status["message"]
    assert resp.warnings == ("spec.elasticPolicy.nProcPerNode is deprecated, use spec.nprocPerNode instead",)


@pytest.mark.parametrize("kind", ["TFJob", "XGBoostJob", "PaddleJob"])
def test_update_changing_managed_by_is_denied(kind: str) -> None:
    old = with_run_policy(valid_job(kind), managedBy="kubeflow.org/training-operator")
    new = with_run_policy(valid_job(kind), managedBy="kueue.x-k8s.io/multikueue")
    resp = admit(KINDS[kind], request("UPDATE", new, old))
    assert not resp.allowed
    assert resp.status["message"] == (
        'spec.runPolicy.managedBy: Invalid value: "kueue.x-k8s.io/multikueue": field is immutable'
    )


def test_update_changing_managed_by_of_a_pytorchjob_is_allowed_like_upstream() -> None:
    old = with_run_policy(valid_job("PyTorchJob"), managedBy="kubeflow.org/training-operator")
    new = with_run_policy(valid_job("PyTorchJob"), managedBy="kueue.x-k8s.io/multikueue")
    assert admit(KINDS["PyTorchJob"], request("UPDATE", new, old)).allowed


def test_update_changing_the_queue_is_denied_and_create_with_any_queue_is_not() -> None:
    old = with_run_policy(valid_job("JAXJob"), schedulingPolicy={"queue": "a"})
    new = with_run_policy(valid_job("JAXJob"), schedulingPolicy={"queue": "b"})
    assert admit(KINDS["JAXJob"], request("CREATE", new)).allowed
    resp = admit(KINDS["JAXJob"], request("UPDATE", new, old))
    assert not resp.allowed
    assert "spec.runPolicy.schedulingPolicy.queue" in resp.status["message"]


def test_update_without_old_object_is_a_bad_request() -> None:
    resp = admit(KINDS["TFJob"], request("UPDATE", valid_job("TFJob"), None))
    assert not resp.allowed
    assert resp.status["code"] == 400
    assert "oldObject" in resp.status["message"]


@pytest.mark.parametrize("operation", ["DELETE", "CONNECT"])
def test_delete_and_connect_are_allowed(operation: str) -> None:
    job = valid_job("TFJob", name="Not_Valid")
    assert admit(KINDS["TFJob"], request(operation, None, job)).allowed


def test_object_of_another_kind_is_a_bad_request_not_an_allow() -> None:
    resp = admit(KINDS["PyTorchJob"], request("CREATE", valid_job("TFJob")))
    assert not resp.allowed
    assert resp.status["code"] == 400
    assert "Kind=PyTorchJob" in resp.status["message"] and "'TFJob'" in resp.status["message"]


@pytest.mark.parametrize("obj", [None, "a string", 3, ["list"]])
def test_missing_or_non_object_is_a_bad_request(obj: Any) -> None:
    resp = admit(KINDS["TFJob"], request("CREATE", obj))
    assert not resp.allowed and resp.status["code"] == 400


def test_structurally_broken_spec_is_denied_with_field_errors_not_a_crash() -> None:
    job = valid_job("PyTorchJob")
    job["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = "many"
    resp = admit(KINDS["PyTorchJob"], request("CREATE", job))
    assert not resp.allowed and resp.status["code"] == 403
    assert "spec.pytorchReplicaSpecs[Worker].replicas" in resp.status["message"]


def test_mxjob_is_validated_with_the_1_7_rules_and_warned_about() -> None:
    job = valid_job("MXJob")
    job["spec"]["mxReplicaSpecs"]["Scheduler"] = replica("MXJob", container="main")
    resp = admit(KINDS["MXJob"], request("CREATE", job))
    assert not resp.allowed
    assert "must have at least one container with name mxnet" in resp.status["message"]
    assert resp.warnings == (DEPRECATED_KINDS["MXJob"],)


def test_admit_does_not_mutate_the_request_objects() -> None:
    old = with_run_policy(valid_job("TFJob"), managedBy="kubeflow.org/training-operator")
    new = valid_job("TFJob")
    snapshot = copy.deepcopy((new, old))
    admit(KINDS["TFJob"], request("UPDATE", new, old))
    assert (new, old) == snapshot
