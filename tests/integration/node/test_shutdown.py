"""Stopping the agent leaves no process behind, grandchildren included."""

from __future__ import annotations

from pathlib import Path

from kubetrain.embedded.apiserver import EmbeddedAPIServer
from kubetrain.embedded.node import KubeAPI, NodeAgent

from .conftest import container, create, make_agent, pod, wait_for
from .test_delete_logs import STUBBORN, alive, wait_log


async def test_agent_stop_kills_every_process(
    server: EmbeddedAPIServer, api: KubeAPI, tmp_path: Path
) -> None:
    node = await make_agent(server, api, tmp_path, shutdown_grace=0.5)
    await create(api, pod("p1", container("main", STUBBORN)))
    await create(api, pod("p2", container("main", "import time; time.sleep(60)")))
    child = int((await wait_log(api, "p1", "\n")).split()[0])
    await wait_for(lambda: _count(node, 2), what="both pods running")
    pids = [*node.pids(), child]
    await node.stop()
    assert not [p for p in pids if alive(p)]
    nodeobj = await api.get("/api/v1/nodes/kubetrain-local")
    ready = next(c for c in nodeobj["status"]["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "False"


async def _count(node: NodeAgent, n: int) -> bool:
    return len(node.pids()) == n
