"""The webhook over real TLS, called the way kube-apiserver calls it.

kube-apiserver POSTs an AdmissionReview to `https://<service>.<namespace>.svc:443<path>`, trusting
only the webhook configuration's caBundle and checking the certificate against the service name.
These tests do the same (connecting to 127.0.0.1 but verifying `training-operator.kubeflow.svc`).
"""

from __future__ import annotations

import asyncio
import json
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from webhook_jobs import review, valid_job, with_run_policy

from kubetrain.api.jobs import load_documents
from kubetrain.api.validation import denied_message, validate_raw, webhook_name
from kubetrain.kinds.registry import REPLICA_SPEC_KINDS as KINDS
from kubetrain.webhook import certs
from kubetrain.webhook.review import AdmissionResponse, rejection_status
from kubetrain.webhook.server import WebhookServer

SERVICE_HOST = "training-operator.kubeflow.svc"
INVALID = Path(__file__).resolve().parents[3] / "examples" / "invalid"


class ApiServerCaller:
    """POSTs reviews like kube-apiserver: TLS verified with the caBundle, SNI the service name."""

    def __init__(self, port: int, ca_pem: bytes) -> None:
        self.port = port
        self.ssl = ssl.create_default_context(cadata=ca_pem.decode())

    async def post(
        self, path: str, payload: bytes, content_type: str = "application/json"
    ) -> aiohttp.ClientResponse:
        async with aiohttp.ClientSession() as session:
            resp = await session.post(
                f"https://127.0.0.1:{self.port}{path}",
                data=payload,
                headers={"Content-Type": content_type},
                ssl=self.ssl,
                server_hostname=SERVICE_HOST,
            )
            await resp.read()
            return resp

    async def call(self, path: str, doc: Any) -> tuple[int, dict[str, Any]]:
        resp = await self.post(path, json.dumps(doc).encode())
        return resp.status, json.loads(await resp.read())


@pytest.fixture
def bundle(tmp_path: Path) -> certs.CertBundle:
    out = certs.generate("training-operator", "kubeflow")
    out.write(tmp_path / "certs")
    return out


@pytest.fixture
async def server(tmp_path: Path, bundle: certs.CertBundle) -> AsyncIterator[WebhookServer]:
    srv = WebhookServer(tmp_path / "certs", host="127.0.0.1", port=0, reload_interval=0.05)
    assert not srv.ready
    await srv.start()
    try:
        yield srv
    finally:
        await srv.stop()


@pytest.fixture
def caller(server: WebhookServer, bundle: certs.CertBundle) -> ApiServerCaller:
    return ApiServerCaller(server.port, bundle.ca_cert)


def path_of(kind: str) -> str:
    return f"/validate-kubeflow-org-v1-{kind.lower()}"


async def test_server_is_ready_once_listening(server: WebhookServer) -> None:
    assert server.ready and server.port > 0


@pytest.mark.parametrize("kind", list(KINDS))
async def test_valid_create_of_every_kind_is_allowed(caller: ApiServerCaller, kind: str) -> None:
    doc = review("CREATE", valid_job(kind))
    status, body = await caller.call(path_of(kind), doc)
    assert status == 200
    assert body["apiVersion"] == "admission.k8s.io/v1" and body["kind"] == "AdmissionReview"
    assert body["response"]["uid"] == doc["request"]["uid"]
    assert body["response"]["allowed"] is True
    assert body["response"]["status"] == {"metadata": {}, "code": 200}


def invalid_examples() -> list[tuple[str, str, dict[str, Any]]]:
    out = []
    for path in sorted(INVALID.glob("*.yaml")):
        text = path.read_text(encoding="utf-8")
        expect = text.splitlines()[0].removeprefix("# expect: ")
        (doc,) = load_documents(text)
        if isinstance(doc, dict) and doc.get("kind") in KINDS:
            out.append((path.name, expect, doc))
    return out


INVALID_EXAMPLES = invalid_examples()


def test_there_are_invalid_examples_to_send() -> None:
    assert len(INVALID_EXAMPLES) >= 10


@pytest.mark.parametrize(("name", "expect", "doc"), INVALID_EXAMPLES, ids=[n for n, _, _ in INVALID_EXAMPLES])
async def test_invalid_examples_are_denied_with_their_exact_message(
    caller: ApiServerCaller, name: str, expect: str, doc: dict[str, Any]
) -> None:
    info = KINDS[doc["kind"]]
    status, body = await caller.call(path_of(info.kind), review("CREATE", doc))
    assert status == 200
    response = body["response"]
    assert response["allowed"] is False
    assert response["status"] == {"metadata": {}, "message": expect, "reason": "Forbidden", "code": 403}
    # ...and kubectl shows the API server's wrapping of it, the same text `kubetrain validate` prints.
    parsed = AdmissionResponse(response["uid"], False, response["status"])
    _, _, errors = validate_raw(doc, kinds=KINDS)
    assert rejection_status(webhook_name(info), parsed)["message"] == denied_message(info, errors)


async def test_warnings_are_returned(caller: ApiServerCaller) -> None:
    job = valid_job("PyTorchJob", elasticPolicy={"nProcPerNode": 2, "minReplicas": 1, "maxReplicas": 2})
    _, body = await caller.call(path_of("PyTorchJob"), review("CREATE", job))
    assert body["response"]["allowed"] is True
    assert body["response"]["warnings"] == [
        "spec.elasticPolicy.nProcPerNode is deprecated, use spec.nprocPerNode instead"
    ]


