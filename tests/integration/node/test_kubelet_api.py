"""The kubelet API of the node (`kubeletapi`), called as kube-apiserver calls it: TLS with a client
certificate of the cluster CA, /containerLogs with its options, /exec over WebSocket and SPDY."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import aiohttp
import pytest

from kubetrain.embedded.apiserver import EmbeddedAPIServer
from kubetrain.embedded.node import KubeAPI, NodeAgent
from kubetrain.embedded.node.config import KubeletAPIConfig
from kubetrain.embedded.node.kubeletapi import Authorizer, User

from .conftest import container, create, fast_config, pod, wait_for, wait_phase
from .kubelet_clients import spdy_exec, websocket_exec
from .pki import CA

JsonDict = dict[str, Any]

SERVING = "import time\nfor i in range(3): print(f'line {i}', flush=True)\nwhile True: time.sleep(0.1)"


@pytest.fixture
def ca() -> CA:
    return CA.make()


@pytest.fixture
async def kubelet(
    server: EmbeddedAPIServer, api: KubeAPI, tmp_path: Path, ca: CA
) -> AsyncIterator[NodeAgent]:
    cfg = fast_config(
        tmp_path, kubelet_api=KubeletAPIConfig(port=0, client_ca_pem=ca.pem, authorization_mode="AlwaysAllow")
    )
    node = NodeAgent(api, cfg)
    await node.start()
    yield node
    await node.stop()


def client_context(cert: tuple[Path, Path] | None) -> ssl.SSLContext:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE  # the serving certificate is self-signed, as kubelet's default
    if cert is not None:
        ctx.load_cert_chain(*cert)
    return ctx


@pytest.fixture
def apiserver_tls(ca: CA, tmp_path: Path) -> ssl.SSLContext:
    return client_context(ca.client(tmp_path / "pki", "kube-apiserver-kubelet-client", "system:masters"))


def base(agent: NodeAgent) -> str:
    assert agent.kubelet_server is not None
    return f"https://127.0.0.1:{agent.kubelet_server.port}"


async def get(url: str, ctx: ssl.SSLContext) -> tuple[int, str]:
    async with aiohttp.ClientSession() as session, session.get(url, ssl=ctx) as resp:
        return resp.status, await resp.text()


async def running(api: KubeAPI, name: str) -> None:
    await wait_phase(api, name, "Running")


async def test_node_advertises_the_kubelet_port_and_websockets(api: KubeAPI, kubelet: NodeAgent) -> None:
    node = await api.get("/api/v1/nodes/kubetrain-local")
    assert kubelet.kubelet_server is not None
    assert node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"] == kubelet.kubelet_server.port > 0
    assert node["status"]["declaredFeatures"] == ["ExtendWebSocketsToKubelet"]


async def test_callers_need_a_certificate_of_the_cluster_ca(kubelet: NodeAgent, tmp_path: Path) -> None:
    assert await get(f"{base(kubelet)}/healthz", client_context(None)) == (200, "ok")
    assert await get(f"{base(kubelet)}/containerLogs/default/p/c", client_context(None)) == (
        401,
        "Unauthorized",
    )
    foreign = client_context(CA.make("other").client(tmp_path / "other", "intruder"))
    with pytest.raises(aiohttp.ClientError):
        await get(f"{base(kubelet)}/containerLogs/default/p/c", foreign)


async def test_webhook_authorization_asks_the_api_server_and_caches() -> None:
    asked: list[JsonDict] = []

    class FakeAPI:
        async def create(self, path: str, body: JsonDict) -> JsonDict:
            asked.append(body)
            return {"status": {"allowed": body["spec"]["user"] == "admin"}}

    authz = Authorizer(FakeAPI(), "n1", "Webhook")  # type: ignore[arg-type]
    admin, other = User("admin", ("system:masters",)), User("kube-apiserver-kubelet-client", ())
    assert await authz.allowed(admin, "get", "proxy") is True
    assert await authz.allowed(admin, "get", "proxy") is True
    assert await authz.allowed(other, "create", "proxy") is False
    assert len(asked) == 2  # the second answer came from the cache
    attrs = asked[1]["spec"]["resourceAttributes"]
    assert attrs == {
        "verb": "create",
        "version": "v1",
        "resource": "nodes",
        "subresource": "proxy",
        "name": "n1",
    }
    assert asked[1]["spec"]["groups"] == ["system:authenticated"]


async def test_container_logs_with_options(
    api: KubeAPI, kubelet: NodeAgent, apiserver_tls: ssl.SSLContext
) -> None:
    await create(api, pod("lg", container("main", SERVING)))
    await running(api, "lg")
    url = f"{base(kubelet)}/containerLogs/default/lg/main"

    async def all_lines() -> bool:
        return (await get(url, apiserver_tls))[1].count("\n") == 3

    await wait_for(all_lines, what="three log lines")
    assert await get(url, apiserver_tls) == (200, "line 0\nline 1\nline 2\n")
    assert await get(f"{url}?tailLines=1", apiserver_tls) == (200, "line 2\n")
    assert await get(f"{url}?tail=all&limitBytes=6", apiserver_tls) == (200, "line 0")
    code, text = await get(f"{url}?timestamps=true&tailLines=1", apiserver_tls)
    assert code == 200 and text.endswith("Z line 2\n") and text[:4].isdigit()
    assert await get(f"{url}?sinceSeconds=3600", apiserver_tls) == (200, "line 0\nline 1\nline 2\n")
    assert await get(f"{url}?previous=true", apiserver_tls) == (
        400,
        'previous terminated container "main" in pod "lg" not found',
    )
    assert await get(f"{url}?tailLines=-1", apiserver_tls) == (422, '{"message": "Invalid request."}')
    assert await get(f"{base(kubelet)}/containerLogs/default/lg/nope", apiserver_tls) == (
        404,
        'container "nope" not found in pod "lg"',
    )
    assert await get(f"{base(kubelet)}/containerLogs/default/gone/main", apiserver_tls) == (
        404,
        'pod "gone" does not exist',
    )


async def test_follow_streams_until_the_container_ends(
    api: KubeAPI, kubelet: NodeAgent, apiserver_tls: ssl.SSLContext
) -> None:
    code = "import time\nfor i in range(3):\n    print(i, flush=True); time.sleep(0.3)"
    await create(api, pod("fl", container("main", code), restartPolicy="Never"))
    await running(api, "fl")
    status, text = await get(f"{base(kubelet)}/containerLogs/default/fl/main?follow=true", apiserver_tls)
    assert (status, text) == (200, "0\n1\n2\n")


EXIT_3 = urlencode(
    {"command": ["sh", "-c", "head -c 6; echo err >&2; exit 3"], "input": "1", "output": "1", "error": "1"},
    doseq=True,
)


@pytest.mark.parametrize("protocol", ["v5.channel.k8s.io", "v4.channel.k8s.io"])
async def test_exec_over_websocket(
    api: KubeAPI, kubelet: NodeAgent, apiserver_tls: ssl.SSLContext, protocol: str
) -> None:
    await create(api, pod("ws", container("main", SERVING)))
    await running(api, "ws")
    url = f"{base(kubelet)}/exec/default/ws/main?{EXIT_3}"
    async with aiohttp.ClientSession() as session:
        result = await websocket_exec(session, url, apiserver_tls, b"hello\n", protocol)
        assert result.protocol == protocol
        assert result.text(1) == "hello\n" and result.text(2) == "err\n"
        status = result.status
        assert status["status"] == "Failure" and status["reason"] == "NonZeroExitCode"
        assert status["details"]["causes"] == [{"reason": "ExitCode", "message": "3"}]
        ok = await websocket_exec(
            session,
            f"{base(kubelet)}/exec/default/ws/main?command=true&output=1",
            apiserver_tls,
            None,
            protocol,
        )
        assert ok.status == {"metadata": {}, "status": "Success"}
        if protocol.startswith("v5"):  # v5's close signal is stdin's EOF: cat ends
            query = urlencode({"command": "cat", "input": "1", "output": "1"})
            cat = await websocket_exec(
                session, f"{base(kubelet)}/exec/default/ws/main?{query}", apiserver_tls, b"x\n"
            )
            assert (cat.text(1), cat.status["status"]) == ("x\n", "Success")


@pytest.mark.parametrize("protocol", ["v5.channel.k8s.io", "v4.channel.k8s.io"])
async def test_exec_over_spdy(
    api: KubeAPI, kubelet: NodeAgent, apiserver_tls: ssl.SSLContext, protocol: str
) -> None:
    await create(api, pod("sp", container("main", SERVING)))
    await running(api, "sp")
    assert kubelet.kubelet_server is not None
    path = f"/exec/default/sp/main?{EXIT_3}"
    code, _, result = await spdy_exec(
        "127.0.0.1",
        kubelet.kubelet_server.port,
        path,
        apiserver_tls,
        b"typed\n",
        (protocol, "v4.channel.k8s.io"),
    )
    assert code == 101 and result.protocol == protocol
    assert result.text(1) == "typed\n" and result.text(2) == "err\n"
    assert result.status["reason"] == "NonZeroExitCode"
    assert result.status["details"]["causes"][0]["message"] == "3"


async def test_exec_errors_are_http_answers_before_any_upgrade(
    api: KubeAPI, kubelet: NodeAgent, apiserver_tls: ssl.SSLContext
) -> None:
    await create(api, pod("er", container("main", SERVING)))
    await running(api, "er")
    assert kubelet.kubelet_server is not None
    port = kubelet.kubelet_server.port
    code, head, _ = await spdy_exec(
        "127.0.0.1", port, "/exec/default/nope/main?command=true&output=1", apiserver_tls
    )
    assert code == 404 and head.endswith('\r\n\r\npods "nope" not found')
    code, head, _ = await spdy_exec(
        "127.0.0.1",
        port,
        "/exec/default/er/main?command=true&output=1",
        apiserver_tls,
        protocols=("v1.bogus",),
    )
    assert code == 403 and "X-Accepted-Stream-Protocol-Versions: v4.channel.k8s.io" in head
    status, text = await get(f"{base(kubelet)}/exec/default/er/main?command=true", apiserver_tls)
    assert (status, text) == (400, "you must specify at least 1 of stdin, stdout, stderr")
    status, text = await get(f"{base(kubelet)}/exec/default/er/main?command=true&output=1", apiserver_tls)
    assert status == 400 and text.startswith("unable to upgrade: missing upgrade headers")
