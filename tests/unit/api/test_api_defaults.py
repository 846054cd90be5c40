"""In-memory defaults per kind (docs/upstream-behaviour.md#defaults): table-driven, plus copy-on-write
and idempotence."""

from __future__ import annotations

from typing import Any

import pytest
from api_builders import container, deep, example_documents, job, replica, valid_job
from hypothesis import given, settings
from hypothesis import strategies as st
from test_api_validation_fuzz import mutated_jobs

from kubetrain.api.defaults import apply_defaults, with_default_port
from kubetrain.api.jobs import job_to_dict, parse_job
from kubetrain.api.kinds import KindInfo
from kubetrain.api.types import TrainingJob
from kubetrain.frameworks.paddle import PaddleJobSpec
from kubetrain.frameworks.pytorch import PyTorchJobSpec
from kubetrain.frameworks.tensorflow import TFJobSpec
from kubetrain.kinds.registry import REPLICA_SPEC_KINDS as KINDS


def defaulted(raw: dict[str, Any]) -> tuple[TrainingJob, KindInfo]:
    parsed, info, errors = parse_job(raw, KINDS)
    assert parsed is not None and info is not None and not errors
    return apply_defaults(parsed, info), info


# kind, default restartPolicy, default port name, default port
KIND_DEFAULTS = [
    ("TFJob", "Never", "tfjob-port", 2222),
    ("PyTorchJob", "OnFailure", "pytorchjob-port", 23456),
    ("XGBoostJob", "Never", "xgboostjob-port", 9999),
    ("PaddleJob", "OnFailure", "master", 36543),
    ("JAXJob", "Never", "jaxjob-port", 6666),
    ("MXJob", "Never", "mxjob-port", 9091),
]


@pytest.mark.parametrize(("kind", "restart", "port_name", "port"), KIND_DEFAULTS)
def test_replica_defaults_per_kind(kind: str, restart: str, port_name: str, port: int) -> None:
    info = KINDS[kind]
    raw = job(kind, {"worker": replica(info, replicas=None)})
    out, _ = defaulted(raw)
    assert list(out.replica_specs) == ["Worker"]  # key normalised to canonical casing
    spec = out.replica_specs["Worker"]
    assert spec is not None
    assert spec.replicas == 1
    assert spec.restart_policy == restart
    assert spec.template is not None
    assert spec.template["spec"]["containers"][0]["ports"] == [{"name": port_name, "containerPort": port}]
    assert out.run_policy.clean_pod_policy == "None"


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_user_values_are_kept(kind: str) -> None:
    info = KINDS[kind]
    raw = job(kind, {"Worker": replica(info, 3, restart="ExitCode")}, runPolicy={"cleanPodPolicy": "All"})
    out, _ = defaulted(raw)
    spec = out.replica_specs["Worker"]
    assert spec is not None and spec.replicas == 3 and spec.restart_policy == "ExitCode"
    assert out.run_policy.clean_pod_policy == "All"


def test_empty_strings_count_as_unset() -> None:
    info = KINDS["PyTorchJob"]
    raw = job("PyTorchJob", {"Worker": replica(info, restart="")}, runPolicy={"cleanPodPolicy": ""})
    out, _ = defaulted(raw)
    spec = out.replica_specs["Worker"]
    assert spec is not None and spec.restart_policy == "OnFailure"
    assert out.run_policy.clean_pod_policy == "None"


def test_port_goes_to_the_default_container_not_container_zero() -> None:
    info = KINDS["PyTorchJob"]
    containers = [container("sidecar"), container("pytorch")]
    out, _ = defaulted(job("PyTorchJob", {"Worker": replica(info, containers=containers)}))
    spec = out.replica_specs["Worker"]
    assert spec is not None and spec.template is not None
    got = spec.template["spec"]["containers"]
    assert "ports" not in got[0]
    assert got[1]["ports"] == [{"name": "pytorchjob-port", "containerPort": 23456}]


def test_port_goes_to_container_zero_without_default_container() -> None:
    info = KINDS["TFJob"]
    containers = [container("main", ports=[{"containerPort": 80}]), container("other")]
    out, _ = defaulted(job("TFJob", {"Worker": replica(info, containers=containers)}))
    spec = out.replica_specs["Worker"]
    assert spec is not None and spec.template is not None
    got = spec.template["spec"]["containers"]
    assert got[0]["ports"] == [{"containerPort": 80}, {"name": "tfjob-port", "containerPort": 2222}]
    assert "ports" not in got[1]


def test_existing_port_with_the_default_name_keeps_its_number() -> None:
    info = KINDS["XGBoostJob"]
    containers = [container("xgboost", ports=[{"name": "xgboostjob-port", "containerPort": 9991}])]
    template = {"spec": {"containers": containers}}
    assert with_default_port(template, info) is template


