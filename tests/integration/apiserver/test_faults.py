"""Fault injection: the next N matching requests fail the way an overloaded apiserver fails."""

from __future__ import annotations

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from kubetrain.embedded.apiserver import EmbeddedAPIServer

from .helpers import NS, Http, configmap, pod

pytestmark = pytest.mark.embedded_only("fault injection is a control of the embedded server")


async def test_429_with_retry_after_then_recovers(server: EmbeddedAPIServer, http: Http, ns: NS) -> None:
    server.inject_fault("create", "pods", 429, count=2, retry_after=3)
    for _ in range(2):
        status, body, headers = await http.post(ns.pods, pod("p"))
        assert status == 429 and headers["Retry-After"] == "3"
        assert body["reason"] == "TooManyRequests" and body["details"] == {"retryAfterSeconds": 3}
    status, _, _ = await http.post(ns.pods, pod("p"))
    assert status == 201


async def test_faults_match_verb_and_resource_only(server: EmbeddedAPIServer, http: Http, ns: NS) -> None:
    server.inject_fault("update", "pods/status", 409)
    await http.post(ns.pods, pod("s"))
    assert (await http.post(ns.configmaps, configmap("c")))[0] == 201
    assert (await http.get(f"{ns.pods}/s"))[0] == 200
    _, current, _ = await http.get(f"{ns.pods}/s")
    status, body, _ = await http.put(f"{ns.pods}/s/status", current)
    assert status == 409 and body["reason"] == "Conflict"
    assert body["message"].startswith('Operation cannot be fulfilled on pods "s"')
    status, _, _ = await http.put(f"{ns.pods}/s/status", current)
    assert status == 200


async def test_500_and_503(server: EmbeddedAPIServer, core: client.CoreV1Api, ns: NS) -> None:
    server.inject_fault("list", "pods", 500)
    with pytest.raises(ApiException) as err:
        await core.list_namespaced_pod(ns.name)
    assert err.value.status == 500
    server.inject_fault("get", "*", 503, retry_after=2)
    with pytest.raises(ApiException) as err:
        await core.read_namespace("default")
    assert err.value.status == 503 and err.value.headers["Retry-After"] == "2"
    assert (await core.list_namespaced_pod(ns.name)).items == []


async def test_fault_on_custom_resource_and_namespace(server: EmbeddedAPIServer, http: Http, ns: NS) -> None:
    server.inject_fault("create", "configmaps", 500, namespace="kube-system")
    assert (await http.post(ns.configmaps, configmap("a")))[0] == 201
    assert (await http.post("/api/v1/namespaces/kube-system/configmaps", configmap("a")))[0] == 500


def test_unsupported_fault_code_is_rejected() -> None:
    with pytest.raises(ValueError, match="unsupported fault code"):
        EmbeddedAPIServer().faults.inject("get", "pods", 418)
