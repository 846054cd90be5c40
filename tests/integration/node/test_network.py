"""Pods reach each other by Service names on the same port, each on its own loopback IP."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kubetrain.embedded.node import KubeAPI, NodeAgent
from kubetrain.embedded.node.network import PodCIDRLease

from .conftest import container, create, pod, read_log, wait_phase

PEER = r"""
import json, os, socket, sys, threading, time
me, peer = os.environ["ME"], sys.argv[1]
srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("0.0.0.0", 2222)); srv.listen(4)
got = {}
def serve():
    conn, addr = srv.accept()
    got["from"], got["msg"] = addr[0], conn.recv(64).decode()
    conn.sendall(me.encode())
threading.Thread(target=serve, daemon=True).start()
for _ in range(200):
    try:
        c = socket.create_connection((peer, 2222), timeout=2); break
    except OSError:
        time.sleep(0.05)
peer_ip = socket.gethostbyname(peer)
fqdn_ip = socket.gethostbyname(me + ".job.default.svc.cluster.local")
c.sendall(me.encode()); reply = c.recv(64).decode()
for _ in range(200):
    if "msg" in got: break
    time.sleep(0.05)
print(json.dumps({"bound": srv.getsockname()[0], "hostname": socket.gethostname(), "reply": reply,
                  "peer_ip": peer_ip, "fqdn_ip": fqdn_ip, **got}))
"""


def service(name: str, selector: dict[str, str]) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name},
        "spec": {"clusterIP": "None", "selector": selector, "ports": [{"name": "p", "port": 2222}]},
    }


def replica(name: str, peer: str) -> dict:
    body = pod(
        name,
        container("main", PEER, args=[peer], env=[{"name": "ME", "value": name}]),
        restartPolicy="Never",
        hostname=name,
        subdomain="job",
    )
    body["spec"]["containers"][0]["command"].append(peer)
    body["metadata"]["labels"] = {"replica": name, "job": "job"}
    return body


async def test_two_pods_bind_same_port_and_talk_by_service_name(api: KubeAPI, agent: NodeAgent) -> None:
    for name in ("job-worker-0", "job-worker-1"):
        await create(api, service(name, {"replica": name}))
    await create(api, service("job", {"job": "job"}))
    await create(api, replica("job-worker-0", "job-worker-1.default.svc"))
    await create(api, replica("job-worker-1", "job-worker-0"))
    a = await wait_phase(api, "job-worker-0", "Succeeded", "Failed")
    b = await wait_phase(api, "job-worker-1", "Succeeded", "Failed")
    out_a, out_b = (
        json.loads(await read_log(api, "job-worker-0")),
        json.loads(await read_log(api, "job-worker-1")),
    )
    ip_a, ip_b = a["status"]["podIP"], b["status"]["podIP"]
    assert ip_a != ip_b
    assert (out_a["bound"], out_b["bound"]) == (ip_a, ip_b)  # 0.0.0.0 became the pod's own address
    assert (out_a["reply"], out_b["reply"]) == ("job-worker-1", "job-worker-0")
    assert (out_a["from"], out_b["from"]) == (ip_b, ip_a)  # peers see each other's pod IPs
    assert (out_a["peer_ip"], out_a["hostname"]) == (ip_b, "job-worker-0")
    assert (out_a["fqdn_ip"], out_b["fqdn_ip"]) == (ip_a, ip_b)  # hostname.subdomain records
    assert "job-worker-0" not in (agent.root / "net" / "hosts.default").read_text()  # finished: name gone


TORCH = r"""
import os, torch, torch.distributed as dist
dist.init_process_group("gloo", timeout=__import__("datetime").timedelta(seconds=30))
t = torch.tensor([float(dist.get_rank() + 1)]); dist.all_reduce(t)
print(int(t.item()), flush=True)
dist.barrier()
dist.destroy_process_group()
"""


@pytest.mark.parametrize("jobs", [("a", "b")])
async def test_two_torch_gloo_jobs_on_the_same_master_port(
    api: KubeAPI, agent: NodeAgent, jobs: tuple[str, ...]
) -> None:
    try:
        import torch  # noqa: F401
    except ImportError:
        if os.environ.get("CI") == "true":
            raise
        pytest.skip("torch is not installed")
    names = []
    for job in jobs:
        for rank, role in enumerate(("master-0", "worker-0")):
            name = f"{job}-{role}"
            await create(api, service(name, {"replica": name}))
            env = [
                {"name": "MASTER_ADDR", "value": f"{job}-master-0"},
                {"name": "MASTER_PORT", "value": "23456"},
                {"name": "WORLD_SIZE", "value": "2"},
                {"name": "RANK", "value": str(rank)},
            ]
            body = pod(name, container("pytorch", TORCH, env=env), restartPolicy="Never")
            body["metadata"]["labels"] = {"replica": name}
            await create(api, body)
            names.append(name)
    for name in names:
        p = await wait_phase(api, name, "Succeeded", "Failed", timeout=45)
        assert p["status"]["phase"] == "Succeeded", await read_log(api, name)
        assert (await read_log(api, name)).strip().splitlines()[-1] == "3"


LOOPBACK_SELF = r"""
import socket
server = socket.socket()
server.bind(("0.0.0.0", 0))  # rebound to the pod IP by the shim
server.listen()
port = server.getsockname()[1]
client = socket.create_connection(("127.0.0.1", port), timeout=5)  # XGBoost's collective does this
peer, _ = server.accept()
client.sendall(b"ping")
print(peer.recv(4).decode(), flush=True)
"""


async def test_a_pod_reaches_its_own_wildcard_port_through_loopback(api: KubeAPI, agent: NodeAgent) -> None:
    await create(api, pod("self-loop", container("main", LOOPBACK_SELF), restartPolicy="Never"))
    p = await wait_phase(api, "self-loop", "Succeeded", "Failed")
    assert p["status"]["phase"] == "Succeeded", await read_log(api, "self-loop")
    assert (await read_log(api, "self-loop")).strip() == "ping"


REBIND_AFTER_TIME_WAIT = """
import socket
for attempt in range(2):
    server = socket.socket()  # no SO_REUSEADDR, as XGBoost's tracker
    server.bind(("0.0.0.0", 29431))
    server.listen()
    client = socket.create_connection((socket.gethostname(), 29431))
    conn, _ = server.accept()
    conn.close()  # the server side closes first: its end of the connection stays in TIME_WAIT
    client.close()
    server.close()
