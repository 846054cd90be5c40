"""`kubetrain run` end to end in a subprocess: prefixed logs and exit codes, and Ctrl-C cleanup."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import yaml
from cli_plane import jaxjob, pytorchjob, write_job

from tests.procscan import processes_with

REPO = Path(__file__).resolve().parents[3]


def kubetrain(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kubetrain.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


def test_pytorchjob_succeeds_with_prefixed_logs(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(
        "import os\nprint('rank', os.environ['RANK'], 'of', os.environ['WORLD_SIZE'])\n"
    )
    job = pytorchjob(
        "tiny",
        "import time, runpy; time.sleep(1); runpy.run_path('train.py')",
        "import runpy; runpy.run_path('train.py')",
        workers=2,
    )
    result = kubetrain("run", str(write_job(tmp_path, job)))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "master-0 | rank 0 of 3" in lines  # the pods ran in the job file's directory (train.py)
    assert {"worker-0 | rank 1 of 3", "worker-1 | rank 2 of 3"} <= set(lines)
    assert "pytorchjob/tiny Succeeded" in result.stderr


def test_jaxjob_succeeds(tmp_path: Path) -> None:
    job = jaxjob(
        "jax-tiny", "import os; print('process', os.environ['PROCESS_ID'], 'of', os.environ['NUM_PROCESSES'])"
    )
    result = kubetrain("run", str(write_job(tmp_path, job)))
    assert result.returncode == 0, result.stderr
    assert {"worker-0 | process 0 of 2", "worker-1 | process 1 of 2"} <= set(result.stdout.splitlines())


def test_failed_job_exits_1_with_the_condition_message(tmp_path: Path) -> None:
    job = pytorchjob("crash", "import sys; print('about to fail'); sys.exit(3)")
    result = kubetrain("run", str(write_job(tmp_path, job)))
    assert result.returncode == 1
    assert "master-0 | about to fail" in result.stdout
    assert "pytorchjob/crash Failed: " in result.stderr and "failed" in result.stderr.lower()


def test_invalid_job_exits_2_before_starting_anything(tmp_path: Path) -> None:
    job = pytorchjob("bad", "print(1)")
    job["spec"]["pytorchReplicaSpecs"]["Master"]["replicas"] = 2
    started = time.monotonic()
    result = kubetrain("run", str(write_job(tmp_path, job)))
    assert result.returncode == 2
    assert "spec.pytorchReplicaSpecs[Master].replicas: Forbidden" in result.stderr
    assert "starting the local plane" not in result.stderr
    assert "Traceback" not in result.stderr
    assert time.monotonic() - started < 15


def test_a_job_from_stdin_runs_in_the_current_directory(tmp_path: Path) -> None:
    (tmp_path / "data.txt").write_text("beside the job\n")
    job = pytorchjob("piped", "print(open('data.txt').read().strip())")
    result = subprocess.run(
        [sys.executable, "-m", "kubetrain.cli.main", "run", "--no-status", "-"],
        input=yaml.safe_dump(job),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert result.returncode == 0, result.stderr
    assert "master-0 | beside the job" in result.stdout.splitlines()


def test_missing_file_exits_2(tmp_path: Path) -> None:
    result = kubetrain("run", str(tmp_path / "nope.yaml"))
    assert result.returncode == 2 and "no such file" in result.stderr


def _interrupt_leaves_nothing(tmp_path: Path, sig: int, expected_code: int) -> None:
    marker = f"kubetrain-test-{uuid.uuid4().hex}"
    sleeper = "import time; print('started', flush=True); time.sleep(600)"
    job = pytorchjob("sleepy", sleeper, sleeper, workers=2, env={"KUBETRAIN_TEST_MARKER": marker})
    proc = subprocess.Popen(
        [sys.executable, "-m", "kubetrain.cli.main", "run", str(write_job(tmp_path, job))],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        deadline = time.monotonic() + 60
        while len(processes_with(marker)) < 3 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(processes_with(marker)) >= 3, "the pods never started"
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == expected_code, stderr
    assert "interrupted: deleting pytorchjob/sleepy" in stderr
    assert processes_with(marker) == []


def test_sigint_deletes_the_job_and_leaves_no_process(tmp_path: Path) -> None:
    _interrupt_leaves_nothing(tmp_path, signal.SIGINT, 130)


def test_sigterm_deletes_the_job_and_leaves_no_process(tmp_path: Path) -> None:
    _interrupt_leaves_nothing(tmp_path, signal.SIGTERM, 143)


def test_restarted_container_logs_are_streamed_too(tmp_path: Path) -> None:
    script = (
        "import os, sys\n"
        "if not os.path.exists('attempted'):\n"
        "    open('attempted', 'w').close(); print('first attempt fails'); sys.exit(1)\n"
        "print('second attempt works')\n"
    )
    job = pytorchjob("flaky", script, restart_policy="OnFailure")
    result = kubetrain("run", str(write_job(tmp_path, job)))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines.index("master-0 | first attempt fails") < lines.index("master-0 | second attempt works")


def test_timeout_fails_and_deletes_the_job(tmp_path: Path) -> None:
    job = pytorchjob("slow", "import time; print('sleeping', flush=True); time.sleep(120)")
    result = kubetrain("run", str(write_job(tmp_path, job)), "--timeout", "2")
    assert result.returncode == 1
    assert "pytorchjob/slow: not finished after 2s; deleting it" in result.stderr


def test_a_closed_stdout_stops_the_job_quietly_and_leaves_nothing(tmp_path: Path) -> None:
    """`kubetrain run job.yaml | head -1`: once head exits, the job and plane go, no traceback."""
    marker = f"kubetrain-test-{uuid.uuid4().hex}"
    chatty = (
        "import itertools, time\nfor i in itertools.count(): print('line', i, flush=True); time.sleep(0.05)"
    )
    job = pytorchjob("chatty", chatty, env={"KUBETRAIN_TEST_MARKER": marker})
    temp = tmp_path / "tmp"
    temp.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "kubetrain.cli.main", "run", "--no-status", str(write_job(tmp_path, job))],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(temp)},
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith("master-0 | line ")
        proc.stdout.close()  # what `head -1` does once it has its line
        _, stderr = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 141, stderr
    assert "stdout was closed: deleting pytorchjob/chatty" in stderr
    assert "Traceback" not in stderr and "Exception ignored" not in stderr
    assert processes_with(marker) == []
    # The pod-address lock files stay by design: an flock dies with its holder, the file may not.
    assert [p.name for p in temp.iterdir() if not p.name.startswith("kubetrain-podnet-")] == []
