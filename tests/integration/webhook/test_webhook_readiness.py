"""Probes and metrics as the kubelet and Prometheus see them, with the webhook as a readiness gate.

Upstream's `/readyz` turns ready only after the webhook certificates exist and the webhook server
serves (docs/upstream-behaviour.md#operator-flags); the same composition is built here from the
public pieces.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from prometheus_client import CollectorRegistry, Counter
from prometheus_client.parser import text_string_to_metric_families

from kubetrain.runtime.health import BindAddress, HealthServer
from kubetrain.runtime.metrics import Metrics
from kubetrain.webhook import certs
from kubetrain.webhook.server import WebhookServer


@pytest.fixture
async def health() -> AsyncIterator[HealthServer]:
    metrics = Metrics()
    srv = HealthServer(metrics.registry, probe_address="127.0.0.1:0", metrics_address="127.0.0.1:0")
    metrics.job_counters["training_operator_jobs_created_total"].labels(
        job_namespace="default", framework="pytorch"
    ).inc(3)
    await srv.start()
    try:
        yield srv
    finally:
        await srv.stop()


async def get(port: int, path: str) -> tuple[int, str, str]:
    async with aiohttp.ClientSession() as session, session.get(f"http://127.0.0.1:{port}{path}") as resp:
        return resp.status, await resp.text(), resp.headers.get("Content-Type", "")


async def test_readyz_follows_the_webhook_from_certificates_to_serving(
    health: HealthServer, tmp_path: Path
) -> None:
    webhook = WebhookServer(tmp_path / "certs", host="127.0.0.1", port=0)
    health.add_readyz_check("webhook", lambda: webhook.ready)
    assert await get(health.probe_port, "/healthz") == (200, "ok", "text/plain; charset=utf-8")

    status, body, _ = await get(health.probe_port, "/readyz")
    assert status == 500
    assert body == "[-]webhook failed: reason withheld\nreadyz check failed\n"

    certs.generate("training-operator", "kubeflow").write(tmp_path / "certs")
    assert (await get(health.probe_port, "/readyz"))[0] == 500  # certificates alone are not enough
    await webhook.start()
    try:
        assert (await get(health.probe_port, "/readyz"))[:2] == (200, "ok")
        assert (await get(health.probe_port, "/readyz/webhook"))[:2] == (200, "ok")
    finally:
        await webhook.stop()
    assert (await get(health.probe_port, "/readyz"))[0] == 500


async def test_aggregated_output_matches_controller_runtime(health: HealthServer) -> None:
    async def informers_synced() -> bool:
        return True

    def broken() -> bool:
        raise RuntimeError("secret detail")

    health.add_readyz_check("informers", informers_synced)
    health.add_readyz_check("broken", broken)
    status, body, _ = await get(health.probe_port, "/readyz")
    assert (status, body) == (
        500,
        "[-]broken failed: reason withheld\n[+]informers ok\nreadyz check failed\n",
    )
    assert "secret detail" not in body
    status, body, _ = await get(health.probe_port, "/readyz?exclude=broken")
    assert (status, body) == (200, "ok")
    status, body, _ = await get(health.probe_port, "/readyz?exclude=broken&exclude=nope&verbose")
    assert status == 200
    assert body == (
        "[+]broken excluded: ok\n[+]informers ok\n"
        'warn: some health checks cannot be excluded: no matches for "nope"\nreadyz check passed\n'
    )
    assert (await get(health.probe_port, "/readyz/broken"))[0] == 500
    assert (await get(health.probe_port, "/readyz/unknown"))[0] == 404
    assert (await get(health.probe_port, "/healthz?verbose"))[:2] == (
        200,
        "[+]ping ok\nhealthz check passed\n",
    )


async def test_a_hanging_check_fails_instead_of_hanging_the_probe(
    health: HealthServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("kubetrain.runtime.health.CHECK_TIMEOUT", 0.1)

    async def hangs() -> bool:
        await asyncio.sleep(60)
        return True

    health.add_readyz_check("hangs", hangs)
    async with asyncio.timeout(5):
        assert (await get(health.probe_port, "/readyz"))[0] == 500


async def test_metrics_are_served_on_their_own_port_and_parse(health: HealthServer) -> None:
    assert health.metrics_port != health.probe_port
    status, text, content_type = await get(health.metrics_port, "/metrics")
    assert status == 200 and content_type.startswith("text/plain")
    families = {f.name: f for f in text_string_to_metric_families(text)}
    created = families["training_operator_jobs_created"]
    assert created.type == "counter"
    (sample,) = [s for s in created.samples if s.name == "training_operator_jobs_created_total"]
    assert sample.labels == {"job_namespace": "default", "framework": "pytorch"} and sample.value == 3
    assert "kubetrain_workqueue_depth" in families
    assert (await get(health.metrics_port, "/healthz"))[0] == 404  # probes stay on the probe port
    assert (await get(health.probe_port, "/metrics"))[0] == 404


async def test_metrics_can_be_disabled_or_share_the_probe_port() -> None:
    registry = CollectorRegistry()
    Counter("kubetrain_test_total", "a test counter", registry=registry).inc()
    srv = HealthServer(registry, probe_address="127.0.0.1:0", metrics_address="0")
    async with srv:
        assert srv.metrics_port == 0
        assert (await get(srv.probe_port, "/metrics"))[0] == 404
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        free = sock.getsockname()[1]
    shared = HealthServer(registry, probe_address=f"127.0.0.1:{free}", metrics_address=f"127.0.0.1:{free}")
    async with shared:
        assert shared.metrics_port == shared.probe_port == free
        _, text, _ = await get(free, "/metrics")
        assert "kubetrain_test_total 1.0" in text
        assert (await get(free, "/healthz"))[:2] == (200, "ok")


def test_bind_addresses_parse_like_upstream_flags() -> None:
    assert BindAddress.parse(":8080") == BindAddress(None, 8080)
    assert BindAddress.parse("127.0.0.1:8081") == BindAddress("127.0.0.1", 8081)
    assert BindAddress.parse("[::1]:9000") == BindAddress("::1", 9000)
    assert BindAddress.parse("0").disabled
    with pytest.raises(ValueError, match="host:port"):
        BindAddress.parse("8080")


def test_duplicate_or_bad_check_names_are_refused() -> None:
    srv = HealthServer(CollectorRegistry())
    srv.add_readyz_check("webhook", lambda: True)
    with pytest.raises(ValueError, match="already registered"):
        srv.add_readyz_check("webhook", lambda: True)
    with pytest.raises(ValueError, match="invalid"):
        srv.add_healthz_check("a/b", lambda: True)
