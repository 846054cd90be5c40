"""Playing the kubelet over HTTP (binding, pod status), and the pods/log subresource."""

from __future__ import annotations

import asyncio

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from kubetrain.embedded.apiserver import EmbeddedAPIServer, MemoryLogProvider
from tests.kubelet_sim import KubeletSim

from .helpers import NS, Http, pod

pytestmark = pytest.mark.embedded_only(
    "KubeletSim speaks plain HTTP to the server, and logs come from the in-process log provider"
)


@pytest.fixture
async def kubelet(server: EmbeddedAPIServer) -> KubeletSim:
    sim = KubeletSim(server.url, "node-1", token=server.token, ssl_context=server.client_ssl_context())
    await sim.register_node()
    yield sim  # type: ignore[misc]
    await sim.close()


async def test_node_registration(kubelet: KubeletSim, core: client.CoreV1Api, ns: NS) -> None:
    node = await core.read_node("node-1")
    assert node.status.conditions[0].type == "Ready" and node.status.conditions[0].status == "True"


async def test_binding_and_phases(kubelet: KubeletSim, core: client.CoreV1Api, http: Http, ns: NS) -> None:
    await http.post(ns.pods, pod("w", containers=[{"name": "a", "image": "i"}, {"name": "b", "image": "i"}]))
    await kubelet.bind(ns.name, "w")
    got = await core.read_namespaced_pod("w", ns.name)
    assert got.spec.node_name == "node-1"
    assert any(c.type == "PodScheduled" and c.status == "True" for c in got.status.conditions)
    await kubelet.pending(ns.name, "w", reason="ImagePullBackOff", message="pull failed")
    got = await core.read_namespaced_pod("w", ns.name)
    assert got.status.phase == "Pending"
    assert got.status.container_statuses[0].state.waiting.reason == "ImagePullBackOff"
    await kubelet.running(ns.name, "w", pod_ip="10.1.2.3", restart_count=1)
    got = await core.read_namespaced_pod("w", ns.name)
    assert got.status.phase == "Running" and got.status.pod_ip == "10.1.2.3"
    assert all(cs.ready and cs.restart_count == 1 for cs in got.status.container_statuses)
    assert {c.type: c.status for c in got.status.conditions}["Ready"] == "True"
    await kubelet.failed(ns.name, "w", exit_code=137, reason="OOMKilled", message="killed")
    got = await core.read_namespaced_pod("w", ns.name)
    term = got.status.container_statuses[0].state.terminated
    assert got.status.phase == "Failed" and term.exit_code == 137 and term.reason == "OOMKilled"
    assert term.message == "killed"
    assert got.metadata.generation == 1


async def test_per_container_states(kubelet: KubeletSim, core: client.CoreV1Api, http: Http, ns: NS) -> None:
    await http.post(ns.pods, pod("m", containers=[{"name": "a", "image": "i"}, {"name": "b", "image": "i"}]))
    await kubelet.set_phase(
        ns.name,
        "m",
        "Running",
        containers={"b": {"state": "terminated", "exit_code": 2, "reason": "Error"}},
    )
    got = await core.read_namespaced_pod("m", ns.name)
    states = {cs.name: cs.state for cs in got.status.container_statuses}
    assert states["a"].running is not None and states["b"].terminated.exit_code == 2
    assert {c.type: c.status for c in got.status.conditions}["Ready"] == "False"
    await kubelet.succeeded(ns.name, "m")
    got = await core.read_namespaced_pod("m", ns.name)
    assert got.status.phase == "Succeeded"
    assert all(cs.state.terminated.exit_code == 0 for cs in got.status.container_statuses)
    await kubelet.restarted(ns.name, "m", exit_code=1, restart_count=3)
    got = await core.read_namespaced_pod("m", ns.name)
    assert got.status.container_statuses[0].last_state.terminated.exit_code == 1


