"""Authentication and request hygiene: who gets in, and which bodies are read.

Both servers answer a wrong bearer token with the same 401 Status, let anyone read the public-info
paths, and refuse a body of a type no serializer reads with 415. The embedded server also refuses
what reaches it through a browser (a foreign Host after DNS rebinding, a foreign Origin): the
attack these tests replay created a pod that ran `id` before the server checked any of this.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import stat
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from kubetrain.embedded.apiserver import EmbeddedAPIServer

from .helpers import NS, Http

UNAUTHORIZED = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": "Unauthorized",
    "reason": "Unauthorized",
    "code": 401,
}
WRONG = {"Authorization": "Bearer not-the-token"}


def _pod(name: str, command: list[str] | None = None) -> dict[str, Any]:
    container = {"name": "c", "image": "busybox", "command": command or ["id"]}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [container]},
    }


async def _absent(http: Http, ns: NS, name: str) -> bool:
    status, _, _ = await http.get(f"{ns.pods}/{name}")
    return status == 404


# --- authentication: both servers ---------------------------------------------------------------


async def test_a_wrong_token_gets_401_unauthorized(anonymous_http: Http, http: Http, ns: NS) -> None:
    for method, path, body in [
        ("GET", "/api/v1/namespaces", None),
        ("GET", ns.path("secrets"), None),
        ("POST", ns.pods, _pod("wrong-token")),
        ("GET", "/healthz", None),  # authentication fails before the anonymous paths are considered
    ]:
        status, answer, headers = await anonymous_http.request(method, path, body, headers=WRONG)
        assert (status, answer) == (401, UNAUTHORIZED), (method, path)
        assert headers["Content-Type"] == "application/json"
    assert await _absent(http, ns, "wrong-token")


async def test_the_public_info_paths_are_anonymous(anonymous_http: Http) -> None:
    for path in ("/healthz", "/livez", "/readyz"):
        status, body, _ = await anonymous_http.get(path)
        assert (status, body) == (200, "ok"), path
    status, version, _ = await anonymous_http.get("/version")
    assert status == 200 and version["gitVersion"].startswith("v1.")


@pytest.mark.deliberate_difference(
    "anonymous requests outside the public-info paths get 401: the embedded server has no RBAC to "
    "deny them with, as kube-apiserver with anonymous access limited to those paths"
)
async def test_an_anonymous_request_is_denied_by_authorization(
    anonymous_http: Http, http: Http, ns: NS
) -> None:
    status, body, _ = await anonymous_http.post(ns.pods, _pod("anonymous"))
    assert status == 403 and body["reason"] == "Forbidden"
    assert 'User "system:anonymous" cannot create resource "pods"' in body["message"]
    assert await _absent(http, ns, "anonymous")


@pytest.mark.embedded_only("kube-apiserver lets anonymous requests through to RBAC (403)")
async def test_no_token_gets_401_and_creates_nothing(anonymous_http: Http, http: Http, ns: NS) -> None:
    for method, path, body in [
        ("GET", "/api", None),
        ("GET", "/api/v1/namespaces", None),
        ("GET", ns.path("secrets"), None),
        ("POST", ns.pods, _pod("no-token")),
        ("DELETE", f"/api/v1/namespaces/{ns.name}", None),
        ("POST", "/healthz", None),
        ("GET", "/livez/ping", None),
    ]:
        status, answer, _ = await anonymous_http.request(method, path, body)
        assert (status, answer) == (401, UNAUTHORIZED), (method, path)
    assert await _absent(http, ns, "no-token")
    status, _, _ = await http.get(f"/api/v1/namespaces/{ns.name}")
    assert status == 200


@pytest.mark.embedded_only("the server's own token")
async def test_the_token_is_a_bearer_token_and_nothing_else(
    server: EmbeddedAPIServer, anonymous_http: Http, http: Http, ns: NS
) -> None:
    token = server.token
    assert len(token) >= 40 and token != EmbeddedAPIServer().token
    refused = [
        {"Authorization": f"Basic {token}"},
        {"Authorization": token},
        {"Cookie": f"token={token}; Authorization=Bearer {token}"},
        {"X-Auth-Token": token},
        {"Authorization": f"Bearer {token}x"},
        {"Authorization": f"Bearer {token[:-1]}"},
    ]
    for headers in refused:
        status, _, _ = await anonymous_http.post(ns.pods, _pod("refused"), headers=headers)
        assert status == 401, headers
    status, _, _ = await anonymous_http.post(ns.pods, _pod("refused"), params={"access_token": token})
    assert status == 401
    assert await _absent(http, ns, "refused")
    status, _, _ = await anonymous_http.post(
        ns.pods, _pod("accepted"), headers={"Authorization": f"bearer {token}"}
    )
    assert status == 201


@pytest.mark.embedded_only("raw bytes on the embedded server's socket")
async def test_a_token_of_undecodable_bytes_is_401_not_500(server: EmbeddedAPIServer) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port, ssl=server.client_ssl_context())
    writer.write(
        b"GET /api/v1/namespaces HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Authorization: Bearer \xff\xfe" + server.token.encode() + b"\r\nConnection: close\r\n\r\n"
    )
    await writer.drain()
    answer = await reader.read()
    writer.close()
    assert answer.startswith(b"HTTP/1.1 401 Unauthorized\r\n"), answer[:100]


# --- content types: both servers -----------------------------------------------------------------


async def test_a_body_of_another_media_type_gets_415(http: Http, ns: NS, real: bool) -> None:
    body = json.dumps(_pod("plain")).encode()
    for content_type in ("text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded"):
        status, answer, _ = await http.request("POST", ns.pods, raw=body, content_type=content_type)
        assert status == 415, content_type
        assert answer["reason"] == "UnsupportedMediaType" and answer["code"] == 415
        accepted = answer["message"].removeprefix(
            "the body of the request was in an unknown format - accepted media types include: "
        )
        assert accepted != answer["message"]
        assert {"application/json", "application/yaml"} <= set(accepted.split(", "))
        if not real:
            assert accepted == "application/json, application/yaml"
    assert await _absent(http, ns, "plain")
    status, _, _ = await http.request("POST", ns.configmaps, raw=b"{}", content_type="multipart/form-data")
    assert status == 415


async def test_the_kubernetes_media_types_are_read(http: Http, ns: NS) -> None:
    status, _, _ = await http.request(
        "POST", ns.pods, raw=json.dumps(_pod("json")).encode(), content_type="application/json; charset=utf-8"
    )
    assert status == 201
    status, _, _ = await http.request(
        "POST", ns.pods, raw=yaml.safe_dump(_pod("yaml")).encode(), content_type="application/yaml"
    )
    assert status == 201
    status, _, _ = await http.request(
        "POST", ns.pods, raw=json.dumps(_pod("untyped")).encode(), content_type=""
    )
    assert status == 201  # no Content-Type: JSON, the first serializer
    # The update goes to a ConfigMap: on a real plane the scheduler and kubelet write a pod
    # between our GET and PUT, and the PUT would meet 409 Conflict instead of the media type.
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "json"}, "data": {"a": "1"}}
    status, config, _ = await http.post(ns.configmaps, config)
    assert status == 201
    config["data"] = {"a": "2"}
    status, _, _ = await http.request(
        "PUT", f"{ns.configmaps}/json", raw=json.dumps(config).encode(), content_type="text/plain"
    )
    assert status == 415
    status, updated, _ = await http.put(f"{ns.configmaps}/json", config)
    assert status == 200 and updated["data"] == {"a": "2"}
    options = json.dumps({"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0}).encode()
    status, _, _ = await http.request("DELETE", f"{ns.pods}/yaml", raw=options, content_type="text/plain")
    assert status == 415
    status, _, _ = await http.request("DELETE", f"{ns.pods}/yaml", raw=options)
    assert status == 200


# --- what reaches the embedded server through a browser ------------------------------------------


def _auth(server: EmbeddedAPIServer) -> dict[str, str]:
    return {"Authorization": f"Bearer {server.token}"}


@pytest.mark.embedded_only("kube-apiserver checks neither Host nor Origin")
async def test_the_browser_attack_is_refused(server: EmbeddedAPIServer, http: Http, ns: NS) -> None:
    """The finding, replayed: a page's "simple" cross-origin POST after DNS rebinding."""
    attack = {"Origin": "http://evil.example", "Host": f"evil.example:{server.port}"}
    body = json.dumps(_pod("pwned", ["sh", "-c", "id > /tmp/pwned"])).encode()
    status, _, _ = await http.request("POST", ns.pods, raw=body, content_type="text/plain", headers=attack)
    assert status == 403
    # Each defence alone refuses it, whatever the others let through.
    for headers, content_type, code in [
        ({"Host": f"evil.example:{server.port}"}, "application/json", 403),
        ({"Origin": "http://evil.example"}, "application/json", 403),
        ({"Origin": "null"}, "application/json", 403),
        ({}, "text/plain", 415),
    ]:
        status, answer, _ = await http.request(
            "POST", ns.pods, raw=body, content_type=content_type, headers=headers
        )
        assert status == code, (headers, content_type)
        assert answer["kind"] == "Status" and answer["code"] == code
    assert await _absent(http, ns, "pwned")


