"""CPU and memory of local pods from /proc, and of a cluster's pods from metrics.k8s.io."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import pytest

from kubetrain.dashboard.usage import LocalProcesses, pod_metrics_usage, read_sessions

BUSY = "import time\nx = bytearray(64 * 1024 * 1024)\nend = time.time() + 30\nwhile time.time() < end: pass\n"


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc (Linux)")
async def test_a_pods_busy_process_and_its_child_are_measured_together() -> None:
    # A container's process leads its own session; what it forks is counted with it.
    parent = subprocess.Popen(
        [sys.executable, "-c", f"import subprocess, sys; subprocess.run([sys.executable, '-c', {BUSY!r}])"],
        start_new_session=True,
    )
    try:
        usage = LocalProcesses(lambda: {"pod-uid": {"main": parent.pid}, "gone": {"main": 2**22 + 7}})
        first = await usage.usage([{"metadata": {"uid": "pod-uid"}}])
        assert set(first) == {"pod-uid"}
        await asyncio.sleep(1.5)
        sample = await usage.usage([{"metadata": {"uid": "pod-uid"}}, {"metadata": {"uid": "gone"}}])
        assert sample["pod-uid"]["memory"] > 64 * 1024 * 1024  # the child's bytearray is resident
        assert sample["pod-uid"]["cpu"] > 0  # the child spins
        assert sample["gone"] == {"cpu": 0.0, "memory": 0.0}
        assert parent.pid in read_sessions()
    finally:
        os.killpg(parent.pid, 9)
        parent.wait()


def test_pod_metrics_add_up_the_containers_quantities() -> None:
    item = {
        "containers": [
            {"usage": {"cpu": "250m", "memory": "64Mi"}},
            {"usage": {"cpu": "2000000n", "memory": "1Ki"}},
            {"usage": {"cpu": "bogus"}},
        ]
    }
    assert pod_metrics_usage(item) == {"cpu": 0.252, "memory": 64 * 1024 * 1024 + 1024}
