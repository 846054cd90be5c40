"""kubectl against the API server: discovery, server-side printing, apply (with client validation on,
which needs /openapi/v3), explain, patch, delete. Each test runs against both targets."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

import pytest
import yaml

from .helpers import NS, Http, WidgetKind

REPO = Path(__file__).resolve().parents[3]
KUBECTL = shutil.which("kubectl")
if KUBECTL is None and os.environ.get("CI") != "true":
    pytest.skip("kubectl is not installed", allow_module_level=True)


async def kubectl(
    kubeconfig: Path, *args: str, stdin: str | None = None, env: dict[str, str] | None = None
) -> tuple[int, str]:
    assert KUBECTL is not None, "kubectl is required in CI"
    proc = await asyncio.create_subprocess_exec(
        KUBECTL,
        f"--kubeconfig={kubeconfig}",
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env={**os.environ, "HOME": str(kubeconfig.parent), **(env or {})},
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
    code, out = await kubectl(kubeconfig, "apply", "-f", "-", stdin=POD)
    assert code == 0 and "pod/kp created" in out, out
    code, out = await kubectl(kubeconfig, "get", "pods", "-l", "app=demo")
    assert code == 0 and out.split()[:5] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert "kp" in out and "Pending" in out
    code, out = await kubectl(kubeconfig, "label", "pod", "kp", "tier=web")
    assert code == 0, out
    code, out = await kubectl(kubeconfig, "get", "pod", "kp", "-o", "jsonpath={.metadata.labels.tier}")
    assert out == "web"
    code, out = await kubectl(kubeconfig, "apply", "--server-side", "-f", "-", stdin=POD)
    assert code == 0 and "serverside-applied" in out, out
    code, out = await kubectl(kubeconfig, "delete", "pod", "kp")
    assert code == 0 and 'pod "kp" deleted' in out, out
    code, out = await kubectl(kubeconfig, "get", "pod", "kp")
    assert code != 0 and 'pods "kp" not found' in out


async def test_kubectl_custom_resources(kubeconfig: Path, widgets: WidgetKind) -> None:
    manifest = f"apiVersion: {widgets.group}/v1\nkind: Widget\nmetadata: {{name: w}}\nspec: {{size: 3}}\n"
    code, out = await kubectl(kubeconfig, "apply", "-f", "-", stdin=manifest)
    assert code == 0, out
    code, out = await kubectl(kubeconfig, "get", f"widgets.{widgets.group}")
    # The CRD lists its printer columns; kube-apiserver then adds no Age column (the embedded one does).
    lines = [line.split() for line in out.splitlines()]
    assert code == 0 and lines[0][:2] == ["NAME", "SIZE"] and lines[1][:2] == ["w", "3"], out
    code, out = await kubectl(kubeconfig, "scale", f"widgets.{widgets.group}", "w", "--replicas=4")
    assert code == 0, out
    code, out = await kubectl(
        kubeconfig, "get", f"widgets.{widgets.group}", "w", "-o", "jsonpath={.spec.replicas}"
    )
    assert out == "4"


KUBEFLOW_CRDS = sorted((REPO / "manifests/crds").glob("kubeflow.org_*.yaml"))
EXAMPLES = sorted((REPO / "examples/local").glob("*/job.yaml"))


async def install_kubeflow_crds(kubeconfig: Path) -> None:
    """`kubectl apply --server-side -k manifests/crds` with validation on (idempotent: a real cluster
    may have them). Server-side, as Kubeflow Trainer's install is: its runtime CRDs are larger than
    the 256 KiB of annotations client-side apply's last-applied-configuration would need."""
    code, out = await kubectl(kubeconfig, "apply", "--server-side", "-k", str(REPO / "manifests/crds"))
    assert code == 0, out
    names = [f"crd/{yaml.safe_load(p.read_text())['metadata']['name']}" for p in KUBEFLOW_CRDS]
    code, out = await kubectl(kubeconfig, "wait", "--for=condition=Established", "--timeout=30s", *names)
    assert code == 0, out


async def test_kubectl_prints_the_last_condition_as_state(kubeconfig: Path, http: Http, ns: NS) -> None:
    """The kubeflow CRDs' `State` column is `.status.conditions[-1:].type` (a JSONPath slice)."""
    await install_kubeflow_crds(kubeconfig)
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
    path = ns.path("tfjobs", "kubeflow.org/v1")
    status, body, _ = await http.post(path, job)
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


