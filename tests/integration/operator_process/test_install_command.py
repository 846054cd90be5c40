"""`kubetrain install`: print, apply, re-apply as an upgrade, uninstall; against the embedded server."""

from __future__ import annotations

import base64
import subprocess
from pathlib import Path

import yaml

from kubetrain.kube.errors import ApiError
from kubetrain.runtime.transport import KubeClient
from tests.integration.operator_process.procs import run_cli

SECRET = "training-operator-webhook-cert"


async def kubetrain(*args: str) -> subprocess.CompletedProcess[str]:
    return await run_cli(*args, timeout=120)


async def test_print_retargets_namespace_and_image() -> None:
    result = await kubetrain(
        "install",
        "--print",
        "--overlay",
        "single-namespace",
        "--namespace",
        "ml",
        "--image",
        "registry.example/kubetrain:dev",
    )

    assert result.returncode == 0, result.stderr
    objects = [o for o in yaml.safe_load_all(result.stdout) if o]
    namespaced = [o for o in objects if "namespace" in o["metadata"]]
    assert namespaced and {o["metadata"]["namespace"] for o in namespaced} == {"ml"}
    assert [o["metadata"]["name"] for o in objects if o["kind"] == "Namespace"] == ["ml"]
    deployment = next(o for o in objects if o["kind"] == "Deployment")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "registry.example/kubetrain:dev"
    assert "--namespace=ml" in container["args"]
    hooks = next(o for o in objects if o["kind"] == "ValidatingWebhookConfiguration")["webhooks"]
    assert {h["clientConfig"]["service"]["namespace"] for h in hooks} == {"ml"}
    assert {h["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"] for h in hooks} == {"ml"}
    bindings = [o for o in objects if o["kind"] in ("RoleBinding", "ClusterRoleBinding")]
    assert {s["namespace"] for b in bindings for s in b["subjects"]} == {"ml"}


async def test_install_upgrade_uninstall(kubeconfig: Path, kube: KubeClient) -> None:
    installed = await kubetrain("install", "--kubeconfig", str(kubeconfig))
    assert installed.returncode == 0, installed.stderr
    deployment = await kube.get("apps/v1", "Deployment", "kubeflow", "training-operator")
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"].startswith("kubetrain:")
    # The operator writes its certificates into the Secret the manifest ships empty.
    secret = await kube.get("v1", "Secret", "kubeflow", SECRET)
    written = {"tls.crt": base64.b64encode(b"cert").decode()}
    await kube.replace({**secret, "apiVersion": "v1", "kind": "Secret", "data": written})

    upgraded = await kubetrain("install", "--kubeconfig", str(kubeconfig), "--image", "kubetrain:next")

    assert upgraded.returncode == 0, upgraded.stderr
    deployment = await kube.get("apps/v1", "Deployment", "kubeflow", "training-operator")
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == "kubetrain:next"
    assert (await kube.get("v1", "Secret", "kubeflow", SECRET)).get("data") == written

    removed = await kubetrain("install", "--kubeconfig", str(kubeconfig), "--uninstall", "--keep-crds")

    assert removed.returncode == 0, removed.stderr
    try:
        await kube.get("apps/v1", "Deployment", "kubeflow", "training-operator")
        raise AssertionError("the Deployment survived --uninstall")
    except ApiError as err:
        assert err.not_found
    name = "pytorchjobs.kubeflow.org"
    crd = await kube.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", None, name)
    assert crd["metadata"]["name"] == name


async def test_keep_crds_needs_uninstall() -> None:
    result = await kubetrain("install", "--print", "--keep-crds")

    assert result.returncode == 2
    assert "--keep-crds only applies to --uninstall" in result.stderr
