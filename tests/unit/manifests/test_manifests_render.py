"""The kustomize tree renders, matches `kubectl kustomize`, and every object passes its schema."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from kustomize_lite import (
    UnsupportedKustomization,
    identity,
    image_name,
    load_yaml,
    render,
    schema_errors,
    strategic_merge,
)

from kubetrain.kinds import crds as kind_crds

REPO = Path(__file__).resolve().parents[3]
MANIFESTS = REPO / "manifests"
OVERLAYS = ["cluster-wide", "single-namespace"]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_rendered_object_passes_its_kubernetes_schema(overlay: str) -> None:
    objects = render(MANIFESTS / "overlays" / overlay)
    assert len(objects) >= 15
    problems = {identity(o): schema_errors(o) for o in objects}
    assert {k: v for k, v in problems.items() if v} == {}


def test_the_schema_check_catches_what_the_api_server_would_refuse() -> None:
    deployment = yaml.safe_load((MANIFESTS / "base" / "deployment.yaml").read_text())
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    container["livenessProbe"]["httpGet"]["paht"] = "/healthz"
    container["resources"]["requests"] = "lots"
    del container["name"]
    deployment["spec"]["replicas"] = "1"
    errors = "\n".join(schema_errors(deployment))
    assert "unknown field 'paht'" in errors
    assert "requests: expected a map" in errors
    assert "missing required field 'name'" in errors
    assert "replicas: expected an integer" in errors
    assert schema_errors({"apiVersion": "example.com/v1", "kind": "Thing"})


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_namespaced_objects_land_in_kubeflow_and_cluster_objects_have_no_namespace(overlay: str) -> None:
    for obj in render(MANIFESTS / "overlays" / overlay):
        namespace = obj["metadata"].get("namespace")
        if obj["kind"] in (
            "Namespace",
            "ClusterRole",
            "ClusterRoleBinding",
            "CustomResourceDefinition",
            "ValidatingWebhookConfiguration",
        ):
            assert namespace is None, identity(obj)
        else:
            assert namespace == "kubeflow", identity(obj)
        assert obj["metadata"]["labels"]["app.kubernetes.io/part-of"] == "kubetrain"


def test_crds_in_the_tree_are_exactly_the_generated_ones() -> None:
    generated = {name: yaml.safe_load(text) for name, text in kind_crds.generate_all().items()}
    listed = load_yaml(MANIFESTS / "crds" / "kustomization.yaml")[0]["resources"]
    on_disk = sorted(p.name for p in (MANIFESTS / "crds").glob("*.yaml") if p.name != "kustomization.yaml")
    hint = "list every generated CRD file in manifests/crds/kustomization.yaml"
    assert sorted(listed) == sorted(generated), hint
    assert set(on_disk) >= set(listed), "run: python -m kubetrain.kinds.crds --write manifests/crds"
    rendered = {
        o["metadata"]["name"]: o
        for o in render(MANIFESTS / "overlays" / "cluster-wide")
        if o["kind"] == "CustomResourceDefinition"
    }
    assert set(rendered) == {c["metadata"]["name"] for c in generated.values()}
    for crd in generated.values():
        got = dict(rendered[crd["metadata"]["name"]])
        got["metadata"] = {k: v for k, v in got["metadata"].items() if k != "labels"}
        assert got == crd


def kubectl_kustomize(directory: Path) -> list[dict]:
    out = subprocess.run(
        ["kubectl", "kustomize", str(directory)], check=True, capture_output=True, text=True, timeout=120
    ).stdout
    return [d for d in yaml.safe_load_all(out) if d is not None]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_in_process_renderer_agrees_with_kubectl_kustomize(overlay: str) -> None:
    if shutil.which("kubectl") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("kubectl is required in CI to check the kustomize tree")
        pytest.skip("kubectl not installed")
    ours = {identity(o): o for o in render(MANIFESTS / "overlays" / overlay)}
    theirs = {identity(o): o for o in kubectl_kustomize(MANIFESTS / "overlays" / overlay)}
    assert sorted(ours) == sorted(theirs)
    for key, obj in theirs.items():
        assert ours[key] == obj, key


def with_launcher_rbac(tmp_path: Path) -> Path:
    """A user's overlay: cluster-wide plus the opt-in launcher-rbac component (relative paths,
    as kustomize refuses absolute ones)."""
    rel = Path(os.path.relpath(MANIFESTS, tmp_path))
    (tmp_path / "kustomization.yaml").write_text(
        f"resources:\n- {rel / 'overlays' / 'cluster-wide'}\n"
        f"components:\n- {rel / 'components' / 'launcher-rbac'}\n"
    )
    return tmp_path


def test_launcher_rbac_component_renders_and_matches_kubectl(tmp_path: Path) -> None:
    overlay = with_launcher_rbac(tmp_path)
    ours = {identity(o): o for o in render(overlay)}
    added = set(ours) - {identity(o) for o in render(MANIFESTS / "overlays" / "cluster-wide")}
    assert {(kind, name) for _, kind, _, name in added} == {
        ("ClusterRole", "training-operator-launcher-rbac"),
        ("ClusterRoleBinding", "training-operator-launcher-rbac"),
    }
    assert {k: schema_errors(o) for k, o in ours.items() if schema_errors(o)} == {}
    if shutil.which("kubectl") is None:
        return
    theirs = {identity(o): o for o in kubectl_kustomize(overlay)}
    assert ours == theirs


def test_renderer_pieces() -> None:
    base = {
        "spec": {
            "containers": [{"name": "a", "image": "x", "env": [{"name": "E", "value": "1"}]}],
            "keep": 1,
            "drop": 2,
        }
    }
    strategic_merge(
        base,
        {
            "spec": {
                "containers": [
                    {"name": "a", "env": [{"name": "F", "value": "2"}]},
                    {"name": "b", "image": "y"},
                ],
                "drop": None,
            }
        },
    )
    assert base == {
        "spec": {
            "containers": [
                {
                    "name": "a",
                    "image": "x",
                    "env": [{"name": "E", "value": "1"}, {"name": "F", "value": "2"}],
                },
                {"name": "b", "image": "y"},
            ],
            "keep": 1,
        }
    }
    assert image_name("registry:5000/team/kubetrain:0.1@sha256:abc") == "registry:5000/team/kubetrain"
    assert image_name("kubetrain") == "kubetrain"


def test_renderer_refuses_what_it_does_not_implement(tmp_path: Path) -> None:
    (tmp_path / "kustomization.yaml").write_text("resources: []\nreplicas: [{name: x, count: 2}]\n")
    with pytest.raises(UnsupportedKustomization, match="replicas"):
        render(tmp_path)
