"""The generated CRDs: committed files match the generator, and the schemas are structural."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from api_builders import REPO

from kubetrain.api import crds
from kubetrain.api.jobs import load_documents
from kubetrain.api.kinds import KindInfo
from kubetrain.api.schema import iter_nodes
from kubetrain.api.types import QUEUE_IMMUTABLE
from kubetrain.kinds import crds as kind_crds
from kubetrain.kinds.registry import REPLICA_SPEC_KINDS as KINDS

CRD_DIR = REPO / "manifests" / "crds"
GENERATED = crds.generate(KINDS.values())
BY_KIND = {info.kind: yaml.safe_load(GENERATED[crds.file_name(info)]) for info in KINDS.values()}
KIND_IDS = sorted(KINDS)


def openapi(kind: str) -> dict[str, Any]:
    schema: dict[str, Any] = BY_KIND[kind]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def test_one_file_per_kind_with_upstream_names() -> None:
    assert sorted(GENERATED) == sorted(f"kubeflow.org_{info.plural}.yaml" for info in KINDS.values())


@pytest.mark.parametrize("name", sorted(GENERATED))
def test_committed_files_match_the_generator_byte_for_byte(name: str) -> None:
    path = CRD_DIR / name
    assert path.is_file(), f"missing {path}: run python -m kubetrain.kinds.crds --write manifests/crds"
    assert path.read_text(encoding="utf-8") == GENERATED[name], (
        "stale: run python -m kubetrain.kinds.crds --write manifests/crds"
    )


def test_generation_is_deterministic() -> None:
    assert crds.generate(KINDS.values()) == GENERATED


def test_check_mode_reports_drift(tmp_path: Path) -> None:
    assert kind_crds.main(["--write", str(tmp_path)]) == 0
    assert kind_crds.main(["--check", str(tmp_path)]) == 0
    victim = tmp_path / "kubeflow.org_tfjobs.yaml"
    victim.write_text(victim.read_text() + "# edited\n")
    assert kind_crds.main(["--check", str(tmp_path)]) == 1
    assert crds.drift(tmp_path, kind_crds.generate_all()) == ["kubeflow.org_tfjobs.yaml"]


@pytest.mark.parametrize("kind", KIND_IDS)
def test_names_and_versions(kind: str) -> None:
    info = KINDS[kind]
    crd = BY_KIND[kind]
    assert crd["apiVersion"] == "apiextensions.k8s.io/v1" and crd["kind"] == "CustomResourceDefinition"
    assert crd["metadata"]["name"] == f"{info.plural}.kubeflow.org"
    assert crd["spec"]["names"] == {
        "kind": kind,
        "listKind": f"{kind}List",
        "plural": info.plural,
        "singular": info.singular,
    }  # no shortNames, no categories (docs/upstream-behaviour.md#api-surface)
    assert crd["spec"]["scope"] == "Namespaced"
    (version,) = crd["spec"]["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1", True, True)
    assert version["additionalPrinterColumns"] == [
        {"jsonPath": ".status.conditions[-1:].type", "name": "State", "type": "string"},
        {"jsonPath": ".metadata.creationTimestamp", "name": "Age", "type": "date"},
    ]


@pytest.mark.parametrize("kind", KIND_IDS)
def test_subresources(kind: str) -> None:
    info = KINDS[kind]
    sub = BY_KIND[kind]["spec"]["versions"][0]["subresources"]
    assert sub["status"] == {}
    if kind in ("PyTorchJob", "PaddleJob", "JAXJob"):
        assert sub["scale"] == {
            "specReplicasPath": f".spec.{info.replica_specs_field}.Worker.replicas",
            "statusReplicasPath": ".status.replicaStatuses.Worker.active",
            "labelSelectorPath": ".status.replicaStatuses.Worker.selector",
        }
    else:
        assert "scale" not in sub


@pytest.mark.parametrize("kind", KIND_IDS)
def test_schema_is_structural(kind: str) -> None:
    for path, node in iter_nodes(openapi(kind)):
        typed = (
            "type" in node
            or node.get("x-kubernetes-int-or-string")
            or node.get("x-kubernetes-preserve-unknown-fields")
        )
        assert typed, f"{kind}: schema node {path} has no type"
        if node.get("type") == "integer":
            assert node.get("format") in ("int32", "int64"), path
        if node.get("type") == "array":
            assert isinstance(node.get("items"), dict), path
        for name in node.get("required", []):
            assert name in node.get("properties", {}), f"{path}: required {name} is not a property"
        assert not ("properties" in node and "additionalProperties" in node), path


@pytest.mark.parametrize("kind", KIND_IDS)
def test_spec_details(kind: str) -> None:
    info = KINDS[kind]
    spec = openapi(kind)["properties"]["spec"]
    assert spec["required"] == [info.replica_specs_field]
    replica = spec["properties"][info.replica_specs_field]["additionalProperties"]
    assert replica["properties"]["replicas"] == {"type": "integer", "format": "int32"}
    template = replica["properties"]["template"]
    assert template["x-kubernetes-preserve-unknown-fields"] is True
    assert template["properties"]["spec"]["required"] == ["containers"]
    assert template["properties"]["spec"]["properties"]["containers"]["items"]["required"] == ["name"]
    run_policy = spec["properties"]["runPolicy"]["properties"]
    assert run_policy["suspend"] == {"type": "boolean", "default": False}
    assert run_policy["activeDeadlineSeconds"]["format"] == "int64"
    queue = run_policy["schedulingPolicy"]["properties"]["queue"]
    assert queue["x-kubernetes-validations"] == [{"message": QUEUE_IMMUTABLE, "rule": "self == oldSelf"}]
    min_resources = run_policy["schedulingPolicy"]["properties"]["minResources"]["additionalProperties"]
    assert min_resources["x-kubernetes-int-or-string"] is True
    conditions = openapi(kind)["properties"]["status"]["properties"]["conditions"]["items"]
    assert conditions["required"] == ["status", "type"]


def test_elastic_metrics_are_free_form_objects() -> None:
    elastic = openapi("PyTorchJob")["properties"]["spec"]["properties"]["elasticPolicy"]["properties"]
    assert elastic["metrics"]["items"]["x-kubernetes-preserve-unknown-fields"] is True
    assert elastic["nProcPerNode"]["format"] == "int32"
    assert openapi("PyTorchJob")["properties"]["spec"]["properties"]["nprocPerNode"] == {"type": "string"}


def test_files_are_single_yaml_documents() -> None:
    for name, text in GENERATED.items():
        assert text.startswith("---\n"), name
        assert len(load_documents(text)) == 1


def test_a_later_kind_gets_its_crd_by_registration() -> None:
    """The generator is data-driven: a new KindInfo (e.g. MPIJob) needs no generator change."""
    base = KINDS["TFJob"]
    extra = KindInfo(
        **{
            **{f: getattr(base, f) for f in base.__dataclass_fields__},
            "kind": "ChainerJob",
            "plural": "chainerjobs",
            "singular": "chainerjob",
            "version": "v1alpha1",
            "short_names": ("chj",),
            "categories": ("all",),
        }
    )
    files = crds.generate([extra])
    crd = yaml.safe_load(files["kubeflow.org_chainerjobs.yaml"])
    assert crd["spec"]["names"]["shortNames"] == ["chj"] and crd["spec"]["names"]["categories"] == ["all"]
    assert crd["spec"]["versions"][0]["name"] == "v1alpha1"
