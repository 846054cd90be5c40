"""What a running local plane exposes to the rest of the machine, and who can use it.

The plane listens on the API server's two loopback ports only (HTTPS for users, plain HTTP for
its own components; the same token and checks on both); the node's exec endpoint is a Unix socket
in a private directory; the kubeconfig is 0600. As root, the test also
plays another local user (``nobody``): no token, no kubeconfig, no exec socket. Every client of
ours still gets in with what it is given: the plane's own client and a kubeconfig-based one.
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
from pathlib import Path

import aiohttp
import pytest
from cli_plane import pytorchjob

import kubetrain
from kubetrain.cli.plane import LocalPlane

NOBODY = 65534
SYSTEM_PYTHON = Path("/usr/bin/python3")

# Run as `nobody`: what can another local user do with the plane?
INTRUDER = r"""
import json, socket, ssl, sys, urllib.error, urllib.request
kubeconfig, exec_socket, *urls = sys.argv[1:]
out = {}
ctx = ssl.create_default_context()
ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
for url in urls:
    for name, path, data in [("list_secrets", "/api/v1/secrets", None),
                             ("create_pod", "/api/v1/namespaces/default/pods", b'{"metadata":{"name":"x"}}')]:
        req = urllib.request.Request(url + path, data=data, headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, context=ctx, timeout=5) as resp:
                out[f"{name} {url[:5]}"] = resp.status
        except urllib.error.HTTPError as err:
            out[f"{name} {url[:5]}"] = err.code
try:
    open(kubeconfig).read()
    out["read_kubeconfig"] = "read"
except OSError as err:
    out["read_kubeconfig"] = type(err).__name__
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(exec_socket)
    out["exec_socket"] = "connected"
except OSError as err:
    out["exec_socket"] = type(err).__name__
print(json.dumps(out))
"""


def _listening_tcp_inodes() -> dict[int, int]:
    """{socket inode: port} of every listening TCP socket on the machine."""
    found = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A":  # TCP_LISTEN
                found[int(fields[9])] = int(fields[1].rsplit(":", 1)[1], 16)
    return found


def _own_socket_inodes() -> set[int]:
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(int(target[8:-1]))
    return inodes


def _own_listening_ports() -> set[int]:
    own = _own_socket_inodes()
    return {port for inode, port in _listening_tcp_inodes().items() if inode in own}


@pytest.fixture
async def plane(tmp_path: Path) -> LocalPlane:
    before = _own_listening_ports()
    plane = LocalPlane(working_dir=tmp_path)
    await plane.start()
    plane.listened = _own_listening_ports() - before  # type: ignore[attr-defined]
    try:
        yield plane
    finally:
        await plane.stop()


async def test_the_plane_listens_on_the_api_server_ports_only(plane: LocalPlane) -> None:
    plain = plane.server.plain_url
    assert plane.url.startswith("https://127.0.0.1:") and plain.startswith("http://127.0.0.1:")
    assert plane.listened == {plane.server.port, int(plain.rsplit(":", 1)[1])}  # type: ignore[attr-defined]
    async with aiohttp.ClientSession() as session:
        attack = {"Host": "evil.example", "Authorization": f"Bearer {plane.token}"}
        async with session.get(plain + "/api/v1/secrets", headers=attack) as resp:
            assert resp.status == 403
        async with session.get(plain + "/api/v1/secrets", headers={"Origin": "http://evil.example"}) as resp:
            assert resp.status == 403
    assert plane.agent is not None and plane.agent.kubelet_server is None
    sock = plane.agent.exec_service.socket_path
    assert stat.S_ISSOCK(sock.stat().st_mode) and stat.S_IMODE(sock.stat().st_mode) == 0o600
    assert stat.S_IMODE(sock.parent.stat().st_mode) == 0o700


def _sync_clients(plane: LocalPlane, kubeconfig: Path) -> None:
    """The blocking Client (it runs its own loop; the plane's loop must stay free meanwhile)."""
    with kubetrain.Client(str(kubeconfig)) as sync:
        assert sync.get("pytorchjob", "access")["metadata"]["name"] == "access"
    with kubetrain.Client(url=plane.url, token=plane.token, ca_file=plane.server.ca_file) as sync:
        assert sync.get("pytorchjob", "access")["metadata"]["name"] == "access"
    with (
        kubetrain.Client(url=plane.url, ca_file=plane.server.ca_file) as anonymous,
        pytest.raises(kubetrain.client.KubetrainError, match="Unauthorized"),
    ):
        anonymous.get("pytorchjob", "access")


async def test_our_clients_get_in_with_what_they_are_given(plane: LocalPlane, tmp_path: Path) -> None:
    async with plane.client() as aio:
        await aio.create(pytorchjob("access", "print('in')"))
        assert [j["metadata"]["name"] for j in await aio.list("pytorchjob")] == ["access"]
    await asyncio.to_thread(_sync_clients, plane, plane.write_kubeconfig(tmp_path / "kubeconfig"))


@pytest.mark.skipif(os.geteuid() != 0 or not SYSTEM_PYTHON.exists(), reason="needs root to become nobody")
async def test_another_local_user_gets_nothing(plane: LocalPlane, tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    tmp_path.chmod(0o755)
    shared.chmod(0o755)
    kubeconfig = plane.write_kubeconfig(shared / "kubeconfig")
    assert plane.agent is not None
    intruder = await asyncio.create_subprocess_exec(
        str(SYSTEM_PYTHON),
        "-I",
        "-c",
        INTRUDER,
        str(kubeconfig),
        str(plane.agent.exec_service.socket_path),
        plane.url,
        plane.server.plain_url,
        user=NOBODY,
        group=NOBODY,
        extra_groups=[],
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd="/",
    )
    stdout, stderr = await asyncio.wait_for(intruder.communicate(), 30)
    assert intruder.returncode == 0, stderr.decode()
    assert json.loads(stdout) == {
        "list_secrets https": 401,
        "create_pod https": 401,
        "list_secrets http:": 401,
        "create_pod http:": 401,
        "read_kubeconfig": "PermissionError",
        "exec_socket": "PermissionError",
    }