async def test_binding_twice_conflicts(kubelet: KubeletSim, http: Http, ns: NS) -> None:
    await http.post(ns.pods, pod("b"))
    await kubelet.bind(ns.name, "b")
    status, body, _ = await http.post(
        f"{ns.pods}/b/binding", {"metadata": {"name": "b"}, "target": {"kind": "Node", "name": "n2"}}
    )
    assert status == 409
    assert (
        body["message"]
        == 'Operation cannot be fulfilled on pods/binding "b": pod b is already assigned to node "node-1"'
    )


async def test_binding_via_client(core: client.CoreV1Api, http: Http, ns: NS) -> None:
    await http.post(ns.pods, pod("cb"))
    body = client.V1Binding(
        metadata=client.V1ObjectMeta(name="cb"), target=client.V1ObjectReference(kind="Node", name="n9")
    )
    await core.create_namespaced_binding(ns.name, body, _preload_content=False)
    got = await core.read_namespaced_pod("cb", ns.name)
    assert got.spec.node_name == "n9"


async def test_logs(server: EmbeddedAPIServer, core: client.CoreV1Api, http: Http, ns: NS) -> None:
    logs = server.log_provider
    assert isinstance(logs, MemoryLogProvider)
    await http.post(ns.pods, pod("l"))
    logs.append(ns.name, "l", "main", "line 1\nline 2\nline 3\n")
    text = await core.read_namespaced_pod_log("l", ns.name)
    assert text == "line 1\nline 2\nline 3\n"
    assert await core.read_namespaced_pod_log("l", ns.name, tail_lines=1) == "line 3\n"
    stamped = await core.read_namespaced_pod_log("l", ns.name, timestamps=True, container="main")
    assert stamped.splitlines()[0].endswith("Z line 1")
    assert await core.read_namespaced_pod_log("l", ns.name, limit_bytes=4) == "line"


async def test_log_errors(http: Http, ns: NS) -> None:
    await http.post(
        ns.pods, pod("two", containers=[{"name": "a", "image": "i"}, {"name": "b", "image": "i"}])
    )
    status, body, _ = await http.get(f"{ns.pods}/two/log")
    assert status == 400
    assert body["message"] == "a container name must be specified for pod two, choose one of: [a b]"
    status, body, _ = await http.get(f"{ns.pods}/two/log", params={"container": "zzz"})
    assert status == 400 and body["message"] == "container zzz is not valid for pod two"
    status, body, _ = await http.get(f"{ns.pods}/two/log", params={"container": "a"})
    assert status == 400 and "is waiting to start" in body["message"]
    status, body, _ = await http.get(f"{ns.pods}/none/log")
    assert status == 404


async def test_logs_without_provider_are_empty(http: Http, ns: NS) -> None:
    srv = EmbeddedAPIServer()
    await srv.start()
    try:
        auth = {"Authorization": f"Bearer {srv.token}"}
        pods = srv.url + "/api/v1/namespaces/default/pods"
        ctx = srv.client_ssl_context()
        async with http.session.post(pods, json=pod("x"), headers=auth, ssl=ctx) as resp:
            assert resp.status == 201
        async with http.session.get(pods + "/x/log", headers=auth, ssl=ctx) as resp:
            assert resp.status == 200 and await resp.text() == ""
    finally:
        await srv.stop()


async def test_follow_streams_until_container_ends(server: EmbeddedAPIServer, http: Http, ns: NS) -> None:
    logs = server.log_provider
    assert isinstance(logs, MemoryLogProvider)
    await http.post(ns.pods, pod("f"))
    logs.append(ns.name, "f", "main", "first\n")
    resp = await http.session.get(http.base + f"{ns.pods}/f/log", params={"follow": "true"})
    assert await asyncio.wait_for(resp.content.readline(), 3) == b"first\n"
    logs.append(ns.name, "f", "main", "second\n")
    assert await asyncio.wait_for(resp.content.readline(), 3) == b"second\n"
    logs.end(ns.name, "f", "main")
    assert await asyncio.wait_for(resp.content.read(), 3) == b""
    resp.close()


async def test_read_log_of_missing_pod_raises(core: client.CoreV1Api, ns: NS) -> None:
    with pytest.raises(ApiException) as err:
        await core.read_namespaced_pod_log("nope", ns.name)
    assert err.value.status == 404