async def test_update_immutability_is_enforced_with_old_object(caller: ApiServerCaller) -> None:
    old = with_run_policy(valid_job("TFJob"), managedBy="kubeflow.org/training-operator")
    new = with_run_policy(valid_job("TFJob"), managedBy="kueue.x-k8s.io/multikueue")
    _, body = await caller.call(path_of("TFJob"), review("UPDATE", new, old))
    assert body["response"]["allowed"] is False
    assert body["response"]["status"]["message"] == (
        'spec.runPolicy.managedBy: Invalid value: "kueue.x-k8s.io/multikueue": field is immutable'
    )
    same = with_run_policy(valid_job("TFJob"), managedBy="kubeflow.org/training-operator")
    _, body = await caller.call(path_of("TFJob"), review("UPDATE", same, old))
    assert body["response"]["allowed"] is True

    q_old = with_run_policy(valid_job("PaddleJob"), schedulingPolicy={"queue": "team-a"})
    q_new = with_run_policy(valid_job("PaddleJob"), schedulingPolicy={"queue": "team-b"})
    _, body = await caller.call(path_of("PaddleJob"), review("UPDATE", q_new, q_old))
    assert body["response"]["allowed"] is False
    assert "spec.runPolicy.schedulingPolicy.queue" in body["response"]["status"]["message"]


async def test_v1beta1_review_is_answered_in_v1beta1(caller: ApiServerCaller) -> None:
    doc = review("CREATE", valid_job("JAXJob"), api_version="admission.k8s.io/v1beta1")
    _, body = await caller.call(path_of("JAXJob"), doc)
    assert body["apiVersion"] == "admission.k8s.io/v1beta1"
    assert body["response"]["allowed"] is True


@pytest.mark.parametrize(
    ("payload", "content_type", "reason"),
    [
        (b"", "application/json", "request body is empty"),
        (b"{]", "application/json", "couldn't decode AdmissionReview"),
        (b'{"kind": "AdmissionReview"}', "application/json", "expected AdmissionReview"),
        (b"{}", "application/yaml", "expected application/json"),
    ],
)
async def test_malformed_review_gets_a_400_answer_not_a_crash(
    caller: ApiServerCaller, server: WebhookServer, payload: bytes, content_type: str, reason: str
) -> None:
    resp = await caller.post(path_of("TFJob"), payload, content_type)
    assert resp.status == 200  # an AdmissionReview the API server can read, like controller-runtime
    body = json.loads(await resp.read())
    assert body["response"]["allowed"] is False
    assert body["response"]["status"]["code"] == 400
    assert reason in body["response"]["status"]["message"]
    # ...and the server still serves the next request.
    status, ok = await caller.call(path_of("TFJob"), review("CREATE", valid_job("TFJob")))
    assert status == 200 and ok["response"]["allowed"] is True


async def test_oversized_body_is_refused_with_413(caller: ApiServerCaller) -> None:
    resp = await caller.post(path_of("TFJob"), b"{" + b" " * (8 * 1024 * 1024) + b"}")
    body = json.loads(await resp.read())
    assert body["response"]["status"]["code"] == 413


async def test_unknown_path_is_404_and_get_is_405(caller: ApiServerCaller) -> None:
    resp = await caller.post("/validate-kubeflow-org-v1-mpijob", b"{}")
    assert resp.status == 404
    async with aiohttp.ClientSession() as session:
        got = await session.get(
            f"https://127.0.0.1:{caller.port}{path_of('TFJob')}", ssl=caller.ssl, server_hostname=SERVICE_HOST
        )
        assert got.status == 405


async def test_a_client_not_trusting_our_ca_cannot_connect(server: WebhookServer) -> None:
    other = certs.generate("training-operator", "kubeflow")
    stranger = ApiServerCaller(server.port, other.ca_cert)
    with pytest.raises(aiohttp.ClientConnectorCertificateError):
        await stranger.post(path_of("TFJob"), b"{}")


async def test_the_certificate_names_the_service(server: WebhookServer, bundle: certs.CertBundle) -> None:
    wrong_name = ssl.create_default_context(cadata=bundle.ca_cert.decode())
    async with aiohttp.ClientSession() as session:
        with pytest.raises(aiohttp.ClientConnectorCertificateError):
            await session.post(
                f"https://127.0.0.1:{server.port}{path_of('TFJob')}",
                data=b"{}",
                ssl=wrong_name,
                server_hostname="evil.example.com",
            )


async def test_rotated_certificate_files_are_picked_up_without_restart(
    server: WebhookServer, bundle: certs.CertBundle, tmp_path: Path
) -> None:
    rotated = certs.generate("training-operator", "kubeflow")
    rotated.write(tmp_path / "certs")
    fresh = ApiServerCaller(server.port, rotated.ca_cert)
    deadline = asyncio.get_running_loop().time() + 5.0
    while True:  # the watcher polls every 50 ms in this test
        try:
            status, body = await fresh.call(path_of("TFJob"), review("CREATE", valid_job("TFJob")))
            break
        except aiohttp.ClientConnectorCertificateError:
            assert asyncio.get_running_loop().time() < deadline, "rotated certificate never served"
            await asyncio.sleep(0.05)
    assert status == 200 and body["response"]["allowed"] is True
    stale = ApiServerCaller(server.port, bundle.ca_cert)
    with pytest.raises(aiohttp.ClientConnectorCertificateError):
        await stale.post(path_of("TFJob"), b"{}")
    assert server.reload_certificates() is False  # nothing changed since


async def test_start_without_certificates_fails_and_wait_times_out(tmp_path: Path) -> None:
    srv = WebhookServer(tmp_path / "none", host="127.0.0.1", port=0)
    with pytest.raises(FileNotFoundError):
        await srv.start()
    assert not srv.ready
    with pytest.raises(TimeoutError):
        await srv.wait_for_certificates(timeout=0.2, poll=0.05)