@pytest.mark.parametrize(
    "template", [None, "x", {"spec": 3}, {"spec": {"containers": {}}}, {"spec": {"containers": [5]}}]
)
def test_malformed_templates_are_left_alone(template: Any) -> None:
    assert with_default_port(template, KINDS["JAXJob"]) is template


def test_tf_success_policy_defaults_to_empty() -> None:
    out, _ = defaulted(valid_job("TFJob"))
    assert isinstance(out.spec, TFJobSpec) and out.spec.success_policy == ""


@pytest.mark.parametrize(
    ("extra", "want"),
    [
        ({}, "auto"),
        ({"nprocPerNode": "4"}, "4"),
        ({"elasticPolicy": {"minReplicas": 1}}, "auto"),
        ({"elasticPolicy": {"nProcPerNode": 2}}, None),  # deprecated field in use: left unset
    ],
)
def test_pytorch_nproc_per_node(extra: dict[str, Any], want: str | None) -> None:
    info = KINDS["PyTorchJob"]
    out, _ = defaulted(job("PyTorchJob", {"Worker": replica(info, 2)}, **extra))
    assert isinstance(out.spec, PyTorchJobSpec) and out.spec.nproc_per_node == want


@pytest.mark.parametrize("kind", ["PyTorchJob", "PaddleJob"])
@pytest.mark.parametrize(
    ("policy", "want"),
    [
        ({"minReplicas": 2, "maxReplicas": 5}, (2, 5)),
        ({"maxReplicas": 5}, (5, 5)),
        ({"minReplicas": 2}, (2, 2)),
        ({}, (3, 3)),  # both from Worker replicas
    ],
)
def test_elastic_min_max(kind: str, policy: dict[str, int], want: tuple[int, int]) -> None:
    info = KINDS[kind]
    out, _ = defaulted(job(kind, {"Worker": replica(info, 3)}, elasticPolicy=policy))
    assert isinstance(out.spec, PyTorchJobSpec | PaddleJobSpec) and out.spec.elastic_policy is not None
    got = (out.spec.elastic_policy.min_replicas, out.spec.elastic_policy.max_replicas)
    assert got == want


def test_duplicate_keys_first_one_wins() -> None:
    info = KINDS["TFJob"]
    raw = job("TFJob", {"worker": replica(info, 2), "Worker": replica(info, 5)})
    out, _ = defaulted(raw)
    spec = out.replica_specs["Worker"]
    assert list(out.replica_specs) == ["Worker"] and spec is not None and spec.replicas == 2


def test_no_spec_is_fine() -> None:
    parsed, info, _ = parse_job(
        {"apiVersion": "kubeflow.org/v1", "kind": "JAXJob", "metadata": {"name": "x"}}, KINDS
    )
    assert parsed is not None and info is not None
    assert apply_defaults(parsed, info) == parsed


def test_input_is_not_mutated_and_unchanged_subtrees_are_shared() -> None:
    info = KINDS["PyTorchJob"]
    pinned = container("pytorch", ports=[{"name": "pytorchjob-port", "containerPort": 1}])
    raw = job("PyTorchJob", {"Master": replica(info, containers=[pinned]), "Worker": replica(info, 2)})
    parsed, _, _ = parse_job(raw, KINDS)
    assert parsed is not None
    before = job_to_dict(parsed)
    out = apply_defaults(parsed, info)
    assert job_to_dict(parsed) == before
    assert out.metadata is parsed.metadata
    master_in, master_out = parsed.replica_specs["Master"], out.replica_specs["Master"]
    assert master_in is not None and master_out is not None
    assert master_out.template is master_in.template  # nothing to add: shared
    worker_in, worker_out = parsed.replica_specs["Worker"], out.replica_specs["Worker"]
    assert worker_in is not None and worker_out is not None
    assert worker_out.template is not worker_in.template  # port added: copied


@pytest.mark.parametrize(("name", "doc"), example_documents(), ids=[n for n, _ in example_documents()])
def test_examples_default_idempotently(name: str, doc: Any) -> None:
    once, info = defaulted(deep(doc))
    assert apply_defaults(once, info) == once


@settings(max_examples=200, deadline=None)
@given(mutated_jobs(), st.booleans())
def test_defaults_idempotent_and_pure_on_any_decodable_job(case: tuple[Any, Any], twice: bool) -> None:
    raw, _ = case
    parsed, info, _ = parse_job(raw, KINDS)
    if parsed is None or info is None:
        return
    before = job_to_dict(parsed)
    once = apply_defaults(parsed, info)
    assert job_to_dict(parsed) == before
    again = apply_defaults(once, info)
    assert again == once
    assert job_to_dict(again) == job_to_dict(once)
