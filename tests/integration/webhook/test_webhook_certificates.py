"""Operator-generated certificates against the embedded API server: Secret, files, caBundle.

Ends with the full path an admission call takes in a cluster: the caBundle read back from the
ValidatingWebhookConfiguration is the only trust anchor used to call the server over TLS.
"""

from __future__ import annotations

import asyncio
import base64
import json
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from webhook_jobs import review, valid_job

from kubetrain.embedded.apiserver import EmbeddedAPIServer
from kubetrain.kinds.registry import REPLICA_SPEC_KINDS as KINDS
from kubetrain.kinds.registry import webhook_kinds
from kubetrain.runtime.transport import KubeClient
from kubetrain.webhook import certs
from kubetrain.webhook.provisioner import CertConfig, CertProvisioner
from kubetrain.webhook.server import WebhookServer

REPO = Path(__file__).resolve().parents[3]
VWC_NAME = "validator.training-operator.kubeflow.org"
SECRET = ("v1", "Secret", "kubeflow", "training-operator-webhook-cert")
VWC = ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", None, VWC_NAME)


@pytest.fixture
async def kube() -> AsyncIterator[KubeClient]:
    async with EmbeddedAPIServer() as api:
        client = KubeClient.for_url(api.url, api.token, api.ca_file, qps=0)
        try:
            await client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kubeflow"}})
            # The shipped webhook configuration, exactly as the manifests install it.
            shipped = yaml.safe_load((REPO / "manifests" / "base" / "webhook.yaml").read_text())
            await client.create(shipped)
            yield client
        finally:
            await client.close()


def provisioner(kube: KubeClient, cert_dir: Path, **overrides: Any) -> CertProvisioner:
    return CertProvisioner(kube, CertConfig(cert_dir=cert_dir, **overrides))


async def ca_bundles(kube: KubeClient) -> list[str]:
    vwc = await kube.get(*VWC)
    return [w["clientConfig"].get("caBundle", "") for w in vwc["webhooks"]]


async def test_first_start_generates_stores_writes_and_injects(kube: KubeClient, tmp_path: Path) -> None:
    prov = provisioner(kube, tmp_path / "certs")
    assert not prov.ready.is_set()
    bundle = await prov.ensure()
    assert prov.ready.is_set()

    secret = await kube.get(*SECRET)
    data = {k: base64.b64decode(v) for k, v in secret["data"].items()}
    assert data == bundle.secret_data()
    assert certs.needs_rotation(bundle, certs.dns_names("training-operator", "kubeflow")) == ""
    assert certs.CertBundle.read(tmp_path / "certs") == certs.CertBundle(
        bundle.ca_cert, bundle.cert, bundle.key
    )

    bundles = await ca_bundles(kube)
    assert len(bundles) == len(webhook_kinds())  # one webhook per kind it validates
    assert set(bundles) == {base64.b64encode(bundle.ca_cert).decode()}


async def test_restart_reuses_the_stored_certificates(kube: KubeClient, tmp_path: Path) -> None:
    first = await provisioner(kube, tmp_path / "a").ensure()
    version = (await kube.get(*SECRET))["metadata"]["resourceVersion"]
    vwc_version = (await kube.get(*VWC))["metadata"]["resourceVersion"]
    second = await provisioner(kube, tmp_path / "b").ensure()  # another replica, or a restart
    assert second == first
    assert (await kube.get(*SECRET))["metadata"]["resourceVersion"] == version
    assert (await kube.get(*VWC))["metadata"]["resourceVersion"] == vwc_version  # no needless write


async def test_concurrent_replicas_converge_on_one_bundle(kube: KubeClient, tmp_path: Path) -> None:
    results = await asyncio.gather(*(provisioner(kube, tmp_path / str(i)).ensure() for i in range(4)))
    stored = certs.CertBundle.from_secret_data(
        {k: base64.b64decode(v) for k, v in (await kube.get(*SECRET))["data"].items()}
    )
    assert all(r == stored for r in results)
    assert set(await ca_bundles(kube)) == {base64.b64encode(results[0].ca_cert).decode()}


async def test_shipped_empty_secret_is_filled_not_recreated(kube: KubeClient, tmp_path: Path) -> None:
    empty = yaml.safe_load((REPO / "manifests" / "base" / "webhook-secret.yaml").read_text())
    created = await kube.create(empty)
    await provisioner(kube, tmp_path / "certs").ensure()
    secret = await kube.get(*SECRET)
    assert secret["metadata"]["uid"] == created["metadata"]["uid"]
    assert set(secret["data"]) == {"ca.crt", "ca.key", "tls.crt", "tls.key"}


