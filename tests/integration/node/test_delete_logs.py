"""Deletion (SIGTERM, SIGKILL after grace, confirm) and pods/log (follow, tail, timestamps)."""

from __future__ import annotations

import asyncio
import os
import re
import time

from kubetrain.embedded.node import KubeAPI, NodeAgent
from kubetrain.kube.client import core_path

from .conftest import container, create, get_pod, pod, read_log, wait_for, wait_phase

TRAP = """
import os, signal, sys, time
def bye(*_):
    print('got SIGTERM', flush=True); sys.exit(0)
signal.signal(signal.SIGTERM, bye)
print('ready', flush=True)
time.sleep(60)
"""

STUBBORN = """
import os, signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
deaf = 'import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)'
child = subprocess.Popen([sys.executable, '-c', deaf])
print(child.pid, flush=True)
time.sleep(60)
"""


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as fh:  # a zombie is dead for our purposes
        return fh.read().split(") ")[-1][0] != "Z"


async def wait_log(api: KubeAPI, name: str, text: str) -> str:
    async def check() -> str | None:
        try:
            out = await read_log(api, name)
        except AssertionError:
            return None
        return out if text in out else None

    out: str = await wait_for(check, what=f"{text!r} in logs of {name}")
    return out


async def test_delete_sends_sigterm_and_confirms(api: KubeAPI, agent: NodeAgent) -> None:
    await create(api, pod("graceful", container("main", TRAP), terminationGracePeriodSeconds=10))
    await wait_log(api, "graceful", "ready")
    await api.delete(core_path("pods", "default", "graceful"))
    start = time.monotonic()
    await wait_for(lambda: _gone(api, "graceful"), what="pod removed")
    assert time.monotonic() - start < 5
    assert agent.pids() == []


async def _gone(api: KubeAPI, name: str) -> bool:
    return await get_pod(api, name) is None


async def test_delete_kills_after_grace_including_children(api: KubeAPI, agent: NodeAgent) -> None:
    await create(api, pod("stubborn", container("main", STUBBORN), terminationGracePeriodSeconds=1))
    child = int((await wait_log(api, "stubborn", "\n")).split()[0])
    leader = agent.pids()[0]
    start = time.monotonic()
    await api.delete(core_path("pods", "default", "stubborn"))
    p = await get_pod(api, "stubborn")
    assert p is not None and p["metadata"]["deletionTimestamp"]  # kept until the node confirms
    await wait_for(lambda: _gone(api, "stubborn"), what="pod removed")
    assert 0.9 <= time.monotonic() - start < 5
    await wait_for(lambda: _dead(leader, child), what="processes gone")


async def _dead(*pids: int) -> bool:
    return not any(alive(p) for p in pids)


async def test_logs_tail_timestamps_follow(api: KubeAPI, agent: NodeAgent) -> None:
    code = (
        "import sys, time\nfor i in range(5): print('line', i, flush=True)\n"
        "print('to stderr', file=sys.stderr, flush=True)\ntime.sleep(0.8)\nprint('last', flush=True)"
    )
    await create(api, pod("talker", container("main", code), restartPolicy="Never"))
    await wait_log(api, "talker", "to stderr")
    assert await read_log(api, "talker", tailLines="2") == "line 4\nto stderr\n"
    stamped = await read_log(api, "talker", tailLines="1", timestamps="true")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z to stderr\n", stamped)
    assert await read_log(api, "talker", limitBytes="7") == "line 0\n"
    url = f"{api.base_url}{core_path('pods', 'default', 'talker', 'log')}"
    async with api.session.get(url, params={"follow": "true", "tailLines": "1"}) as resp:
        body = (await asyncio.wait_for(resp.text(), timeout=10)).splitlines()
    assert body == ["to stderr", "last"]  # follow ends when the container does
    await wait_phase(api, "talker", "Succeeded")


async def test_log_errors_match_the_kubelet(api: KubeAPI, agent: NodeAgent) -> None:
    await create(api, pod("once", container("main", "print(1)"), restartPolicy="Never"))
    await wait_phase(api, "once", "Succeeded")
    async with api.session.get(
        f"{api.base_url}{core_path('pods', 'default', 'once', 'log')}", params={"previous": "true"}
    ) as resp:
        assert resp.status == 400
        body = await resp.json()
    assert body["message"] == 'previous terminated container "main" in pod "once" not found'
