"""The embedded API server rejects invalid jobs at create/update, as a cluster's webhook does.

Clients see kube-apiserver's answer to a denying validating webhook: 403 Forbidden with
`admission webhook "<name>" denied the request: <field errors>`, through kubernetes_asyncio
(what the upstream SDK's async cousins and our runtime use) and through `kubectl apply`.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes_asyncio import client as k8s
from kubernetes_asyncio import config as k8s_config
from kubernetes_asyncio.client.rest import ApiException

from kubetrain.cli.plane import KubeflowAdmission, LocalPlane
from kubetrain.embedded.jobset import jobset_admission
from kubetrain.kube.errors import ApiError
from kubetrain.runtime.transport import KubeClient
from tests.integration.operator_process.jobs import job

DENIED = 'admission webhook "validator.pytorchjob.training-operator.kubeflow.org" denied the request: '
MISSING_CONTAINER = (
    "spec.pytorchReplicaSpecs[Master].template.spec.containers: Required value: "
    "must have at least one container with name pytorch"
)


def invalid_job(name: str = "bad") -> dict[str, Any]:
    """A PyTorchJob whose container is not named `pytorch` (upstream's webhook refuses it)."""
    obj = job("PyTorchJob", name, "default")
    obj["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]["name"] = "trainer"
    return obj


@pytest.fixture
async def custom_objects(kubeconfig: Path, crds: None) -> Any:
    configuration = k8s.Configuration()
    await k8s_config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)
    async with k8s.ApiClient(configuration) as api:
        yield k8s.CustomObjectsApi(api)


async def test_invalid_create_is_denied_through_kubernetes_asyncio(custom_objects: Any) -> None:
    with pytest.raises(ApiException) as caught:
        await custom_objects.create_namespaced_custom_object(
            "kubeflow.org", "v1", "default", "pytorchjobs", invalid_job()
        )

    assert caught.value.status == 403
    status = json.loads(caught.value.body)
    assert status["reason"] == "Forbidden"
    assert status["message"] == DENIED + MISSING_CONTAINER


async def test_a_valid_job_is_admitted_and_an_invalid_update_denied(custom_objects: Any) -> None:
    created = await custom_objects.create_namespaced_custom_object(
        "kubeflow.org", "v1", "default", "pytorchjobs", job("PyTorchJob", "good", "default")
    )
    broken = invalid_job("good")
    broken["metadata"]["resourceVersion"] = created["metadata"]["resourceVersion"]

    with pytest.raises(ApiException) as caught:
        await custom_objects.replace_namespaced_custom_object(
            "kubeflow.org", "v1", "default", "pytorchjobs", "good", broken
        )

    assert caught.value.status == 403
    assert json.loads(caught.value.body)["message"] == DENIED + MISSING_CONTAINER
    stored = await custom_objects.get_namespaced_custom_object(
        "kubeflow.org", "v1", "default", "pytorchjobs", "good"
    )
    assert stored["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


async def test_status_writes_are_not_validated(kube: KubeClient, crds: None) -> None:
    created = await kube.create(job("PyTorchJob", "status-only", "default"))

    updated = await kube.replace_status({**created, "status": {"conditions": []}})

    assert updated["metadata"]["name"] == "status-only"


async def test_denied_create_does_not_store_anything(kube: KubeClient, crds: None) -> None:
    with pytest.raises(ApiError) as caught:
        await kube.create(invalid_job("never"))

    assert caught.value.status == 403
    pytorchjobs, _ = await kube.list("kubeflow.org/v1", "PyTorchJob", "default")
    assert [j["metadata"]["name"] for j in pytorchjobs] == []


async def _kubectl(kubeconfig: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return await asyncio.to_thread(
        subprocess.run,
        ["kubectl", "--kubeconfig", str(kubeconfig), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


async def test_kubectl_apply_shows_the_webhook_denial(kubeconfig: Path, crds: None) -> None:
    manifest = yaml.safe_dump(invalid_job())
    result = await _kubectl(kubeconfig, "apply", "-f", "-", stdin=manifest)

    assert result.returncode == 1
    assert "Error from server (Forbidden)" in result.stderr
    assert DENIED + MISSING_CONTAINER in result.stderr


async def test_kubectl_prints_admission_warnings(kubeconfig: Path, crds: None) -> None:
    mxjob = job("MXJob", "old-kind", "default")

    result = await _kubectl(kubeconfig, "apply", "-f", "-", stdin=yaml.safe_dump(mxjob))

    assert result.returncode == 0, result.stderr
    assert "Warning: kubeflow.org/v1 MXJob is deprecated" in result.stderr


def test_the_local_plane_registers_the_kubeflow_and_jobset_plugins() -> None:
    plane = LocalPlane()
    kubeflow, jobset = plane.server.rest.admission.plugins
    assert isinstance(kubeflow, KubeflowAdmission) and kubeflow.lookup is not None  # reads its store
    assert jobset is jobset_admission
