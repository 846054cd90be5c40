"""The cluster commands (`get`, `describe`, `logs`, `wait`, `delete`) through `main([...])`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from cli_plane import jaxjob, pytorchjob, write_job

import kubetrain
from kubetrain.cli.main import main

PRINT_RANK = "import os; print('process', os.environ.get('RANK', os.environ.get('PROCESS_ID')))"


@pytest.fixture(scope="module")
def finished_jobs(kubeconfig: str) -> str:
    """One JAXJob that succeeded and one PyTorchJob that failed, shared by the read-only tests."""
    with kubetrain.Client(kubeconfig) as client:
        client.create(jaxjob("jax-ok", "import os; print('process', os.environ['PROCESS_ID'])"))
        client.create(pytorchjob("torch-fail", "import sys; print('giving up'); sys.exit(3)"))
        client.create(pytorchjob("five-lines", "for i in range(1, 6): print('line', i)"))
        client.wait("pytorchjob", "five-lines", timeout=60)
        client.wait("jaxjob", "jax-ok", timeout=60)
        client.wait("pytorchjob", "torch-fail", timeout=60)
    return kubeconfig


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_get_all_kinds_table(finished_jobs: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "get", "--kubeconfig", finished_jobs)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["NAME", "STATE", "AGE"]
    rows = {line.split()[0]: line.split()[1] for line in lines[1:]}
    assert rows["jaxjob.kubeflow.org/jax-ok"] == "Succeeded"
    assert rows["pytorchjob.kubeflow.org/torch-fail"] == "Failed"


def test_get_one_as_json_yaml_wide(finished_jobs: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "get", "JAXJobs", "jax-ok", "-o", "json", "--kubeconfig", finished_jobs)
    assert code == 0 and json.loads(out)["metadata"]["name"] == "jax-ok"
    code, out, _ = run(capsys, "get", "jaxjob", "-o", "yaml", "--kubeconfig", finished_jobs)
    assert code == 0 and yaml.safe_load(out)["kind"] == "List"
    code, out, _ = run(capsys, "get", "pytorchjob", "-o", "wide", "--kubeconfig", finished_jobs)
    assert "torch-fail" in out and "Master:0/0/1 of 1" in out


def test_get_empty_namespace(finished_jobs: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "get", "tfjobs", "-n", "nobody-here", "--kubeconfig", finished_jobs)
    assert code == 0 and out == "" and "No tfjobs jobs found in nobody-here namespace." in err


def test_describe(finished_jobs: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "describe", "pytorchjob", "torch-fail", "--kubeconfig", finished_jobs)
    assert code == 0
    assert "State:         Failed" in out and "torch-fail-master-0" in out


def test_logs_of_a_job_are_prefixed_per_replica(
    finished_jobs: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "logs", "jaxjob", "jax-ok", "--kubeconfig", finished_jobs)
    assert code == 0
    assert out.splitlines() == ["worker-0 | process 0", "worker-1 | process 1"]
    code, out, _ = run(
        capsys, "logs", "jaxjob", "jax-ok", "--replica", "worker-1", "--kubeconfig", finished_jobs
    )
    assert out.splitlines() == ["process 1"]
    code, out, _ = run(capsys, "logs", "jax-ok-worker-0", "--kubeconfig", finished_jobs)
    assert out.splitlines() == ["process 0"]
    code, out, _ = run(capsys, "logs", "jaxjob", "jax-ok", "-f", "--kubeconfig", finished_jobs)
    assert code == 0 and sorted(out.splitlines()) == ["worker-0 | process 0", "worker-1 | process 1"]


def test_tail_and_replica_read_the_same_with_and_without_follow(
    finished_jobs: str, capsys: pytest.CaptureFixture[str]
) -> None:
    for follow in ([], ["-f"]):
        code, out, _ = run(
            capsys, "logs", "pytorchjob", "five-lines", "--tail", "2", *follow, "--kubeconfig", finished_jobs
        )
        assert code == 0 and out.splitlines() == ["master-0 | line 4", "master-0 | line 5"], follow
        code, out, _ = run(
            capsys,
            "logs",
            "jaxjob",
            "jax-ok",
            "--replica",
            "worker-1",
            *follow,
            "--kubeconfig",
            finished_jobs,
        )
        assert code == 0 and out.splitlines() == ["process 1"], follow


def test_wait_exit_codes(finished_jobs: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "wait", "jaxjob", "jax-ok", "--kubeconfig", finished_jobs)[0] == 0
    code, _, err = run(capsys, "wait", "pytorchjob", "torch-fail", "--kubeconfig", finished_jobs)
    assert code == 1 and "job failed" in err
    code, _, _ = run(
        capsys, "wait", "pytorchjob", "torch-fail", "--for", "Failed", "--kubeconfig", finished_jobs
    )
    assert code == 0
    code, _, err = run(
        capsys,
        "wait",
        "pytorchjob",
        "torch-fail",
        "--for",
        "Succeeded",
        "--timeout",
        "0.3",
        "--kubeconfig",
        finished_jobs,
    )
    assert code == 1 and "did not reach Succeeded within 0.3s" in err


def test_errors_are_one_line_messages(finished_jobs: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "get", "pytorchjob", "missing", "--kubeconfig", finished_jobs)
    assert code == 1 and 'pytorchjob "missing" not found in namespace "default"' in err
    code, _, err = run(capsys, "get", "pytorch", "--kubeconfig", finished_jobs)
    assert code == 2 and 'unknown job kind "pytorch"' in err
    code, _, err = run(capsys, "get", "--kubeconfig", "/nonexistent/kubeconfig")
    assert code == 2 and "does not exist" in err
    code, _, err = run(
        capsys, "logs", "jaxjob", "jax-ok", "--replica", "worker-7", "--kubeconfig", finished_jobs
    )
    assert code == 1 and "has no replica worker-7" in err
    assert "Traceback" not in err


def test_delete_foreground_with_wait(
    kubeconfig: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with kubetrain.Client(kubeconfig) as client:
        client.create(write_job(tmp_path, pytorchjob("to-delete", "import time; time.sleep(60)")))
        client.wait("pytorchjob", "to-delete", ("Running",), timeout=30)
    code, out, _ = run(
        capsys, "delete", "pytorchjob", "to-delete", "--wait", "--timeout", "30", "--kubeconfig", kubeconfig
    )
    assert code == 0 and 'pytorchjob.kubeflow.org "to-delete" deleted' in out
    with kubetrain.Client(kubeconfig) as client:
        assert client.pods("pytorchjob", "to-delete") == []
