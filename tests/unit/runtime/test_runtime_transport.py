"""KubeClient against a scripted in-process HTTP server: the wire requests and the retry rules."""

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from aiohttp import web
from kubernetes_asyncio.client import Configuration

from kubetrain.kube.errors import ApiError
from kubetrain.runtime.transport import KubeClient

Reply = Callable[[web.Request], Any]


class Script:
    def __init__(self) -> None:
        self.requests: list[tuple[str, str, dict[str, str], Any]] = []
        self.replies: list[Any] = []

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        self.requests.append(
            (
                request.method,
                request.path,
                dict(request.query),
                json.loads(body) if body else None,
                request.headers.get("Content-Type"),
            )
        )
        reply = self.replies.pop(0) if self.replies else (200, {})
        if callable(reply):
            return await reply(request)
        status, payload, *headers = reply
        return web.json_response(payload, status=status, headers=headers[0] if headers else None)


@pytest.fixture
async def server() -> AsyncIterator[tuple[Script, KubeClient]]:
    script = Script()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", script.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    client = KubeClient.for_url(f"http://127.0.0.1:{port}", qps=0, backoff_base=0.001, backoff_cap=0.002)
    yield script, client
    await client.close()
    await runner.cleanup()


def status(code: int, reason: str) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": f"{reason}!",
    }


POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}}


async def test_paths_and_verbs(server: tuple[Script, KubeClient]) -> None:
    script, client = server
    await client.get("v1", "Pod", "ns", "p")
    await client.get("kubeflow.org/v1", "pytorchjobs", "ns", "j")
    await client.create(POD)
    await client.delete("v1", "Pod", "ns", "p", uid="u1", propagation_policy="Background")
    await client.merge_patch("kubeflow.org/v1", "PyTorchJob", "ns", "j", {"spec": {}})
    await client.json_patch("v1", "Pod", "ns", "p", [{"op": "replace", "path": "/x", "value": 1}])
    await client.replace_status(
        {
            "apiVersion": "kubeflow.org/v1",
            "kind": "TFJob",
            "metadata": {"name": "t", "namespace": "ns", "resourceVersion": "7"},
            "status": {},
        }
    )
    await client.patch_status("kubeflow.org/v1", "TFJob", "ns", "t", {"status": {"x": 1}})
    await client.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", None, "tfjobs.kubeflow.org")
    got = [(m, p, ct) for m, p, _, _, ct in script.requests]
    assert got == [
        ("GET", "/api/v1/namespaces/ns/pods/p", None),
        ("GET", "/apis/kubeflow.org/v1/namespaces/ns/pytorchjobs/j", None),
        ("POST", "/api/v1/namespaces/ns/pods", "application/json"),
        ("DELETE", "/api/v1/namespaces/ns/pods/p", "application/json"),
        ("PATCH", "/apis/kubeflow.org/v1/namespaces/ns/pytorchjobs/j", "application/merge-patch+json"),
        ("PATCH", "/api/v1/namespaces/ns/pods/p", "application/json-patch+json"),
        ("PUT", "/apis/kubeflow.org/v1/namespaces/ns/tfjobs/t/status", "application/json"),
        ("PATCH", "/apis/kubeflow.org/v1/namespaces/ns/tfjobs/t/status", "application/merge-patch+json"),
        ("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/tfjobs.kubeflow.org", None),
    ]
    assert script.requests[3][3] == {
        "apiVersion": "v1",
        "kind": "DeleteOptions",
        "preconditions": {"uid": "u1"},
        "propagationPolicy": "Background",
    }


async def test_create_without_read_back_skips_the_answer(server: tuple[Script, KubeClient]) -> None:
    script, client = server
    script.replies = [(201, {**POD, "metadata": {**POD["metadata"], "uid": "u1"}})] * 2
    assert (await client.create(POD))["metadata"]["uid"] == "u1"
    assert await client.create(POD, read_back=False) == {}
    assert [r[3] for r in script.requests] == [POD, POD]  # both were sent in full


