"""The local plane of `kubetrain up` serves and reconciles JobSets: the example applied with kubectl."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

import pytest

from kubetrain.cli.plane import LocalPlane
from tests.polling import wait_for

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "local" / "jobset-ping"
KUBECTL = shutil.which("kubectl")


async def kubectl(kubeconfig: Path, *args: str) -> tuple[int, str]:
    if KUBECTL is None:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail("kubectl is required in CI")
        pytest.skip("kubectl is not installed")
    proc = await asyncio.create_subprocess_exec(
        KUBECTL,
        f"--kubeconfig={kubeconfig}",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await proc.communicate()
    return proc.returncode or 0, out.decode()


async def test_example_jobset_runs_under_the_local_plane(tmp_path: Path) -> None:
    plane = LocalPlane(working_dir=EXAMPLE)
    await plane.start()
    try:
        kubeconfig = plane.write_kubeconfig(tmp_path / "kubeconfig")
        code, out = await kubectl(kubeconfig, "apply", "-f", str(EXAMPLE / "jobset.yaml"))
        assert code == 0, out
        assert "jobset.jobset.x-k8s.io/jobset-ping created" in out

        async def completed() -> str:
            code, out = await kubectl(
                kubeconfig, "get", "jobset", "jobset-ping", "-o", "jsonpath={.status.terminalState}"
            )
            return out if code == 0 and out == "Completed" else ""

        await wait_for(completed, 90, "the example JobSet to complete", interval=0.5)
        code, out = await kubectl(kubeconfig, "get", "jobsets")
        assert code == 0 and "jobset-ping" in out and "Completed" in out, out
        code, out = await kubectl(
            kubeconfig, "get", "pods", "-l", "jobset.sigs.k8s.io/replicatedjob-name=leader", "-o", "name"
        )
        assert code == 0 and out.startswith("pod/jobset-ping-leader-0-0-"), out
        code, out = await kubectl(kubeconfig, "logs", out.strip())
        assert "all workers checked in" in out, out
    finally:
        await plane.stop()
