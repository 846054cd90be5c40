"""A node that starts where a previous node process ran pods accounts for them as a kubelet does.

The previous process's containers are gone (a stop or the guardian killed them) while the API
still shows them running: Never pods are Failed with every lost container ContainerStatusUnknown
(137); OnFailure and Always pods run again with restartCount + 1 and the lost instance in
lastState; a container that already completed under OnFailure is not run again. And a node's
temporary root left behind by a SIGKILL is removed by the next node, never a live node's; a clean
stop waits for the node's guardian process to be gone.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from kubetrain.embedded.apiserver import EmbeddedAPIServer
from kubetrain.embedded.node import KubeAPI
from kubetrain.embedded.node.process import NODE_TOKEN, TAG_ENV
from kubetrain.embedded.node.recovery import LOST_MESSAGE, POD_LOST_MESSAGE
from kubetrain.embedded.node.sandbox import OWNER_FILE, PREFIX, NodeRoot
from kubetrain.kube.client import core_path

from .conftest import container, create, get_pod, make_agent, pod, wait_for, wait_phase

JsonDict = dict[str, Any]
SLEEP = "import time; print('up', flush=True); time.sleep(600)"


def _statuses(p: JsonDict) -> dict[str, JsonDict]:
    return {s["name"]: s for s in p["status"]["containerStatuses"]}


async def _running(api: KubeAPI, name: str, restarts: int) -> JsonDict | None:
    p = await get_pod(api, name)
    statuses = ((p or {}).get("status") or {}).get("containerStatuses") or []
    ok = (
        statuses
        and all("running" in s["state"] or "terminated" in s["state"] for s in statuses)
        and any(s["restartCount"] == restarts and "running" in s["state"] for s in statuses)
    )
    return p if ok else None


async def test_pods_of_a_stopped_node_are_restarted_or_failed_by_their_restart_policy(
    server: EmbeddedAPIServer, api: KubeAPI, tmp_path: Path
) -> None:
    first = await make_agent(server, api, tmp_path, shutdown_grace=0.5)
    await create(api, pod("never", container("main", SLEEP), restartPolicy="Never"))
    await create(api, pod("onfailure", container("main", SLEEP), restartPolicy="OnFailure"))
    await create(
        api,
        pod(
            "half-done",
            container("done", "print('done')"),
            container("main", SLEEP),
            restartPolicy="OnFailure",
        ),
    )
    await wait_for(lambda: _running(api, "never", 0), what="never running")
    await wait_for(lambda: _running(api, "onfailure", 0), what="onfailure running")

    async def half_done() -> bool:
        p = await get_pod(api, "half-done")
        states = (
            {n: s["state"] for n, s in _statuses(p).items()}
            if p and p["status"].get("containerStatuses")
            else {}
        )
        return "terminated" in states.get("done", {}) and "running" in states.get("main", {})

    await wait_for(half_done, what="half-done: one container completed, one running")
    before = await get_pod(api, "onfailure")
    assert before is not None
    await first.stop()  # kills the processes; the API still shows them running

    second = await make_agent(server, api, tmp_path)
    try:
        failed = await wait_phase(api, "never", "Failed")
        term = _statuses(failed)["main"]["state"]["terminated"]
        assert (term["reason"], term["exitCode"], term["message"]) == (
            "ContainerStatusUnknown",
            137,
            LOST_MESSAGE,
        )
        assert failed["status"]["message"] == POD_LOST_MESSAGE
        assert _statuses(failed)["main"]["restartCount"] == 0
        async with api.session.get(f"{api.base_url}{core_path('pods', 'default', 'never', 'log')}") as r:
            assert r.status >= 400 and "was lost with the node process that ran it" in await r.text()

        restarted = await wait_for(lambda: _running(api, "onfailure", 1), what="onfailure restarted")
        main = _statuses(restarted)["main"]
        assert main["lastState"]["terminated"]["reason"] == "ContainerStatusUnknown"
        old_start = _statuses(before)["main"]["state"]["running"]["startedAt"]
        assert main["lastState"]["terminated"]["startedAt"] == old_start
        assert restarted["status"]["startTime"] == before["status"]["startTime"]

        half = await wait_for(lambda: _running(api, "half-done", 1), what="half-done restarted")
        done = _statuses(half)["done"]
        assert done["restartCount"] == 0 and done["state"]["terminated"]["exitCode"] == 0
        assert _statuses(half)["main"]["restartCount"] == 1

        events = (await api.get(core_path("events", "default")))["items"]
        changed = {e["involvedObject"]["name"] for e in events if e["reason"] == "SandboxChanged"}
        assert changed == {"onfailure", "half-done"}
    finally:
        await second.stop()


HOLD_ROOT = """
import sys, time
from kubetrain.embedded.node.sandbox import NodeRoot
root = NodeRoot()
print(root.path, flush=True)
time.sleep(600)
"""


def _holder() -> tuple[subprocess.Popen[str], Path]:
    proc = subprocess.Popen([sys.executable, "-c", HOLD_ROOT], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return proc, Path(proc.stdout.readline().strip())


def test_the_root_of_a_killed_node_is_removed_by_the_next_one_and_a_live_one_kept() -> None:
    killed, stale = _holder()
    live, kept = _holder()
    try:
        assert (stale / OWNER_FILE).is_file() and stale.name.startswith(PREFIX)
        killed.send_signal(signal.SIGKILL)
        killed.wait()
        assert stale.is_dir()  # nothing could clean up after a SIGKILL
        root = NodeRoot()
        try:
            assert stale in root.removed_stale and not stale.exists()
            assert kept.is_dir() and kept not in root.removed_stale
        finally:
            root.release()
        assert not root.path.exists()
    finally:
        for proc in (killed, live):
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait()
    assert kept.is_dir()  # a SIGKILLed holder leaves it for the next node to remove
    NodeRoot().release()
    assert not kept.exists()


def _guardians() -> list[int]:
    """This test process's guardian(s), by the tag prefix on their command line."""
    needle = f"{TAG_ENV}={NODE_TOKEN}.".encode()
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                if entry.isdigit() and needle in fh.read().split(b"\0") and _alive(int(entry)):
                    found.append(int(entry))
        except OSError:
            continue
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


async def test_a_clean_stop_waits_for_the_guardian_to_be_gone(
    server: EmbeddedAPIServer, api: KubeAPI, tmp_path: Path
) -> None:
    """It outlived `kubetrain up` by its last sweep: a user's check for leftovers found it."""
    node = await make_agent(server, api, tmp_path, shutdown_grace=0.5)
    await create(api, pod("guarded", container("main", SLEEP)))
    await wait_for(lambda: _running(api, "guarded", 0), what="guarded running")
    assert _guardians()
    await node.stop()
    assert _guardians() == []