async def test_list_follows_continue_tokens(server: tuple[Script, KubeClient]) -> None:
    script, client = server
    script.replies = [
        (
            200,
            {"items": [{"metadata": {"name": "a"}}], "metadata": {"continue": "c1", "resourceVersion": "5"}},
        ),
        (200, {"items": [{"metadata": {"name": "b"}}], "metadata": {"resourceVersion": "5"}}),
    ]
    items, rv = await client.list("v1", "Pod", None, label_selector="a=b", limit=1)
    assert [i["metadata"]["name"] for i in items] == ["a", "b"] and rv == "5"
    assert script.requests[0][1] == "/api/v1/pods"
    assert script.requests[0][2] == {"labelSelector": "a=b", "limit": "1"}
    assert script.requests[1][2] == {"labelSelector": "a=b", "limit": "1", "continue": "c1"}


async def test_list_pages_yields_each_page_before_asking_for_the_next(
    server: tuple[Script, KubeClient],
) -> None:
    script, client = server
    script.replies = [
        (
            200,
            {"items": [{"metadata": {"name": "a"}}], "metadata": {"continue": "c1", "resourceVersion": "7"}},
        ),
        (200, {"items": [{"metadata": {"name": "b"}}], "metadata": {"resourceVersion": "7"}}),
    ]
    seen = []
    async for page, rv in client.list_pages("v1", "Pod", "ns", limit=1):
        seen.append(([i["metadata"]["name"] for i in page], rv, len(script.requests)))
    assert seen == [(["a"], "7", 1), (["b"], "7", 2)]


async def test_retries_5xx_and_429_with_retry_after(server: tuple[Script, KubeClient]) -> None:
    script, client = server
    script.replies = [
        (503, status(503, "ServiceUnavailable")),
        (429, status(429, "TooManyRequests"), {"Retry-After": "0"}),
        (200, {"ok": 1}),
    ]
    assert await client.get("v1", "Pod", "ns", "p") == {"ok": 1}
    assert len(script.requests) == 3 and client.retries_total == 2


async def test_429_retry_after_is_honoured(server: tuple[Script, KubeClient]) -> None:
    script, client = server
    script.replies = [(429, status(429, "TooManyRequests"), {"Retry-After": "0.2"}), (200, {})]
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    await client.get("v1", "Pod", "ns", "p")
    assert loop.time() - t0 >= 0.19


async def test_conflict_and_not_found_are_not_retried(server: tuple[Script, KubeClient]) -> None:
    script, client = server
    script.replies = [(409, status(409, "AlreadyExists"))]
    with pytest.raises(ApiError) as exc:
        await client.create(POD)
    assert exc.value.already_exists and len(script.requests) == 1
    script.replies = [(404, status(404, "NotFound"))]
    with pytest.raises(ApiError) as exc:
        await client.get("v1", "Pod", "ns", "p")
    assert exc.value.not_found and exc.value.message == "NotFound!"


async def test_generate_name_create_is_not_retried_on_5xx(server: tuple[Script, KubeClient]) -> None:
    script, client = server
    script.replies = [(500, status(500, "InternalError"))]
    with pytest.raises(ApiError) as exc:
        await client.create(
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": "p-", "namespace": "ns"}}
        )
    assert exc.value.server_error and len(script.requests) == 1


async def test_gives_up_after_max_attempts(server: tuple[Script, KubeClient]) -> None:
    script, client = server
    script.replies = [(503, status(503, "ServiceUnavailable"))] * 10
    with pytest.raises(ApiError) as exc:
        await client.get("v1", "Pod", "ns", "p")
    assert exc.value.status == 503 and len(script.requests) == client.max_attempts