async def test_certificate_for_another_service_is_renewed_with_the_same_ca(
    kube: KubeClient, tmp_path: Path
) -> None:
    first = await provisioner(kube, tmp_path / "a", service_name="old-name").ensure()
    renewed = await provisioner(kube, tmp_path / "b").ensure()
    assert renewed.ca_cert == first.ca_cert  # the injected caBundle stays valid during the change
    assert renewed.cert != first.cert
    assert certs.needs_rotation(renewed, certs.dns_names("training-operator", "kubeflow")) == ""


async def test_garbage_in_the_secret_is_replaced(kube: KubeClient, tmp_path: Path) -> None:
    junk = base64.b64encode(b"not a certificate").decode()
    await kube.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": SECRET[3], "namespace": "kubeflow"},
            "data": {"ca.crt": junk, "tls.crt": junk, "tls.key": junk},
        }
    )
    bundle = await provisioner(kube, tmp_path / "certs").ensure()
    assert certs.needs_rotation(bundle, certs.dns_names("training-operator", "kubeflow")) == ""


async def test_missing_webhook_configuration_is_not_fatal(kube: KubeClient, tmp_path: Path) -> None:
    prov = provisioner(kube, tmp_path / "certs", webhook_configurations=("does-not-exist",))
    await prov.ensure()
    assert prov.ready.is_set()
    assert await prov.inject_ca_bundle("does-not-exist", b"x") is False


def _trainer(kind: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": kind,
        "metadata": {"name": "from-the-api-server", "namespace": "default"},
        "spec": spec,
    }


TRAINER_OBJECTS = {
    "trainjobs": _trainer("TrainJob", {"runtimeRef": {"name": "torch-distributed"}}),
    "trainingruntimes": _trainer("TrainingRuntime", {"template": {"spec": {"replicatedJobs": []}}}),
    "clustertrainingruntimes": _trainer(
        "ClusterTrainingRuntime", {"template": {"spec": {"replicatedJobs": []}}}
    ),
}
"""Valid objects of the Trainer v2 kinds, whose webhooks the configuration lists too."""


async def test_api_server_path_end_to_end_with_the_injected_ca_bundle(
    kube: KubeClient, tmp_path: Path
) -> None:
    prov = provisioner(kube, tmp_path / "certs")
    await prov.ensure()
    async with WebhookServer(tmp_path / "certs", host="127.0.0.1", port=0) as server:
        vwc = await kube.get(*VWC)
        async with aiohttp.ClientSession() as session:
            for hook in vwc["webhooks"]:
                client_config = hook["clientConfig"]
                trust = ssl.create_default_context(
                    cadata=base64.b64decode(client_config["caBundle"]).decode()
                )
                service = client_config["service"]
                kind = hook["rules"][0]["resources"][0]
                job = TRAINER_OBJECTS.get(kind) or valid_job(
                    next(k for k, i in KINDS.items() if i.plural == kind), name="from-the-api-server"
                )
                resp = await session.post(
                    f"https://127.0.0.1:{server.port}{service['path']}",
                    data=json.dumps(review("CREATE", job)),
                    headers={"Content-Type": "application/json"},
                    ssl=trust,
                    server_hostname=f"{service['name']}.{service['namespace']}.svc",
                )
                body = await resp.json()
                assert body["response"]["allowed"] is True, (hook["name"], body)


async def test_run_loop_survives_failures_and_keeps_checking(tmp_path: Path) -> None:
    class Flaky:
        calls = 0

        async def get(self, *args: Any) -> dict[str, Any]:
            self.calls += 1
            raise ConnectionError("api server down")

        async def create(self, obj: dict[str, Any], *, namespace: str | None = None) -> dict[str, Any]:
            raise AssertionError("unreachable")

        async def replace(self, obj: dict[str, Any], *, subresource: str | None = None) -> dict[str, Any]:
            raise AssertionError("unreachable")

    flaky = Flaky()
    task = asyncio.create_task(CertProvisioner(flaky, CertConfig(cert_dir=tmp_path)).run(interval=0.01))
    await asyncio.sleep(0.1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert flaky.calls >= 3
