"""Pod logs are capped and rotated, and reads stream (issue #17 item 7).

A container writing more than containerLogMaxSize leaves at most containerLogMaxFiles files of
at most that size each, and `logs` still returns the newest lines (of the current file, as from a
kubelet); `follow` carries on across rotations; a full read of a large log through the API server
holds a chunk at a time, not the file (measured with tracemalloc: what is buffered, not time).
"""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from kubetrain.embedded.apiserver import EmbeddedAPIServer, LogOptions, LogUnavailable
from kubetrain.embedded.node import KubeAPI
from kubetrain.embedded.node.logs import ContainerLogs, LogFile, LogPolicy
from kubetrain.kube.client import core_path

from .conftest import container, create, make_agent, pod, read_log, wait_for, wait_phase

LINES = 2000
WRITER = f"""
import sys, time
for i in range({LINES}):
    print(f"{{i:06d}} " + "x" * 193, flush=True)
    if len(sys.argv) > 1 and i % 10 == 9:
        time.sleep(float(sys.argv[1]))
"""


def numbers(text: str) -> list[int]:
    return [int(line.split()[0]) for line in text.splitlines()]


def log_files(root: Path, pod_name: str) -> list[Path]:
    [pod_dir] = (root / "pods").glob(f"default_{pod_name}_*")
    return sorted((pod_dir / "logs" / "main").iterdir())


async def test_a_pod_writing_past_the_cap_keeps_rotated_files_within_bounds(
    server: EmbeddedAPIServer, api: KubeAPI, tmp_path: Path
) -> None:
    agent = await make_agent(
        server, api, tmp_path, container_log_max_size=16 * 1024, container_log_max_files=3
    )
    try:
        await create(api, pod("chatty", container("main", WRITER), restartPolicy="Never"))
        await wait_phase(api, "chatty", "Succeeded", timeout=30)
        files = log_files(tmp_path / "node", "chatty")
        assert files[0].name == "0.log" and len(files) == 3  # the current file and two rotated
        assert all(f.name.startswith("0.log.") for f in files[1:])
        assert all(f.stat().st_size <= 16 * 1024 for f in files), [f.stat().st_size for f in files]

        got = numbers(await read_log(api, "chatty"))
        assert got[-1] == LINES - 1  # the newest lines, contiguous; the oldest were rotated away
        assert got == list(range(got[0], LINES)) and got[0] > 0
        assert numbers(await read_log(api, "chatty", tailLines="5")) == list(range(LINES - 5, LINES))
        assert len(await read_log(api, "chatty", limitBytes="100")) == 100
    finally:
        await agent.stop()


async def test_follow_carries_on_across_rotations(
    server: EmbeddedAPIServer, api: KubeAPI, tmp_path: Path
) -> None:
    agent = await make_agent(
        server, api, tmp_path, container_log_max_size=64 * 1024, container_log_max_files=2
    )
    try:
        spec = container("main", WRITER)
        spec["command"].append("0.01")
        await create(api, pod("followed", spec, restartPolicy="Never"))
        await wait_phase(api, "followed", "Running", "Succeeded", timeout=30)
        text = await read_log(api, "followed", follow="true")
        got = numbers(text)
        assert got == list(range(got[0], LINES)), "a line was lost or repeated across a rotation"
        assert len(log_files(tmp_path / "node", "followed")) <= 2
    finally:
        await agent.stop()


async def test_a_full_read_of_a_large_log_streams(
    server: EmbeddedAPIServer, api: KubeAPI, tmp_path: Path
) -> None:
    agent = await make_agent(server, api, tmp_path, container_log_max_size=64 * 2**20)
    try:
        line = "y" * (16 * 1024 - 1)
        script = f"import sys\nfor _ in range(1536): sys.stdout.write({line!r} + '\\n')\n"
        await create(api, pod("big", container("main", script), restartPolicy="Never"))
        await wait_phase(api, "big", "Succeeded", timeout=60)
        expected = 1536 * 16 * 1024  # 24 MiB

        tracemalloc.start()
        try:
            total = 0
            async with api.session.get(f"{api.base_url}{core_path('pods', 'default', 'big', 'log')}") as resp:
                assert resp.status == 200
                async for chunk in resp.content.iter_chunked(64 * 1024):
                    total += len(chunk)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert total == expected
        assert peak < 8 * 2**20, f"a full read buffered {peak / 2**20:.1f} MiB of a 24 MiB log"
    finally:
        await agent.stop()


def test_the_policy_refuses_what_the_kubelet_refuses() -> None:
    assert LogPolicy() == LogPolicy(10 * 2**20, 5)  # containerLogMaxSize, containerLogMaxFiles
    with pytest.raises(ValueError, match="max files must be > 1"):
        LogPolicy(max_files=1)
    with pytest.raises(ValueError, match="at least 1 byte"):
        LogPolicy(max_size=0)


COUNTED_CRASH = """
from pathlib import Path
import sys
counter = Path("attempts")
n = int(counter.read_text()) if counter.exists() else 0
counter.write_text(str(n + 1))
print(f"attempt {n} failed: cause {n}")
sys.exit(1)
"""


async def test_every_instance_log_is_kept_and_previous_is_the_one_before_current(
    server: EmbeddedAPIServer, api: KubeAPI, tmp_path: Path
) -> None:
    agent = await make_agent(server, api, tmp_path)
    try:
        await create(api, pod("crashy", container("main", COUNTED_CRASH), restartPolicy="OnFailure"))

        async def restarts() -> int | None:
            p = await api.get(core_path("pods", "default", "crashy"))
            statuses = (p.get("status") or {}).get("containerStatuses") or [{}]
            count = int(statuses[0].get("restartCount", 0))
            return count if count >= 3 else None

        await wait_for(restarts, timeout=30, what="three restarts")
        names = {f.name for f in log_files(tmp_path / "node", "crashy")}
        assert {"0.log", "1.log", "2.log", "3.log"} <= names, names  # the first failure's cause too
        p = await api.get(core_path("pods", "default", "crashy"))
        first = b"".join([chunk async for chunk in agent.log_provider.attempt(p, "main", 0, LogOptions())])
        assert first == b"attempt 0 failed: cause 0\n"
        current = int(p["status"]["containerStatuses"][0]["restartCount"])
        previous = await read_log(api, "crashy", previous="true")
        assert previous in (
            f"attempt {current - 1} failed: cause {current - 1}\n",
            f"attempt {current} failed: cause {current}\n",
        )
        with pytest.raises(LogUnavailable):
            async for _ in agent.log_provider.attempt(p, "main", 99, LogOptions()):
                pass
    finally:
        await agent.stop()


def test_instances_older_than_the_previous_keep_only_their_newest_file(tmp_path: Path) -> None:
    logs = ContainerLogs()
    for restart in range(3):
        log = LogFile(tmp_path / f"{restart}.log")
        log.path.write_text("newest\n")
        (tmp_path / f"{restart}.log.20260101-000000.000001").write_text("rotated\n")
        logs.add(log)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "0.log",
        "1.log",
        "1.log.20260101-000000.000001",
        "2.log",
        "2.log.20260101-000000.000001",
    ]
    assert logs.attempt(0) is logs.files[0] and logs.attempt(7) is None
