"""kubectl against the embedded server: discovery, server-side printing, apply, patch, delete."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

import pytest
import yaml

from .helpers import Http, install_widget_crd

REPO = Path(__file__).resolve().parents[3]
KUBECTL = shutil.which("kubectl")
if KUBECTL is None and os.environ.get("CI") != "true":
    pytest.skip("kubectl is not installed", allow_module_level=True)


async def kubectl(kubeconfig: Path, *args: str, stdin: str | None = None) -> tuple[int, str]:
    assert KUBECTL is not None, "kubectl is required in CI"
    proc = await asyncio.create_subprocess_exec(
        KUBECTL,
        f"--kubeconfig={kubeconfig}",
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env={**os.environ, "HOME": str(kubeconfig.parent)},
    )
    out, _ = await asyncio.wait_for(proc.communicate(stdin.encode() if stdin else None), 30)
    return proc.returncode or 0, out.decode()


POD = """
apiVersion: v1
kind: Pod
metadata: {name: kp, labels: {app: demo}}
spec:
  containers: [{name: c, image: busybox}]
"""


async def test_kubectl_basic_workflow(kubeconfig: Path) -> None:
    code, out = await kubectl(kubeconfig, "get", "namespaces")
    assert code == 0 and "default" in out and "kube-system" in out
    code, out = await kubectl(kubeconfig, "apply", "--validate=false", "-f", "-", stdin=POD)
    assert code == 0 and "pod/kp created" in out, out
    code, out = await kubectl(kubeconfig, "get", "pods", "-l", "app=demo")
    assert code == 0 and out.split()[:5] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert "kp" in out and "Pending" in out
    code, out = await kubectl(kubeconfig, "label", "pod", "kp", "tier=web")
    assert code == 0, out
    code, out = await kubectl(kubeconfig, "get", "pod", "kp", "-o", "jsonpath={.metadata.labels.tier}")
    assert out == "web"
    code, out = await kubectl(kubeconfig, "apply", "--server-side", "--validate=false", "-f", "-", stdin=POD)
    assert code == 0 and "serverside-applied" in out, out
    code, out = await kubectl(kubeconfig, "delete", "pod", "kp")
    assert code == 0 and 'pod "kp" deleted' in out, out
    code, out = await kubectl(kubeconfig, "get", "pod", "kp")
    assert code != 0 and 'pods "kp" not found' in out


async def test_kubectl_custom_resources(kubeconfig: Path, http: Http) -> None:
    await install_widget_crd(http)
    manifest = "apiVersion: example.kubetrain.io/v1\nkind: Widget\nmetadata: {name: w}\nspec: {size: 3}\n"
    code, out = await kubectl(kubeconfig, "apply", "--validate=false", "-f", "-", stdin=manifest)
    assert code == 0, out
    code, out = await kubectl(kubeconfig, "get", "wd")
    assert code == 0 and out.split()[:3] == ["NAME", "SIZE", "AGE"] and out.split()[3:5] == ["w", "3"], out
    code, out = await kubectl(kubeconfig, "scale", "widget", "w", "--replicas=4")
    assert code == 0, out
    code, out = await kubectl(kubeconfig, "get", "widget", "w", "-o", "jsonpath={.spec.replicas}")
    assert out == "4"


async def test_kubectl_prints_the_last_condition_as_state(kubeconfig: Path, http: Http) -> None:
    """The kubeflow CRDs' `State` column is `.status.conditions[-1:].type` (a JSONPath slice)."""
    crd = yaml.safe_load((REPO / "manifests/crds/kubeflow.org_tfjobs.yaml").read_text())
    status, body, _ = await http.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    assert status == 201, body
    job = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": "tj"},
        "spec": {
            "tfReplicaSpecs": {
                "Worker": {"template": {"spec": {"containers": [{"name": "tensorflow", "image": "tf"}]}}}
            }
        },
    }
    path = "/apis/kubeflow.org/v1/namespaces/default/tfjobs"
    for _ in range(50):  # the CRD becomes served asynchronously
        status, body, _ = await http.post(path, job)
        if status != 404:
            break
        await asyncio.sleep(0.05)
    assert status == 201, body
    body["status"] = {
        "conditions": [{"type": "Created", "status": "True"}, {"type": "Running", "status": "True"}]
    }
    status, body, _ = await http.put(f"{path}/tj/status", body)
    assert status == 200, body
    code, out = await kubectl(kubeconfig, "get", "tfjobs")
    assert (
        code == 0 and out.split()[:3] == ["NAME", "STATE", "AGE"] and out.split()[3:5] == ["tj", "Running"]
    ), out