@pytest.mark.embedded_only("the embedded server's Host and Origin checks")
async def test_a_foreign_host_or_origin_is_refused_with_a_reason(
    server: EmbeddedAPIServer, http: Http
) -> None:
    port = server.port
    status, answer, _ = await http.get("/api/v1/namespaces", headers={"Host": f"attacker.example:{port}"})
    assert status == 403 and answer["reason"] == "Forbidden"
    assert f'host "attacker.example:{port}" is not allowed' in answer["message"]
    assert "127.0.0.1, localhost or [::1]" in answer["message"]
    for host in ("127.0.0.1.evil.example", "localhost.evil.example", "10.0.0.1", "[::2]", "evil.example"):
        status, _, _ = await http.get("/version", headers={"Host": host})
        assert status == 403, host
    status, answer, _ = await http.get("/api/v1/namespaces", headers={"Origin": "https://evil.example"})
    assert status == 403 and 'origin "https://evil.example" is not allowed' in answer["message"]
    for host in (
        "127.0.0.1",
        f"127.0.0.1:{port}",
        "localhost",
        f"LOCALHOST:{port}",
        "[::1]",
        f"[::1]:{port}",
    ):
        status, _, _ = await http.get("/api/v1/namespaces", headers={"Host": host})
        assert status == 200, host
    for origin in (f"http://127.0.0.1:{port}", "http://localhost:3000", "https://[::1]:8443"):
        status, _, _ = await http.get("/api/v1/namespaces", headers={"Origin": origin})
        assert status == 200, origin