async def test_non_json_error_body(server: tuple[Script, KubeClient]) -> None:
    script, client = server

    async def plain(request: web.Request) -> web.Response:
        return web.Response(status=403, text="forbidden by proxy")

    script.replies = [plain]
    with pytest.raises(ApiError) as exc:
        await client.get("v1", "Pod", "ns", "p")
    assert exc.value.status == 403 and exc.value.reason == "Forbidden"


async def test_connection_error_is_retried_then_raised() -> None:
    client = KubeClient.for_url("http://127.0.0.1:9", qps=0, backoff_base=0.001, max_attempts=2)
    with pytest.raises(ApiError) as exc:
        await client.get("v1", "Pod", "ns", "p")
    assert exc.value.connection_error and client.requests_total == 2
    await client.close()


async def test_a_configured_proxy_carries_every_request() -> None:
    """With `proxy-url` in the kubeconfig, calls go to the proxy in absolute form (via aiohttp)."""
    request_lines: list[str] = []

    async def proxy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        request_lines.append(head.split(b"\r\n", 1)[0].decode())
        body = b'{"kind": "Pod", "metadata": {"name": "p"}}'
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(proxy, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    config = Configuration(host="http://kube.example.invalid:6443")
    config.proxy = f"http://127.0.0.1:{port}"
    async with KubeClient(config, qps=0) as client:
        assert (await client.get("v1", "Pod", "ns", "p"))["metadata"]["name"] == "p"
    server.close()
    assert request_lines == ["GET http://kube.example.invalid:6443/api/v1/namespaces/ns/pods/p HTTP/1.1"]


async def test_update_status_retrying_rereads_on_conflict(server: tuple[Script, KubeClient]) -> None:
    script, client = server
    job = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "t", "namespace": "ns"}}
    script.replies = [
        (200, {**job, "metadata": {**job["metadata"], "resourceVersion": "1"}}),
        (409, status(409, "Conflict")),
        (200, {**job, "metadata": {**job["metadata"], "resourceVersion": "2"}}),
        (200, {"done": True}),
    ]
    seen: list[str] = []

    def mutate(obj: dict[str, Any]) -> dict[str, Any]:
        seen.append(obj["metadata"]["resourceVersion"])
        return {"conditions": []}

    assert await client.update_status_retrying("kubeflow.org/v1", "TFJob", "ns", "t", mutate) == {
        "done": True
    }
    assert seen == ["1", "2"]
    assert script.requests[3][3]["metadata"]["resourceVersion"] == "2"


async def test_watch_streams_events_and_passes_parameters(server: tuple[Script, KubeClient]) -> None:
    script, client = server

    async def stream(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse()
        await resp.prepare(request)
        for ev in (
            {"type": "ADDED", "object": {"metadata": {"name": "a", "resourceVersion": "2"}}},
            {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "3"}}},
        ):
            await resp.write(json.dumps(ev).encode() + b"\n")
        await resp.write_eof()
        return resp

    script.replies = [stream]
    events = [
        e
        async for e in client.watch(
            "v1", "Pod", "ns", resource_version="1", label_selector="x", timeout_seconds=30
        )
    ]
    assert [e["type"] for e in events] == ["ADDED", "BOOKMARK"]
    assert script.requests[0][2] == {
        "watch": "true",
        "resourceVersion": "1",
        "labelSelector": "x",
        "timeoutSeconds": "30",
        "allowWatchBookmarks": "true",
    }


async def test_watch_http_410_raises_gone(server: tuple[Script, KubeClient]) -> None:
    script, client = server
    script.replies = [(410, status(410, "Expired"))]
    with pytest.raises(ApiError) as exc:
        async for _ in client.watch("v1", "Pod", resource_version="1"):
            pass
    assert exc.value.gone


def test_a_server_url_without_scheme_is_refused_up_front() -> None:
    with pytest.raises(
        ValueError, match="unsupported URL scheme in 'localhost:6443': use http:// or https://"
    ):
        KubeClient(Configuration(host="localhost:6443"))
