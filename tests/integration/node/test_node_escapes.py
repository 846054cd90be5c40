"""Pods fail loudly on any exec error, and no process a pod started outlives it (issue #17).

* E2BIG (a 200,000-byte env var), ENOEXEC (an executable text file without a shebang) and ELOOP
  (a symlink loop) left the pod in ContainerCreating with no event: they are StartErrors now.
* Children that called setsid or double-forked survived pod completion and deletion; a SIGKILLed
  `kubetrain run` orphaned every pod process.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubetrain.embedded.node import KubeAPI, NodeAgent
from kubetrain.kube.client import core_path

from .conftest import PY, container, create, get_pod, pod, read_log, wait_for, wait_phase

REPO = Path(__file__).resolve().parents[3]
JsonDict = dict[str, Any]


def alive(pid: int) -> bool:
    """Running, not a zombie waiting for a reaper."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_dead(pids: list[int], timeout: float = 10.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.05)
    return [p for p in pids if alive(p)]


async def start_failure(api: KubeAPI, name: str, spec: JsonDict) -> tuple[JsonDict, JsonDict]:
    await create(api, pod(name, spec, restartPolicy="Never"))
    p = await wait_phase(api, name, "Failed", timeout=10)
    term = p["status"]["containerStatuses"][0]["state"]["terminated"]
    return p, term


async def failed_event(api: KubeAPI, name: str) -> list[str]:
    items = (await api.get(core_path("events", "default")))["items"]
    return [
        e["message"]
        for e in items
        if e["involvedObject"]["name"] == name and e["reason"] == "Failed" and e["type"] == "Warning"
    ]


async def test_huge_env_var_is_a_start_error_with_an_event(api: KubeAPI, agent: NodeAgent) -> None:
    spec = container("main", "print('never')", env=[{"name": "HUGE", "value": "x" * 200_000}])
    _, term = await start_failure(api, "e2big", spec)
    assert (term["exitCode"], term["reason"]) == (128, "StartError")
    assert "argument list too long" in term["message"]
    events = await wait_for(lambda: failed_event(api, "e2big"), what="a Failed event")
    assert "argument list too long" in events[0]


async def test_executable_without_shebang_is_a_start_error(
    api: KubeAPI, agent: NodeAgent, tmp_path: Path
) -> None:
    script = tmp_path / "not-elf"
    script.write_text("echo no shebang here\n")
    script.chmod(0o755)
    _, term = await start_failure(api, "enoexec", {"name": "main", "image": "x", "command": [str(script)]})
    assert term["reason"] == "StartError" and "exec format error" in term["message"]
    events = await wait_for(lambda: failed_event(api, "enoexec"), what="a Failed event")
    assert "exec format error" in events[0]


async def test_symlink_loop_is_a_start_error(api: KubeAPI, agent: NodeAgent, tmp_path: Path) -> None:
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    _, term = await start_failure(
        api, "eloop", {"name": "main", "image": "x", "command": [str(tmp_path / "a")]}
    )
    assert term["reason"] == "StartError" and "too many levels of symbolic links" in term["message"]
    events = await wait_for(lambda: failed_event(api, "eloop"), what="a Failed event")
    assert "too many levels of symbolic links" in events[0]


async def test_start_errors_follow_the_restart_policy(api: KubeAPI, agent: NodeAgent) -> None:
    """As a kubelet reports a failed start that will be retried: waiting RunContainerError with
    the runtime's message, then CrashLoopBackOff, lastState terminated StartError (exit 128)."""
    spec = container("main", "print('never')", env=[{"name": "HUGE", "value": "x" * 200_000}])
    created = await create(api, pod("e2big-retry", spec, restartPolicy="OnFailure"))
    seen: list[tuple[str, str]] = []

    async def watch() -> JsonDict:
        params = {
            "fieldSelector": "metadata.name=e2big-retry",
            "resourceVersion": created["metadata"]["resourceVersion"],
        }
        async for event in api.watch(core_path("pods", "default"), params):
            statuses = (event["object"].get("status") or {}).get("containerStatuses") or [{}]
            waiting = (statuses[0].get("state") or {}).get("waiting") or {}
            if waiting and (not seen or seen[-1][0] != waiting["reason"]):
                seen.append((waiting["reason"], waiting.get("message", "")))
            if statuses[0].get("restartCount", 0) >= 1:
                return statuses[0]
        raise AssertionError("watch ended")

    status = await asyncio.wait_for(watch(), timeout=15)
    assert status["lastState"]["terminated"]["reason"] == "StartError"
    assert status["lastState"]["terminated"]["exitCode"] == 128
    reasons = [reason for reason, _ in seen]
    assert (
        "RunContainerError" in reasons and "CrashLoopBackOff" in reasons[reasons.index("RunContainerError") :]
    )
    assert "argument list too long" in dict(seen)["RunContainerError"]


