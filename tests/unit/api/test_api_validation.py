# ruff: noqa: E501  (rows hold exact upstream messages; splitting them would hide what is compared)
"""Webhook validation per kind with upstream's exact messages (docs/upstream-behaviour.md#validation),
then kubetrain's additions.

Tables follow upstream's `pkg/webhooks/*/*_webhook_test.go` cases; each row is
(case id, raw job, expected error strings in order).
"""

from __future__ import annotations

from typing import Any

import pytest
from api_builders import container, deep, invalid_examples, job, replica, valid_job

from kubetrain.api.fielderrors import ErrorList
from kubetrain.api.validation import (
    aggregate,
    denied_message,
    invalid_message,
    validate,
    validate_raw,
    validate_raw_with_warnings,
)
from kubetrain.kinds.registry import REPLICA_SPEC_KINDS as KINDS

PT, TF, XGB, PD, JAX, MX = (
    KINDS[k] for k in ("PyTorchJob", "TFJob", "XGBoostJob", "PaddleJob", "JAXJob", "MXJob")
)
DNS_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
    "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
    "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
MANAGERS = 'supported values: "kubeflow.org/training-operator", "kueue.x-k8s.io/multikueue"'


def messages(raw: Any, old: Any = None) -> list[str]:
    _, _, errors = validate_raw(raw, old, kinds=KINDS)
    return list(errors.messages())


def C(path: str) -> str:  # reads like the Go helper building container paths
    return f"{path}.template.spec.containers"


