"""A TrainJob on upstream's torch-distributed ClusterTrainingRuntime runs for real on the local plane
of `kubetrain up`: the operator builds its JobSet, the embedded JobSet controller its Job of 2
indexed pods, torchrun rendezvouses at `<trainjob>-node-0-0.<trainjob>:29500`, DDP trains, and the
TrainJob ends Complete with its jobsStatus."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from kubetrain.cli.plane import LocalPlane
from tests.integration.jobset.test_local_plane import kubectl
from tests.polling import wait_for

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "local" / "trainjob-torch"


async def test_example_trainjob_completes_under_the_local_plane(tmp_path: Path) -> None:
    plane = LocalPlane(working_dir=EXAMPLE)
    await plane.start()
    try:
        kubeconfig = plane.write_kubeconfig(tmp_path / "kubeconfig")
        code, out = await kubectl(kubeconfig, "apply", "-f", str(EXAMPLE / "trainjob.yaml"))
        assert "clustertrainingruntime.trainer.kubeflow.org/torch-distributed created" in out, out
        assert code == 0 and "trainjob.trainer.kubeflow.org/trainjob-torch created" in out, out

        async def finished() -> dict:
            code, out = await kubectl(kubeconfig, "get", "trainjob", "trainjob-torch", "-o", "json")
            if code != 0:
                return {}
            status = json.loads(out).get("status") or {}
            types = {c["type"] for c in status.get("conditions") or [] if c.get("status") == "True"}
            return status if types & {"Complete", "Failed"} else {}

        status = await wait_for(finished, 240, "the TrainJob to finish", interval=1.0)
        code, logs = await kubectl(
            kubeconfig, "logs", "-l", "jobset.sigs.k8s.io/jobset-name=trainjob-torch", "--tail=-1"
        )
        complete = [c for c in status["conditions"] if c["type"] == "Complete"]
        assert complete and complete[0]["status"] == "True", (status, logs)
        assert complete[0]["reason"] == "AllJobsCompleted", status
        assert status["jobsStatus"][0]["name"] == "node" and status["jobsStatus"][0]["succeeded"] == 1, status

        code, out = await kubectl(kubeconfig, "get", "jobset", "trainjob-torch", "-o", "json")
        assert code == 0, out
        jobset = json.loads(out)
        owner = jobset["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["name"], owner["controller"]) == ("TrainJob", "trainjob-torch", True)
        node = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]
        assert (node["parallelism"], node["completions"]) == (2, 2)
        assert "identical" in logs or "accuracy" in logs, logs
    finally:
        await plane.stop()


async def kubetrain(kubeconfig: Path, *args: str, cwd: Path) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "kubetrain.cli.main",
        *args,
        cwd=cwd,
        env={**os.environ, "KUBECONFIG": str(kubeconfig)},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 300)
    return proc.returncode or 0, out.decode()


async def test_kubetrain_apply_of_the_file_runs_the_trainjob_in_its_files_directory(tmp_path: Path) -> None:
    """`kubetrain apply -f` takes the runtime and the TrainJob of one file, and the pods run in the
    file's directory (where train.py is), not in the plane's --workdir."""
    elsewhere = tmp_path / "plane-workdir"
    elsewhere.mkdir()
    plane = LocalPlane(working_dir=elsewhere)
    await plane.start()
    try:
        kubeconfig = plane.write_kubeconfig(tmp_path / "kubeconfig")
        code, out = await kubetrain(kubeconfig, "apply", "-f", str(EXAMPLE / "trainjob.yaml"), cwd=elsewhere)
        assert code == 0, out
        assert "clustertrainingruntime.trainer.kubeflow.org/torch-distributed created" in out, out
        assert "trainjob.trainer.kubeflow.org/trainjob-torch created" in out, out
        code, out = await kubetrain(
            kubeconfig, "wait", "trainjob", "trainjob-torch", "--timeout", "240", cwd=elsewhere
        )
        _, logs = await kubetrain(kubeconfig, "logs", "trainjob", "trainjob-torch", cwd=elsewhere)
        assert code == 0, (out, logs)
        assert "identical_on_all_ranks=True" in logs, logs
        code, out = await kubetrain(kubeconfig, "get", "clustertrainingruntimes", cwd=elsewhere)
        assert code == 0 and "torch-distributed" in out, out
    finally:
        await plane.stop()
