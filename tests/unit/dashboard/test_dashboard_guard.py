"""Who may read the dashboard: its own user, loopback Host, its own Origin, GET only, no CORS, no framing.

A dashboard with no live cluster (history pages only) on a real socket, asked over HTTP as a
browser (or a hostile page through it) would ask.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from kubetrain.dashboard.peers import owner, proc_address, proc_available
from kubetrain.dashboard.server import Dashboard
from kubetrain.history.store import HistoryStore

JOB = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "PyTorchJob",
    "metadata": {
        "name": "digits",
        "namespace": "default",
        "uid": "uid-1",
        "creationTimestamp": "2024-05-01T10:00:00Z",
    },
    "spec": {
        "pytorchReplicaSpecs": {
            "Master": {
                "replicas": 1,
                "template": {"spec": {"containers": [{"name": "pytorch", "image": "pytorch/pytorch"}]}},
            }
        }
    },
    "status": {
        "startTime": "2024-05-01T10:00:01Z",
        "completionTime": "2024-05-01T10:01:00Z",
        "conditions": [{"type": "Succeeded", "status": "True", "lastTransitionTime": "2024-05-01T10:01:00Z"}],
    },
}


@pytest.fixture
async def dashboard(tmp_path: Path) -> AsyncIterator[Dashboard]:
    store = HistoryStore(tmp_path / "history.db")
    store.record_job(JOB)
    store.record_log(
        "uid-1", "pod-1", "digits-master-0", "pytorch", 0, 0, "epoch=1 loss=0.9\nepoch=2 loss=0.4\n"
    )
    store.record_log("uid-1", "pod-1", "digits-master-0", "init-pytorch", 0, 0, "waiting\n")
    store.mark_deleted("uid-1", "2024-05-01T10:02:00Z")
    store.close()
    dash = Dashboard(None, history=tmp_path / "history.db")
    await dash.start(0)
    try:
        yield dash
    finally:
        await dash.stop()


async def ask(
    dash: Dashboard, path: str, method: str = "GET", **headers: str
) -> tuple[int, dict[str, str], bytes]:
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, f"http://127.0.0.1:{dash.port}{path}", headers=headers) as response,
    ):
        return response.status, dict(response.headers), await response.read()


async def test_it_listens_on_127_0_0_1_only(dashboard: Dashboard) -> None:
    assert dashboard.url == f"http://127.0.0.1:{dashboard.port}/"
    runner = dashboard._runner
    assert runner is not None
    addresses = {site.name for site in runner.sites}
    assert addresses == {f"http://127.0.0.1:{dashboard.port}"}


@pytest.mark.parametrize("host", ["localhost:{port}", "127.0.0.1:{port}", "[::1]:{port}", "127.0.0.1"])
async def test_loopback_hosts_are_served(dashboard: Dashboard, host: str) -> None:
    status, _, _ = await ask(dashboard, "/api/history", Host=host.format(port=dashboard.port))
    assert status == 200


@pytest.mark.parametrize(
    "host", ["evil.example:{port}", "evil.example", "127.0.0.1.nip.io:{port}", "0.0.0.0"]
)
async def test_other_hosts_are_refused_as_dns_rebinding(dashboard: Dashboard, host: str) -> None:
    for path in ("/", "/api/history", "/api/history/uid-1", "/static/app.js"):
        status, _, body = await ask(dashboard, path, Host=host.format(port=dashboard.port))
        assert status == 403, path
        assert b"DNS rebinding" in body
        assert "uid-1" not in body.decode()


async def test_only_its_own_origin_may_ask(dashboard: Dashboard) -> None:
    own = f"http://127.0.0.1:{dashboard.port}"
    assert (await ask(dashboard, "/api/history", Origin=own))[0] == 200
    for origin in (
        "https://evil.example",
        "http://127.0.0.1:1",
        f"http://localhost:{dashboard.port}",
        "null",
    ):
        status, _, body = await ask(dashboard, "/api/history", Origin=origin)
        assert status == 403, origin
        assert b"own pages only" in body


async def test_other_sites_subresource_loads_of_the_api_are_refused_but_a_link_to_a_page_is_not(
    dashboard: Dashboard,
) -> None:
    for site in ("cross-site", "same-site"):
        assert (await ask(dashboard, "/api/history", **{"Sec-Fetch-Site": site}))[0] == 403
        assert (await ask(dashboard, "/static/app.js", **{"Sec-Fetch-Site": site}))[0] == 403
    assert (await ask(dashboard, "/history", **{"Sec-Fetch-Site": "cross-site"}))[0] == 200
    assert (await ask(dashboard, "/api/history", **{"Sec-Fetch-Site": "same-origin"}))[0] == 200


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE", "OPTIONS"])
async def test_it_is_read_only_and_never_answers_cors(dashboard: Dashboard, method: str) -> None:
    own = f"http://127.0.0.1:{dashboard.port}"
    status, headers, _ = await ask(
        dashboard,
        "/api/history/uid-1",
        method,
        Origin=own,
        **{"Access-Control-Request-Method": "DELETE", "Content-Type": "application/json"},
    )
    assert status == 405
    assert headers["Allow"] == "GET, HEAD"
    assert not [h for h in headers if h.lower().startswith("access-control-")]


async def test_every_answer_forbids_framing_sniffing_and_foreign_scripts(dashboard: Dashboard) -> None:
    for path in ("/", "/api/history", "/nope", "/static/app.js"):
        _, headers, _ = await ask(dashboard, path, Origin=f"http://127.0.0.1:{dashboard.port}")
        assert not [h for h in headers if h.lower().startswith("access-control-")]
        assert "frame-ancestors 'none'" in headers["Content-Security-Policy"]
        assert "script-src 'self'" in headers["Content-Security-Policy"]
        assert headers["X-Frame-Options"] == "DENY"
        assert headers["X-Content-Type-Options"] == "nosniff"
        assert headers["Cross-Origin-Resource-Policy"] == "same-origin"


async def test_assets_are_the_packaged_files_only(dashboard: Dashboard) -> None:
    status, headers, body = await ask(dashboard, "/static/app.js")
    assert status == 200 and headers["Content-Type"].startswith("text/javascript")
    assert b"EventSource" in body
    for path in (
        "/static/../server.py",
        "/static/%2e%2e%2fserver.py",
        "/static/index.html",
        "/static/nope.js",
    ):
        assert (await ask(dashboard, path))[0] == 404, path
    status, headers, body = await ask(dashboard, "/jobs/default/PyTorchJob/digits")
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    assert b'<script type="module" src="/static/app.js">' in body
    assert b"http" not in body.replace(b"http-equiv", b"")  # nothing loaded from elsewhere


async def test_the_history_pages_data_has_the_jobs_logs_and_curves(dashboard: Dashboard) -> None:
    _, _, body = await ask(dashboard, "/api/history")
    (row,) = json.loads(body)["jobs"]
    assert (row["name"], row["state"], row["deleted"]) == ("digits", "Succeeded", "2024-05-01T10:02:00Z")
    status, _, body = await ask(dashboard, "/api/history/uid-1")
    assert status == 200
    record = json.loads(body)
    assert record["job"]["specs"][0]["containers"] == [{"name": "pytorch", "image": "pytorch/pytorch"}]
    logs = {(log["container"], log["init"]): log["lines"] for log in record["logs"]}
    assert logs == {
        ("init-pytorch", True): ["waiting"],
        ("pytorch", False): ["epoch=1 loss=0.9", "epoch=2 loss=0.4"],
    }
    loss = next(s for s in record["series"] if s["name"] == "loss")
    assert (loss["replica"], [p[2] for p in loss["points"]]) == ("master-0", [0.9, 0.4])
    assert (await ask(dashboard, "/api/history/nope"))[0] == 404
    assert (await ask(dashboard, "/api/jobs"))[0] == 404  # no live cluster behind this one


async def test_a_taken_port_falls_back_to_a_free_one(dashboard: Dashboard) -> None:
    second = Dashboard(None)
    await second.start(dashboard.port)
    try:
        assert second.fell_back and second.port not in (0, dashboard.port)
    finally:
        await second.stop()
    with pytest.raises(OSError):
        third = Dashboard(None)
        await third.start(dashboard.port, fallback=False)


def test_a_socket_address_is_written_as_the_kernel_lists_it() -> None:
    assert proc_address("127.0.0.1", 8080) == "0100007F:1F90"
    assert proc_address("::1", 80) == "00000000000000000000000001000000:0050"


@pytest.mark.skipif(not proc_available(), reason="needs /proc/net/tcp (Linux)")
async def test_it_knows_its_clients_user(dashboard: Dashboard) -> None:
    _, writer = await asyncio.open_connection("127.0.0.1", dashboard.port)
    try:
        peer = writer.get_extra_info("sockname")
        assert owner(peer[:2], ("127.0.0.1", dashboard.port)) == os.getuid()
        assert owner(peer[:2], ("127.0.0.1", 1)) is None
    finally:
        writer.close()


SYSTEM_PYTHON = "/usr/bin/python3"
"""An interpreter another user may run (this one may live in root's home)."""


@pytest.mark.skipif(
    os.getuid() != 0 or not proc_available() or not os.path.exists(SYSTEM_PYTHON),
    reason="needs root (to connect as another user), /proc and /usr/bin/python3",
)
async def test_another_user_of_the_machine_is_refused(dashboard: Dashboard) -> None:
    program = (
        "import urllib.request, urllib.error, sys\n"
        "try:\n"
        f"    urllib.request.urlopen('http://127.0.0.1:{dashboard.port}/api/history', timeout=10)\n"
        "except urllib.error.HTTPError as err:\n"
        "    sys.stdout.write(f'{err.code} {err.read().decode()}')\n"
    )
    done = await asyncio.to_thread(
        subprocess.run,
        [SYSTEM_PYTHON, "-I", "-c", program],
        user=65534,
        group=65534,
        cwd="/",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stdout.startswith("403 "), (done.stdout, done.stderr)
    assert "serves the user who started it only" in done.stdout
    assert "uid-1" not in done.stdout
    assert (await ask(dashboard, "/api/history"))[0] == 200  # its own user still is served