CREATE_CASES: list[tuple[str, dict[str, Any], list[str]]] = [
    # ---- every kind: name ----
    *[(f"{k}-valid", valid_job(k), []) for k in sorted(KINDS)],
    *[
        (
            f"{k}-name-0-test",
            valid_job(k, name="0-test"),
            [f'metadata.name: Invalid value: "0-test": should match: {DNS_MSG}'],
        )
        for k in sorted(KINDS)
    ],
    (
        "name-too-long",
        valid_job("JAXJob", name="a" * 64),
        [f'metadata.name: Invalid value: "{"a" * 64}": should match: must be no more than 63 characters'],
    ),
    (
        "name-missing",
        {**valid_job("JAXJob"), "metadata": {}},
        [f'metadata.name: Invalid value: "": should match: {DNS_MSG}'],
    ),
    # ---- PyTorch (pytorchjob_webhook_test.go) ----
    (
        "pytorch-no-containers",
        job("PyTorchJob", {"Worker": replica(PT, containers=[])}),
        [
            f"{C('spec.pytorchReplicaSpecs[Worker]')}: Required value: must be specified",
            f"{C('spec.pytorchReplicaSpecs[Worker]')}: Required value: must have at least one container with name pytorch",
        ],
    ),
    (
        "pytorch-image-empty",
        job("PyTorchJob", {"Worker": replica(PT, containers=[container("pytorch", image="")])}),
        [f"{C('spec.pytorchReplicaSpecs[Worker]')}[0].image: Required value: must be required"],
    ),
    (
        "pytorch-default-container-missing",
        job("PyTorchJob", {"Worker": replica(PT, containers=[container("main")])}),
        [
            f"{C('spec.pytorchReplicaSpecs[Worker]')}: Required value: must have at least one container with name pytorch"
        ],
    ),
    (
        "pytorch-master-replicas-2",
        job("PyTorchJob", {"Master": replica(PT, 2)}),
        ["spec.pytorchReplicaSpecs[Master].replicas: Forbidden: must be 1"],
    ),
    (
        "pytorch-master-replicas-unset",
        job("PyTorchJob", {"Master": replica(PT, None)}),
        ["spec.pytorchReplicaSpecs[Master].replicas: Forbidden: must be 1"],
    ),
    (
        "pytorch-worker-replicas-0",
        job("PyTorchJob", {"Worker": replica(PT, 0)}),
        ["spec.pytorchReplicaSpecs[Worker].replicas: Forbidden: must be at least 1"],
    ),
    (
        "pytorch-worker-replicas-negative-reported-once",
        job("PyTorchJob", {"Worker": replica(PT, -3)}),
        ["spec.pytorchReplicaSpecs[Worker].replicas: Forbidden: must be at least 1"],
    ),
    (
        "pytorch-lower-case-type",
        job("PyTorchJob", {"worker": replica(PT, 2)}),
        [
            'spec.pytorchReplicaSpecs[worker]: Unsupported value: "worker": supported values: "Master", "Worker"'
        ],
    ),
    (
        "pytorch-elastic-without-worker",
        job("PyTorchJob", {"Master": replica(PT)}, elasticPolicy={}),
        ["spec.pytorchReplicaSpecs[Worker]: Required value: must be configured if elastic policy is used"],
    ),
    (
        "pytorch-both-nproc",
        job("PyTorchJob", {"Worker": replica(PT)}, nprocPerNode="1", elasticPolicy={"nProcPerNode": 1}),
        ["spec.elasticPolicy.nProcPerNode: Forbidden: must not be used with spec.nprocPerNode"],
    ),
    (
        "pytorch-managed-by-malformed",
        valid_job("PyTorchJob")
        | {"spec": valid_job("PyTorchJob")["spec"] | {"runPolicy": {"managedBy": "other"}}},
        [f'spec.runPolicy.managedBy: Unsupported value: "other": {MANAGERS}'],
    ),
    (
        "pytorch-missing-map",
        job("PyTorchJob", None),
        ["spec.pytorchReplicaSpecs: Required value: must be required"],
    ),
    (
        "pytorch-null-replica-spec",
        job("PyTorchJob", {"Worker": None}),
        [
            f"{C('spec.pytorchReplicaSpecs[Worker]')}: Required value: must be specified",
            f"{C('spec.pytorchReplicaSpecs[Worker]')}: Required value: must have at least one container with name pytorch",
        ],
    ),
    # ---- TF (tfjob_webhook_test.go) ----
    (
        "tf-chief-and-master",
        job("TFJob", {"Chief": replica(TF), "Master": replica(TF)}),
        ["spec.tfReplicaSpecs: Forbidden: must not have more than 1 Chief or Master role"],
    ),
    ("tf-lower-case-types-accepted", job("TFJob", {"ps": replica(TF), "worker": replica(TF, 2)}), []),
    (
        "tf-managed-by-unsupported",
        job("TFJob", {"Worker": replica(TF)}, runPolicy={"managedBy": ""}),
        [f'spec.runPolicy.managedBy: Unsupported value: "": {MANAGERS}'],
    ),
    (
        "tf-managed-by-multikueue",
        job("TFJob", {"Worker": replica(TF)}, runPolicy={"managedBy": "kueue.x-k8s.io/multikueue"}),
        [],
    ),
    # ---- XGBoost (xgboostjob_webhook_test.go) ----
    (
        "xgboost-no-master",
        job("XGBoostJob", {"Worker": replica(XGB)}),
        ["spec.xgbReplicaSpecs[Master]: Required value: must be present"],
    ),
    (
        "xgboost-master-replicas-2",
        job("XGBoostJob", {"Master": replica(XGB, 2)}),
        ["spec.xgbReplicaSpecs[Master].replicas: Forbidden: must be 1"],
    ),
    (
        "xgboost-unknown-type",
        job("XGBoostJob", {"Master": replica(XGB), "PS": replica(XGB)}),
        ['spec.xgbReplicaSpecs[PS]: Unsupported value: "PS": supported values: "Master", "Worker"'],
    ),
    (
        "xgboost-worker-replicas-0-accepted",
        job("XGBoostJob", {"Master": replica(XGB), "Worker": replica(XGB, 0)}),
        [],
    ),
    # ---- Paddle (paddlepaddle_webhook_test.go) ----
    (
        "paddle-default-container-quoted",
        job("PaddleJob", {"Worker": replica(PD, containers=[container("main")])}),
        [
            f'{C("spec.paddleReplicaSpecs[Worker]")}: Required value: must have at least one container with name "paddle"'
        ],
    ),
    # ---- JAX (jaxjob_webhook_test.go) ----
    (
        "jax-master-unsupported",
        job("JAXJob", {"Master": replica(JAX)}),
        ['spec.jaxReplicaSpecs[Master]: Unsupported value: "Master": supported values: "Worker"'],
    ),
    (
        "jax-managed-by-not-checked",
        job("JAXJob", {"Worker": replica(JAX)}, runPolicy={"managedBy": "other"}),
        [],
    ),
    # ---- MXJob (≤1.7 rules) ----
    (
        "mx-no-mxnet-container",
        job("MXJob", {"Worker": replica(MX, containers=[container("main")])}),
        [
            f"{C('spec.mxReplicaSpecs[Worker]')}: Required value: must have at least one container with name mxnet"
        ],
    ),
    (
        "mx-two-schedulers",
        job("MXJob", {"Scheduler": replica(MX, 2), "Worker": replica(MX)}),
        ["spec.mxReplicaSpecs[Scheduler].replicas: Forbidden: must not have more than 1 Scheduler"],
    ),
    # ---- kubetrain additions ----
    (
        "negatives",
        job(
            "TFJob",
            {"Worker": replica(TF, -1)},
            runPolicy={
                "backoffLimit": -1,
                "activeDeadlineSeconds": -1,
                "ttlSecondsAfterFinished": -1,
                "schedulingPolicy": {"minAvailable": -1, "scheduleTimeoutSeconds": -1},
            },
        ),
        [
            "spec.tfReplicaSpecs[Worker].replicas: Invalid value: -1: must be greater than or equal to 0",
            "spec.runPolicy.backoffLimit: Invalid value: -1: must be greater than or equal to 0",
            "spec.runPolicy.activeDeadlineSeconds: Invalid value: -1: must be greater than or equal to 0",
            "spec.runPolicy.ttlSecondsAfterFinished: Invalid value: -1: must be greater than or equal to 0",
            "spec.runPolicy.schedulingPolicy.minAvailable: Invalid value: -1: must be greater than or equal to 0",
            "spec.runPolicy.schedulingPolicy.scheduleTimeoutSeconds: Invalid value: -1: must be greater than or equal to 0",
        ],
    ),
    (
        "empty-map",
        job("JAXJob", {}),
        ["spec.jaxReplicaSpecs: Required value: must have at least one replica type"],
    ),
    (
        "mx-unknown-type",
        job("MXJob", {"Worker": replica(MX), "Launcher": replica(MX)}),
        [
            'spec.mxReplicaSpecs[Launcher]: Unsupported value: "Launcher": supported values: "Scheduler", '
            '"Server", "Worker", "TunerTracker", "TunerServer", "Tuner"'
        ],
    ),
    (
        "container-shapes",
        job(
            "JAXJob",
            {"Worker": replica(JAX, containers=[container("jax"), 5, {"name": 7, "image": ["x"]}])},
        ),
        [
            f'{C("spec.jaxReplicaSpecs[Worker]")}[1]: Invalid value: "number": must be of type object',
            f'{C("spec.jaxReplicaSpecs[Worker]")}[2].name: Invalid value: "number": must be of type string',
            f'{C("spec.jaxReplicaSpecs[Worker]")}[2].image: Invalid value: "array": must be of type string',
        ],
    ),
    (
        "template-spec-not-object",
        job("JAXJob", {"Worker": {"template": {"spec": []}}}),
        [
            f"{C('spec.jaxReplicaSpecs[Worker]')}: Required value: must be specified",
            f"{C('spec.jaxReplicaSpecs[Worker]')}: Required value: must have at least one container with name jax",
            'spec.jaxReplicaSpecs[Worker].template.spec: Invalid value: "array": must be of type object',
        ],
    ),
    (
        "containers-not-list",
        job("JAXJob", {"Worker": {"template": {"spec": {"containers": {"name": "jax"}}}}}),
        [
            f"{C('spec.jaxReplicaSpecs[Worker]')}: Required value: must be specified",
            f"{C('spec.jaxReplicaSpecs[Worker]')}: Required value: must have at least one container with name jax",
        ],
    ),
    (
        "elastic-bounds",
        job(
            "PyTorchJob",
            {"Worker": replica(PT, 2)},
            elasticPolicy={"minReplicas": 5, "maxReplicas": 3, "rdzvPort": 70000, "rdzvBackend": "zk"},
        ),
        [
            "spec.elasticPolicy.minReplicas: Invalid value: 5: must be less than or equal to spec.elasticPolicy.maxReplicas",
            'spec.elasticPolicy.rdzvBackend: Unsupported value: "zk": supported values: "c10d", "etcd", "etcd-v2"',
            "spec.elasticPolicy.rdzvPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
        ],
    ),
    ("nproc-values-accepted", job("PyTorchJob", {"Worker": replica(PT)}, nprocPerNode="gpu"), []),
    (
        "mx-job-mode",
        job("MXJob", {"Worker": replica(MX)}, jobMode="MXServe"),
        ['spec.jobMode: Unsupported value: "MXServe": supported values: "MXTrain", "MXTune"'],
    ),
    (
        "elastic-max-drives-pod-name-length",
        job("PyTorchJob", {"Worker": replica(PT, 1)}, name="j" * 54, elasticPolicy={"maxReplicas": 11}),
        [
            f'metadata.name: Invalid value: "{"j" * 54}": must be no more than 53 characters: the pod and service '
            f'name "{"j" * 54}-worker-10" must be no more than 63 characters'
        ],
    ),
    ("pod-name-exactly-63", valid_job("JAXJob", name="j" * 54), []),
]