print("rebound")
"""


async def test_a_server_rebinds_its_fixed_port_while_the_last_connection_is_in_time_wait(
    api: KubeAPI, agent: NodeAgent
) -> None:
    await create(api, pod("rebind", container("main", REBIND_AFTER_TIME_WAIT), restartPolicy="Never"))
    p = await wait_phase(api, "rebind", "Succeeded", "Failed")
    assert p["status"]["phase"] == "Succeeded", await read_log(api, "rebind")


SIBLINGS_ON_ONE_PORT = """
import errno, socket
first, second = socket.socket(), socket.socket()
first.bind(("0.0.0.0", 1031))  # neither listens yet: OpenMPI's btl_tcp ranks binding their range
try:
    second.bind(("0.0.0.0", 1031))
except OSError as err:
    print("second bind:", errno.errorcode[err.errno])
else:
    print("second bind: taken")
first.listen()
"""


async def test_a_second_socket_cannot_bind_a_port_a_sibling_holds_before_it_listens(
    api: KubeAPI, agent: NodeAgent
) -> None:
    """Two ranks of one pod race for a port; the loser must hear EADDRINUSE from bind() and try the
    next one. The shim once set SO_REUSEADDR on every bind, so both bound and the loser's listen()
    failed (``listen() failed: Address already in use``, a TrainJob mpi run in CI)."""
    await create(api, pod("siblings", container("main", SIBLINGS_ON_ONE_PORT), restartPolicy="Never"))
    p = await wait_phase(api, "siblings", "Succeeded", "Failed")
    assert p["status"]["phase"] == "Succeeded", await read_log(api, "siblings")
    assert (await read_log(api, "siblings")).strip() == "second bind: EADDRINUSE"


def test_each_agent_claims_its_own_pod_address_range(tmp_path: Path) -> None:
    first, second = PodCIDRLease.claim(tmp_path), PodCIDRLease.claim(tmp_path)
    try:
        assert first.cidr == "127.244.0.0/16" and second.cidr == "127.243.0.0/16"
        first.release()
        third = PodCIDRLease.claim(tmp_path)  # the freed 127.244 is not reused right away
        assert third.cidr == "127.242.0.0/16"
        third.release()
    finally:
        first.release()
        second.release()


def test_consecutive_agents_rotate_through_the_ranges(tmp_path: Path) -> None:
    """A plane started right after another gets fresh addresses (the old ports may be in TIME_WAIT)."""
    seen = []
    for _ in range(3):
        lease = PodCIDRLease.claim(tmp_path)
        seen.append(lease.cidr)
        lease.release()
    assert seen == ["127.244.0.0/16", "127.243.0.0/16", "127.242.0.0/16"]
    (tmp_path / PodCIDRLease.LAST_CLAIM_FILE).write_text("64\n")  # the last range: wrap around
    lease = PodCIDRLease.claim(tmp_path)
    assert lease.cidr == "127.244.0.0/16"
    lease.release()
