"""`kubetrain operator` as a real process runs jobs, serves probes and metrics, and stops cleanly.

The operator and the node agent are subprocesses started exactly as a user starts them; the only
thing in the test process is the embedded API server (in its own thread).
"""

from __future__ import annotations

import base64
import json
import signal
import ssl
import uuid
from pathlib import Path

import aiohttp

from kubetrain.runtime.transport import KubeClient
from tests.integration.operator_process.conftest import Processes
from tests.integration.operator_process.jobs import job, pods_of, wait_condition, wait_for
from tests.integration.operator_process.procs import free_port

UPSTREAM_COUNTERS = (
    "training_operator_jobs_created",
    "training_operator_jobs_successful",
)


async def test_a_job_runs_to_completion_with_a_node_process(procs: Processes, kube: KubeClient) -> None:
    operator = procs.operator("--install-crds", "--no-webhook")
    procs.node()
    await operator.wait_ready()
    tf = await kube.create(job("TFJob", "two-workers", "default", "print('hello from a worker')", replicas=2))

    await wait_condition(kube, tf, "Succeeded", timeout=60)

    pods = await pods_of(kube, "default", "two-workers")
    assert sorted(p["metadata"]["name"] for p in pods) == ["two-workers-worker-0", "two-workers-worker-1"]
    assert {p["spec"]["nodeName"] for p in pods} == {"kubetrain-e2e"}
    # TFJob succeeds when worker 0 does; the other worker finishes on its own.
    await wait_for(lambda: _all_succeeded(kube, "two-workers"), 30, "both workers Succeeded")


async def _all_succeeded(kube: KubeClient, job_name: str) -> bool:
    return {p["status"]["phase"] for p in await pods_of(kube, "default", job_name)} == {"Succeeded"}


async def test_metrics_have_upstream_names_and_ours(procs: Processes, kube: KubeClient) -> None:
    operator = procs.operator("--install-crds", "--no-webhook")
    procs.node()
    await operator.wait_ready()
    await wait_condition(kube, await kube.create(job("PyTorchJob", "metered", "default")), "Succeeded")

    families = await wait_for(operator.metrics, 10, "metrics")
    for name in UPSTREAM_COUNTERS:
        samples = [s for s in families[name] if s.name == f"{name}_total"]
        assert samples, f"{name}_total has no sample"
        assert samples[0].labels == {"job_namespace": "default", "framework": "pytorch"}
        assert samples[0].value >= 1
    assert "training_operator_jobs_failed" in families  # registered before the first failure
    depth = {s.labels["kind"] for s in families["kubetrain_workqueue_depth"]}
    assert "PyTorchJob" in depth
    timed = [
        s
        for s in families["kubetrain_create_to_pods_seconds"]
        if s.name.endswith("_count") and s.labels == {"kind": "PyTorchJob"}
    ]
    assert timed and timed[0].value == 1
    reconciles = [s for s in families["kubetrain_reconcile_duration_seconds"] if s.name.endswith("_count")]
    assert sum(s.value for s in reconciles) > 0
    assert "process_cpu_seconds" in families


async def test_probes_answer_like_controller_runtime(procs: Processes) -> None:
    operator = procs.operator("--install-crds", "--no-webhook")
    await operator.wait_ready()

    assert await operator.probe("/healthz") == (200, "ok")
    assert await operator.probe("/readyz") == (200, "ok")
    status, body = await operator.probe("/readyz?verbose")
    assert status == 200 and "[+]manager ok" in body and "readyz check passed" in body
    assert (await operator.probe("/readyz/manager"))[0] == 200


async def test_sigterm_drains_and_exits_zero(procs: Processes) -> None:
    operator = procs.operator("--install-crds", "--no-webhook")
    await operator.wait_ready()

    operator.signal(signal.SIGTERM)

    assert await operator.wait(15) == 0
    assert "shutting down: draining workers" in operator.log()


async def test_the_webhook_serves_tls_with_generated_certificates(
    procs: Processes, kube: KubeClient, tmp_path: Path
) -> None:
    await kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kubeflow"}})
    port = free_port()
    operator = procs.operator(
        "--install-crds", "--webhook-server-port", str(port), "--webhook-cert-dir", str(tmp_path / "certs")
    )
    await operator.wait_ready()
    _, body = await operator.probe("/readyz?verbose")
    assert "[+]webhook ok" in body

    secret = await kube.get("v1", "Secret", "kubeflow", "training-operator-webhook-cert")
    context = ssl.create_default_context(cadata=base64.b64decode(secret["data"]["ca.crt"]).decode())
    context.check_hostname = False  # the certificate names training-operator.kubeflow.svc
    review = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": str(uuid.uuid4()),
            "operation": "CREATE",
            "object": {
                "apiVersion": "kubeflow.org/v1",
                "kind": "PyTorchJob",
                "metadata": {"name": "x", "namespace": "default"},
                "spec": {},
            },
        },
    }
    async with (
        aiohttp.ClientSession() as http,
        http.post(
            f"https://127.0.0.1:{port}/validate-kubeflow-org-v1-pytorchjob", json=review, ssl=context
        ) as resp,
    ):
        answer = json.loads(await resp.text())["response"]
    assert answer["allowed"] is False
    assert answer["status"]["code"] == 403 and answer["status"]["reason"] == "Forbidden"
    assert "pytorchReplicaSpecs" in answer["status"]["message"]