@pytest.mark.parametrize(("case", "raw", "want"), CREATE_CASES, ids=[c[0] for c in CREATE_CASES])
def test_create(case: str, raw: dict[str, Any], want: list[str]) -> None:
    assert messages(deep(raw)) == want


def test_generate_name_is_checked_instead_of_an_empty_name() -> None:
    raw = valid_job("JAXJob")
    raw["metadata"] = {"generateName": "jax-"}
    assert messages(raw) == []
    raw["metadata"] = {"generateName": "Jax-"}
    assert messages(raw) == [f'metadata.generateName: Invalid value: "Jax-": should match: {DNS_MSG}']


def test_nproc_deprecation_is_a_warning() -> None:
    raw = job("PyTorchJob", {"Worker": replica(PT)}, elasticPolicy={"nProcPerNode": 2})
    _, _, result = validate_raw_with_warnings(raw, kinds=KINDS)
    assert not result.errors
    assert result.warnings == ["spec.elasticPolicy.nProcPerNode is deprecated, use spec.nprocPerNode instead"]


# ---- updates ------------------------------------------------------------------------------------


def _with_run_policy(kind: str, **policy: Any) -> dict[str, Any]:
    raw = valid_job(kind)
    raw["spec"]["runPolicy"] = policy
    return raw