ESCAPER = r"""
import os, subprocess, sys, time
daemon = subprocess.Popen(["setsid", "sleep", "1000"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
if os.fork() == 0:  # double fork: the grandchild is reparented away from the container
    if os.fork() == 0:
        os.setsid()
        time.sleep(1000)
    os._exit(0)
time.sleep(0.3)
grandchildren = [
    int(p) for p in os.listdir("/proc") if p.isdigit() and
    open(f"/proc/{p}/cmdline", "rb").read().startswith(open("/proc/self/cmdline", "rb").read()) and
    int(p) != os.getpid()
]
print(daemon.pid, *grandchildren, flush=True)
time.sleep(float(sys.argv[1]))
"""


def escaper(name: str, seconds: float) -> JsonDict:
    spec = container(name, ESCAPER)
    spec["command"].append(str(seconds))
    return spec


async def escaped_pids(api: KubeAPI, name: str) -> list[int]:
    async def printed() -> list[int]:
        try:
            text = await read_log(api, name)
        except AssertionError:  # not started yet
            return []
        return [int(p) for p in text.split()] if text.endswith("\n") else []

    pids: list[int] = await wait_for(printed, what="the escaped pids in the log")
    assert len(pids) == 2 and all(alive(p) for p in pids), pids
    return pids


async def test_setsid_and_double_fork_die_with_the_pod(api: KubeAPI, agent: NodeAgent) -> None:
    await create(api, pod("escaper", escaper("main", 0.5), restartPolicy="Never"))
    pids = await escaped_pids(api, "escaper")
    await wait_phase(api, "escaper", "Succeeded")
    assert wait_dead(pids) == []


async def test_setsid_and_double_fork_die_when_the_pod_is_deleted(api: KubeAPI, agent: NodeAgent) -> None:
    await create(
        api, pod("deleted", escaper("main", 1000), restartPolicy="Never", terminationGracePeriodSeconds=1)
    )
    pids = await escaped_pids(api, "deleted")
    await api.delete(core_path("pods", "default", "deleted"))
    await wait_for(lambda: _gone(api, "deleted"), what="the pod deleted")
    assert wait_dead(pids) == []


async def _gone(api: KubeAPI, name: str) -> bool:
    return await get_pod(api, name) is None


def _processes_with(marker: str) -> list[int]:
    """Live pids whose environment holds the test's marker (a /proc scan)."""
    needle = f"\0KUBETRAIN_TEST_MARKER={marker}\0".encode()
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/environ", "rb") as fh:
                if entry.isdigit() and needle in b"\0" + fh.read() and alive(int(entry)):
                    found.append(int(entry))
        except OSError:
            continue
    return found


@pytest.mark.parametrize("escape", [False, True])
def test_sigkill_of_kubetrain_run_leaves_no_pod_process(tmp_path: Path, escape: bool) -> None:
    marker = uuid.uuid4().hex
    code = ESCAPER if escape else "import time; print('up', flush=True); time.sleep(1000)"
    spec = {
        "containers": [
            {
                "name": "tensorflow",
                "image": "python:3.11",
                "command": [PY, "-c", code, "1000"],
                "env": [{"name": "KUBETRAIN_TEST_MARKER", "value": marker}],
            }
        ]
    }
    job = {  # two workers that start at once (a PyTorch worker would wait for its master first)
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": "orphans"},
        "spec": {
            "tfReplicaSpecs": {
                "Worker": {"replicas": 2, "restartPolicy": "Never", "template": {"spec": spec}},
            }
        },
    }
    path = tmp_path / "orphans.yaml"
    path.write_text(yaml.safe_dump(job))
    want = 6 if escape else 2  # two pods, each with its process (and two escaped ones)
    proc = subprocess.Popen(
        [sys.executable, "-m", "kubetrain.cli.main", "run", str(path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        deadline = time.monotonic() + 60
        while len(_processes_with(marker)) < want and time.monotonic() < deadline:
            time.sleep(0.1)
        found = _processes_with(marker)
        if len(found) < want:
            proc.kill()
            _, err = proc.communicate(timeout=10)
            pytest.fail(f"the pods never started ({found}): {err.decode(errors='replace')[-3000:]}")
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        assert wait_dead(found) == [], "pod processes outlived the SIGKILLed kubetrain run"
        assert _processes_with(marker) == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid in _processes_with(marker):
            os.kill(pid, signal.SIGKILL)


async def test_containers_ending_together_share_one_proc_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 1,000-pod job finishing must not cost 1,000 scans of /proc (~10 ms per 100 processes)."""
    from kubetrain.embedded.node import process

    tags = [f"{process.NODE_TOKEN}.test{i}" for i in range(8)]
    procs = [
        subprocess.Popen(["sleep", "1000"], env={**os.environ, process.TAG_ENV: tag}, start_new_session=True)
        for tag in tags
    ]
    scans = 0
    real = process.process_tags

    def counting() -> dict[int, str]:
        nonlocal scans
        scans += 1
        return real()

    monkeypatch.setattr(process, "process_tags", counting)
    try:
        await asyncio.gather(*(process.SWEEPER.signal(tag, signal.SIGKILL) for tag in tags))
        assert [p.wait(timeout=5) for p in procs] == [-signal.SIGKILL] * len(procs)
        assert scans <= 2  # one pass that kills, one that finds nothing left
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