@pytest.mark.embedded_only("a preflight the browser would send first")
async def test_no_cors_preflight_is_granted(server: EmbeddedAPIServer, anonymous_http: Http) -> None:
    status, _, headers = await anonymous_http.request(
        "OPTIONS",
        "/api/v1/namespaces/default/pods",
        headers={"Origin": "http://evil.example", "Access-Control-Request-Method": "POST"},
    )
    assert status == 403
    assert not any(h.lower().startswith("access-control-") for h in headers)


@pytest.mark.embedded_only("the kubeconfig the embedded server writes")
async def test_the_kubeconfig_holds_the_token_and_ca_and_only_its_owner_reads_it(
    server: EmbeddedAPIServer, tmp_path: Path
) -> None:
    path = server.write_kubeconfig(tmp_path / "kube" / "config")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    cfg = yaml.safe_load(path.read_text())
    assert cfg["users"][0]["user"] == {"token": server.token}
    cluster = cfg["clusters"][0]["cluster"]
    assert cluster["server"] == server.url and cluster["server"].startswith("https://127.0.0.1:")
    # Rewriting replaces the file (a symlink planted there is not followed) and keeps it 0600.
    target = tmp_path / "elsewhere"
    target.write_text("untouched")
    path.unlink()
    path.symlink_to(target)
    server.write_kubeconfig(path)
    assert target.read_text() == "untouched" and not path.is_symlink()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in path.parent.iterdir()] == ["config"]


@pytest.mark.embedded_only("the embedded server's certificate")
async def test_tls_is_verified_against_the_servers_own_ca(server: EmbeddedAPIServer) -> None:
    async with aiohttp.ClientSession() as session:
        with pytest.raises(aiohttp.ClientConnectorCertificateError):
            await session.get(server.url + "/healthz")  # the system CAs do not know it
        other = EmbeddedAPIServer()
        await other.start()
        try:
            with pytest.raises(aiohttp.ClientConnectorCertificateError):
                await session.get(server.url + "/healthz", ssl=other.client_ssl_context())
        finally:
            await other.stop()
        for host in ("127.0.0.1", "localhost"):
            url = server.url.replace("127.0.0.1", host)
            async with session.get(url + "/healthz", ssl=server.client_ssl_context()) as resp:
                assert resp.status == 200
    ctx = ssl.create_default_context(cafile=server.ca_file)
    async with aiohttp.ClientSession() as session, session.get(server.url + "/livez", ssl=ctx) as resp:
        assert resp.status == 200
