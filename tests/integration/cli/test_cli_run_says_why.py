"""`kubetrain run` says why a job does not run, with the node's and the scheduler's words, and
stops a job no retry can help instead of waiting for ever: one test per failure mode."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from cli_plane import pytorchjob, write_job

REPO = Path(__file__).resolve().parents[3]


def run(
    job: dict[str, Any], tmp_path: Path, *flags: str, env: dict[str, str] | None = None
) -> tuple[int, str]:
    """Exit code and stderr of `kubetrain run --no-status JOB`."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "kubetrain.cli.main",
            "run",
            "--no-status",
            *flags,
            str(write_job(tmp_path, job)),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stderr


def _master(job: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = job["spec"]["pytorchReplicaSpecs"]["Master"]
    return spec


def test_no_entrypoint_is_said_and_the_job_fails(tmp_path: Path) -> None:
    job = pytorchjob("no-entrypoint", "print(1)")
    container = _master(job)["template"]["spec"]["containers"][0]
    del container["command"]
    container["image"] = "pytorch/pytorch"
    code, stderr = run(job, tmp_path)
    assert code == 1
    assert 'master-0 cannot start container pytorch: image "pytorch/pytorch" has no entrypoint' in stderr
    assert "pytorchjob/no-entrypoint Failed" in stderr


def test_a_missing_executable_that_a_restart_meets_again_stops_the_run(tmp_path: Path) -> None:
    job = pytorchjob("missing-exe", "print(1)", restart_policy="OnFailure")
    _master(job)["template"]["spec"]["containers"][0]["command"] = ["/nonexistent/bin/train", "--epochs", "1"]
    code, stderr = run(job, tmp_path, "--timeout", "120")
    assert code == 1
    assert (
        'master-0 cannot start container pytorch: exec: "/nonexistent/bin/train": '
        "executable file not found in $PATH"
    ) in stderr
    assert "pytorchjob/missing-exe cannot run, and waiting will not help: deleting it" in stderr
    assert "not finished after" not in stderr  # it stopped by itself, long before --timeout


def test_a_request_larger_than_the_machine_stops_the_run_naming_the_flag(tmp_path: Path) -> None:
    job = pytorchjob("too-big", "print(1)")
    _master(job)["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "512"}}
    code, stderr = run(job, tmp_path, "--timeout", "120")
    assert code == 1
    assert "master-0 can never be scheduled (it requests 512 cpu; the node has" in stderr
    assert "0/1 nodes are available: 1 Insufficient cpu." in stderr and "--node-cpu" in stderr
    assert "pytorchjob/too-big cannot run, and waiting will not help: deleting it" in stderr


def test_a_gpu_request_on_a_machine_without_gpus_stops_the_run(tmp_path: Path) -> None:
    job = pytorchjob("wants-gpu", "print(1)")
    _master(job)["template"]["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "1"}}
    code, stderr = run(job, tmp_path, "--timeout", "120", env={"KUBETRAIN_GPUS": "none"})
    assert code == 1
    assert "master-0 can never be scheduled (it requests 1 nvidia.com/gpu; the node has 0)" in stderr
    assert "1 Insufficient nvidia.com/gpu." in stderr and "--gpus" in stderr


def test_a_crash_loop_says_each_restart_with_its_exit_code(tmp_path: Path) -> None:
    job = pytorchjob("crash-loop", "import sys; print('boom'); sys.exit(3)", restart_policy="OnFailure")
    job["spec"]["runPolicy"] = {"backoffLimit": 2}
    code, stderr = run(job, tmp_path, "--timeout", "120")
    assert code == 1
    assert "master-0 exited with code 3, restart 1 (OnFailure)" in stderr
    assert "master-0 exited with code 3, restart 2 (OnFailure)" in stderr
    assert "reached the specified backoff limit" in stderr


def test_a_quiet_hang_says_which_replicas_run_and_why_the_others_do_not(tmp_path: Path) -> None:
    job = pytorchjob(
        "rendezvous",
        "import time; print('waiting for 2 peers', flush=True); time.sleep(600)",
        "print('never runs')",
    )
    job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["schedulerName"] = "nobody-runs-this"
    code, stderr = run(job, tmp_path, "--timeout", "20", "--quiet-after", "4")
    assert code == 1 and "not finished after 20s" in stderr
    assert (
        "running: master-0; not running: worker-0 (Pending: waits for the scheduler 'nobody-runs-this')"
    ) in stderr


def test_a_gang_the_job_can_never_fill_stops_the_run(tmp_path: Path) -> None:
    job = pytorchjob("short-gang", "print(1)", "print(1)")
    job["spec"]["runPolicy"] = {"schedulingPolicy": {"minAvailable": 3}}
    for spec in job["spec"]["pytorchReplicaSpecs"].values():
        spec["template"]["spec"]["schedulerName"] = "scheduler-plugins-scheduler"
    code, stderr = run(job, tmp_path, "--timeout", "120")
    assert code == 1
    assert "can never be scheduled (its gang needs 3 pods, the job has 2" in stderr
    assert "minMember of group: 3" in stderr
    assert "pytorchjob/short-gang cannot run, and waiting will not help: deleting it" in stderr