async def test_kubectl_apply_every_example_with_validation(kubeconfig: Path) -> None:
    """The README's `kubectl apply -f job.yaml`, client-side validation on (kubectl's default)."""
    assert len(EXAMPLES) >= 10
    await install_kubeflow_crds(kubeconfig)
    for example in EXAMPLES:
        code, out = await kubectl(kubeconfig, "apply", "-f", str(example))
        assert code == 0 and "created" in out, f"{example}: {out}"
        assert "Warning" not in out, f"{example}: {out}"
        code, out = await kubectl(kubeconfig, "apply", "-f", str(example))  # the 3-way patch path
        assert code == 0 and "unchanged" in out, f"{example}: {out}"


async def test_kubectl_rejects_a_typo_naming_the_field(kubeconfig: Path, tmp_path: Path) -> None:
    await install_kubeflow_crds(kubeconfig)
    job = yaml.safe_load((REPO / "examples/local/pytorch-ddp-digits/job.yaml").read_text())
    worker = job["spec"]["pytorchReplicaSpecs"]["Worker"]
    worker["replcas"] = worker.pop("replicas", 2)
    manifest = tmp_path / "typo.yaml"
    manifest.write_text(yaml.safe_dump(job))
    code, out = await kubectl(kubeconfig, "apply", "-f", str(manifest))
    assert code != 0
    assert (
        'PyTorchJob in version "v1" cannot be handled as a PyTorchJob: strict decoding error: '
        'unknown field "spec.pytorchReplicaSpecs.Worker.replcas"' in out
    ), out
    code, out = await kubectl(kubeconfig, "create", "--validate=warn", "-f", str(manifest))
    assert code == 0, out
    assert 'Warning: unknown field "spec.pytorchReplicaSpecs.Worker.replcas"' in out, out
    code, out = await kubectl(
        kubeconfig,
        "patch",
        "pytorchjob",
        job["metadata"]["name"],
        "--type=merge",
        "-p",
        '{"spec": {"runPolcy": {}}}',
    )  # kubectl patch sends no fieldValidation: the server's default, Warn, applies
    assert code == 0 and 'Warning: unknown field "spec.runPolcy"' in out and "(no change)" in out, out


async def test_kubectl_rejects_a_typo_in_a_pod(kubeconfig: Path) -> None:
    manifest = POD.replace("image: busybox", "image: busybox, imagee: x")
    code, out = await kubectl(kubeconfig, "apply", "-f", "-", stdin=manifest)
    assert code != 0
    assert 'strict decoding error: unknown field "spec.containers[0].imagee"' in out, out


async def test_kubectl_explain(kubeconfig: Path) -> None:
    await install_kubeflow_crds(kubeconfig)
    code, out = await kubectl(kubeconfig, "explain", "pytorchjob.spec.runPolicy")
    assert code == 0, out
    assert out.split()[:6] == ["GROUP:", "kubeflow.org", "KIND:", "PyTorchJob", "VERSION:", "v1"], out
    assert "FIELD: runPolicy <Object>" in out and "backoffLimit\t<integer>" in out, out
    code, out = await kubectl(kubeconfig, "explain", "pods.spec.containers")
    assert code == 0, out
    assert "KIND:       Pod" in out and "FIELD: containers <[]Container>" in out, out
    assert "List of containers belonging to the pod." in out and "image\t<string>" in out, out
    code, out = await kubectl(kubeconfig, "explain", "jobs.spec.template.spec.restartPolicy")
    assert code == 0 and "GROUP:      batch" in out and "FIELD: restartPolicy <string>" in out, out
    code, out = await kubectl(kubeconfig, "explain", "pods.spec.nosuchfield")
    assert code != 0 and 'field "nosuchfield" does not exist' in out, out


async def test_kubectl_edit(kubeconfig: Path, tmp_path: Path) -> None:
    """`kubectl edit` (its editor scripted): a valid change is patched, a typo is refused."""
    code, out = await kubectl(kubeconfig, "apply", "-f", "-", stdin=POD)
    assert code == 0, out
    editor = tmp_path / "editor.sh"
    editor.write_text('#!/bin/sh\nsed -i "$SED" "$1"\n')
    editor.chmod(0o755)
    edit = {"KUBE_EDITOR": str(editor)}
    code, out = await kubectl(
        kubeconfig, "edit", "pod", "kp", env={**edit, "SED": "s/app: demo/app: edited/"}
    )
    assert code == 0 and "pod/kp edited" in out, out
    code, out = await kubectl(kubeconfig, "get", "pod", "kp", "-o", "jsonpath={.metadata.labels.app}")
    assert out == "edited", out
    code, out = await kubectl(
        kubeconfig, "edit", "pod", "kp", env={**edit, "SED": "s/image: busybox/imagee: busybox/"}
    )
    assert code != 0 and 'pods "kp" is invalid' in out and "Edit cancelled" in out, out
