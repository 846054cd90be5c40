"""`create -f`, `apply -f`, `delete -f` and `get -A/-l/-w`, through `main([...])` and a subprocess."""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml
from cli_plane import PlaneThread, pytorchjob, write_job

import kubetrain
from kubetrain.cli.main import main
from kubetrain.client.errors import NotFound

REPO = Path(__file__).resolve().parents[3]
SLEEP = "import time; time.sleep(600)"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _labelled(name: str, labels: dict[str, str], namespace: str | None = None) -> dict:
    job = pytorchjob(name, SLEEP)
    job["metadata"]["labels"] = labels
    if namespace:
        job["metadata"]["namespace"] = namespace
    return job


def test_create_apply_and_delete_files_and_directories(
    kubeconfig: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    write_job(jobs, pytorchjob("file-a", SLEEP))
    write_job(jobs, pytorchjob("file-b", SLEEP))
    (jobs / "notes.txt").write_text("not a job")
    code, out, _ = run(capsys, "create", "-f", str(jobs), "--kubeconfig", kubeconfig)
    assert code == 0
    assert out.splitlines() == [
        "pytorchjob.kubeflow.org/file-a created",
        "pytorchjob.kubeflow.org/file-b created",
    ]

    code, out, err = run(capsys, "create", "-f", str(jobs / "file-a.yaml"), "--kubeconfig", kubeconfig)
    assert code == 1 and out == "" and 'pytorchjob "file-a" already exists' in err

    single = tmp_path / "file-c.yaml"
    single.write_text(yaml.safe_dump(pytorchjob("file-c", SLEEP)))
    code, out, _ = run(capsys, "apply", "-f", str(single), "--kubeconfig", kubeconfig)
    assert code == 0 and out.strip() == "pytorchjob.kubeflow.org/file-c created"
    code, out, _ = run(capsys, "apply", "-f", str(single), "--kubeconfig", kubeconfig)
    assert code == 0 and out.strip() == "pytorchjob.kubeflow.org/file-c unchanged"
    single.write_text(yaml.safe_dump(_labelled("file-c", {"stage": "two"})))
    code, out, _ = run(capsys, "apply", "-f", str(single), "--kubeconfig", kubeconfig)
    assert code == 0 and out.strip() == "pytorchjob.kubeflow.org/file-c configured"
    with kubetrain.Client(kubeconfig) as client:
        assert client.get("pytorchjob", "file-c")["metadata"]["labels"] == {"stage": "two"}

    code, out, _ = run(capsys, "delete", "-f", str(jobs), "-f", str(single), "--kubeconfig", kubeconfig)
    assert code == 0
    assert out.splitlines() == [
        'pytorchjob.kubeflow.org "file-a" deleted',
        'pytorchjob.kubeflow.org "file-b" deleted',
        'pytorchjob.kubeflow.org "file-c" deleted',
    ]


def test_one_invalid_job_submits_nothing(
    kubeconfig: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_job(tmp_path, pytorchjob("valid-one", SLEEP))
    bad = pytorchjob("invalid-one", SLEEP)
    bad["spec"]["pytorchReplicaSpecs"]["Master"]["replicas"] = 2
    write_job(tmp_path, bad)
    for verb in ("create", "apply"):
        code, out, err = run(capsys, verb, "-f", str(tmp_path), "--kubeconfig", kubeconfig)
        assert code == 2 and out == "", verb
        assert "spec.pytorchReplicaSpecs[Master].replicas: Forbidden" in err
    with kubetrain.Client(kubeconfig) as client:
        names = {j["metadata"]["name"] for j in client.list("pytorchjob")}
    assert not {"valid-one", "invalid-one"} & names


def test_delete_needs_a_name_or_files(kubeconfig: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "delete", "--kubeconfig", kubeconfig)
    assert code == 2 and "give KIND NAME or -f FILE" in err
    code, _, err = run(capsys, "delete", "pytorchjob", "--kubeconfig", kubeconfig)
    assert code == 2 and "which pytorchjob? kubetrain delete pytorchjob NAME" in err


def test_get_across_namespaces_and_by_label(
    plane: PlaneThread, kubeconfig: str, capsys: pytest.CaptureFixture[str]
) -> None:
    asyncio.run_coroutine_threadsafe(plane.plane.ensure_namespace("team-b"), plane.loop).result(30)
    with kubetrain.Client(kubeconfig) as client:
        client.create(_labelled("vision-a", {"team": "vision", "suite": "across"}))
        client.create(_labelled("speech-b", {"team": "speech", "suite": "across"}, namespace="team-b"))
    try:
        code, out, _ = run(capsys, "get", "pytorchjobs", "-A", "-l", "suite", "--kubeconfig", kubeconfig)
        rows = [line.split()[:2] for line in out.splitlines()]
        assert code == 0 and rows == [["NAMESPACE", "NAME"], ["default", "vision-a"], ["team-b", "speech-b"]]
        code, out, _ = run(capsys, "get", "-A", "-l", "team=speech", "-o", "name", "--kubeconfig", kubeconfig)
        assert code == 0 and out.splitlines() == ["pytorchjob.kubeflow.org/speech-b"]
        code, out, err = run(capsys, "get", "pytorchjob", "-l", "team=speech", "--kubeconfig", kubeconfig)
        assert code == 0 and out == "" and "No pytorchjob jobs found in default namespace." in err
        code, _, err = run(capsys, "get", "pytorchjob", "vision-a", "-A", "--kubeconfig", kubeconfig)
        assert code == 2 and "drop -A/-l, or the NAME" in err
    finally:
        with kubetrain.Client(kubeconfig) as client:
            client.delete("pytorchjob", "vision-a")
        with kubetrain.Client(kubeconfig, namespace="team-b") as client:
            client.delete("pytorchjob", "speech-b")


class _Lines:
    """A subprocess's stdout lines, read on a thread so a missing line fails instead of hanging."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self._queue: queue.Queue[str] = queue.Queue()
        assert proc.stdout is not None
        stream = proc.stdout
        threading.Thread(target=lambda: [self._queue.put(line) for line in stream], daemon=True).start()

    def next(self, timeout: float = 30) -> list[str]:
        return self._queue.get(timeout=timeout).split()

    def until_named(self, name: str, timeout: float = 30) -> list[str]:
        deadline = time.monotonic() + timeout
        while True:
            words = self.next(max(0.1, deadline - time.monotonic()))
            if words and words[0] == name:
                return words


def _ignoring_sigint() -> None:
    """What a shell does to a background job: SIGINT ignored, inherited by what it starts."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def test_get_watch_prints_the_table_then_a_line_per_change(kubeconfig: str) -> None:
    with kubetrain.Client(kubeconfig) as client:
        client.create(_labelled("watched-before", {"suite": "watch"}))
    watch = ["get", "pytorchjobs", "-w", "-l", "suite=watch", "--kubeconfig", kubeconfig]
    proc = subprocess.Popen(
        [sys.executable, "-m", "kubetrain.cli.main", *watch],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        preexec_fn=_ignoring_sigint,  # it must stop on SIGINT all the same
    )
    lines = _Lines(proc)
    try:
        assert lines.next() == ["NAME", "STATE", "AGE"]
        assert lines.next()[0] == "watched-before"
        with kubetrain.Client(kubeconfig) as client:
            client.create(_labelled("watched-after", {"suite": "watch"}))
            lines.until_named("watched-after")  # its ADDED line
            client.delete("pytorchjob", "watched-before")
            lines.until_named("watched-before")  # its deletion (and the status changes before it)
    finally:
        proc.send_signal(signal.SIGINT)
        try:  # not communicate(): the reader thread owns stdout
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        with kubetrain.Client(kubeconfig) as client, contextlib.suppress(NotFound):
            client.delete("pytorchjob", "watched-after")
    assert proc.returncode == 130


def test_each_job_runs_in_the_directory_of_its_file(
    kubeconfig: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The plane's working directory is only the default: a job from a file runs beside it."""
    for name in ("here-a", "here-b"):
        directory = tmp_path / name
        directory.mkdir()
        (directory / "data.txt").write_text(f"data of {name}\n")
        write_job(directory, pytorchjob(name, "print(open('data.txt').read().strip())"))
    code, _, _ = run(
        capsys, "create", "-f", str(tmp_path / "here-a" / "here-a.yaml"), "--kubeconfig", kubeconfig
    )
    assert code == 0
    with kubetrain.Client(kubeconfig) as client:
        client.create(tmp_path / "here-b" / "here-b.yaml")
        for name in ("here-a", "here-b"):
            client.wait("pytorchjob", name, timeout=60)
            assert list(client.logs(f"{name}-master-0")) == [f"data of {name}"]
            client.delete("pytorchjob", name)