@pytest.mark.parametrize(
    ("kind", "want"),
    [
        (
            "TFJob",
            ['spec.runPolicy.managedBy: Invalid value: "kueue.x-k8s.io/multikueue": field is immutable'],
        ),
        (
            "XGBoostJob",
            ['spec.runPolicy.managedBy: Invalid value: "kueue.x-k8s.io/multikueue": field is immutable'],
        ),
        (
            "PaddleJob",
            ['spec.runPolicy.managedBy: Invalid value: "kueue.x-k8s.io/multikueue": field is immutable'],
        ),
        # upstream compares the new object with itself (docs/upstream-behaviour.md#quirks-kept)
        ("PyTorchJob", []),
        ("JAXJob", []),  # no managedBy check at all
        ("MXJob", []),
    ],
)
def test_managed_by_update(kind: str, want: list[str]) -> None:
    old = _with_run_policy(kind, managedBy="kubeflow.org/training-operator")
    new = _with_run_policy(kind, managedBy="kueue.x-k8s.io/multikueue")
    assert messages(new, old) == want


def test_managed_by_removed_prints_null() -> None:
    old = _with_run_policy("TFJob", managedBy="kubeflow.org/training-operator")
    assert messages(_with_run_policy("TFJob"), old) == [
        'spec.runPolicy.managedBy: Invalid value: "null": field is immutable'
    ]


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_queue_is_immutable_once_set(kind: str) -> None:
    old = _with_run_policy(kind, schedulingPolicy={"queue": "a"})
    changed = _with_run_policy(kind, schedulingPolicy={"queue": "b"})
    want = [
        'spec.runPolicy.schedulingPolicy.queue: Invalid value: "string": spec.runPolicy.schedulingPolicy.queue is immutable'
    ]
    assert messages(changed, old) == want
    assert messages(deep(old), old) == []
    # A CEL transition rule only fires when both objects have the field.
    assert messages(changed, _with_run_policy(kind)) == []
    assert messages(_with_run_policy(kind), old) == []


def test_old_object_of_another_kind_is_ignored() -> None:
    old = _with_run_policy("TFJob", schedulingPolicy={"queue": "a"})
    assert messages(_with_run_policy("JAXJob", schedulingPolicy={"queue": "b"}), old) == []


# ---- messages -----------------------------------------------------------------------------------


def test_aggregate_formats_and_drops_duplicates() -> None:
    _, info, errors = validate_raw(job("PyTorchJob", {"Master": replica(PT, 2)}, name="0-x"), kinds=KINDS)
    assert info is not None
    doubled = ErrorList([*errors, *errors])
    text = aggregate(doubled)
    assert text.startswith("[metadata.name: Invalid value") and text.endswith(
        "replicas: Forbidden: must be 1]"
    )
    assert text == aggregate(errors)
    assert invalid_message(info, "0-x", errors) == f'PyTorchJob.kubeflow.org "0-x" is invalid: {text}'
    assert denied_message(info, errors) == (
        f'admission webhook "validator.pytorchjob.training-operator.kubeflow.org" denied the request: {text}'
    )


def test_validate_matches_validate_raw() -> None:
    raw = job("PyTorchJob", {"Master": replica(PT, 2)})
    parsed, info, errors = validate_raw(deep(raw), kinds=KINDS)
    assert parsed is not None and info is not None
    assert validate(parsed, info) == errors


def test_codec_errors_come_first() -> None:
    raw = job("JAXJob", {"Worker": {**replica(JAX), "replicas": "two"}})
    assert messages(raw) == [
        'spec.jaxReplicaSpecs[Worker].replicas: Invalid value: "string": must be of type integer'
    ]


INVALID = invalid_examples()


def test_there_are_invalid_examples() -> None:
    assert len(INVALID) >= 20


@pytest.mark.parametrize(("name", "expect", "doc"), INVALID, ids=[n for n, _, _ in INVALID])
def test_invalid_examples_produce_their_expected_message(name: str, expect: str, doc: Any) -> None:
    _, _, errors = validate_raw(doc, kinds=KINDS)
    assert aggregate(errors) == expect
