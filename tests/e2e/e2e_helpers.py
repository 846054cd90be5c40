"""Run `kubetrain run` as a user does (the real CLI, a subprocess) and read what it printed.

Each example is copied to a temporary directory first: pods run in the job file's directory and
the examples write there (checkpoints, launch logs, restart markers), so tests never touch the
repository and never see a previous run's leftovers.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "local"
RUN_TIMEOUT = 240.0
"""Per example; the slowest (TF PS) takes ~25 s here, alone on 2 cores."""
STOP_GRACE = 45.0
"""After SIGTERM the CLI deletes the job (pods get their grace period) and stops the node."""

LOG_LINE = re.compile(r"^(?P<replica>[a-z0-9-]+?)\s*\| ?(?P<text>.*)$")
IN_CI = os.environ.get("CI") == "true"
ACCURACY_FLOOR = 0.85
"""What a trained example's test accuracy must beat (the examples' small models reach ~0.9+)."""


def require_modules(*modules: str) -> None:
    """Skip (with the reason) when a framework is missing; under CI=true that is an error instead."""
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    _missing_fails_in_ci(missing, "not installed (pip install -r requirements-e2e.txt)")


def require_programs(*programs: str) -> None:
    """Skip (with the reason) when a program is not on PATH; under CI=true that is an error instead."""
    missing = [p for p in programs if shutil.which(p) is None]
    _missing_fails_in_ci(missing, "not found (scripts/install-system-deps --tests)")


def interpreter_image_map(variable: str, how: str, image: str, dest: Path) -> dict[str, str]:
    """The env of a run whose `image` (a glob) runs on the interpreter `$variable` names (a
    framework with a numpy of its own: MXNet, Chainer), through a node image map written in
    `dest`; skipped without it (`how` says how to get one), an error under CI=true."""
    python = os.environ.get(variable, "")
    _missing_fails_in_ci([] if python else [variable], f"is not set: {how}")
    image_map = dest / "images.yaml"
    image_map.write_text(f'images:\n  - image: "{image}"\n    python: {python}\n')
    return {"KUBETRAIN_IMAGE_MAP": str(image_map)}


def _missing_fails_in_ci(missing: list[str], why: str) -> None:
    if not missing:
        return
    reason = f"{', '.join(missing)} {why}"
    if IN_CI:
        pytest.fail(f"CI=true: {reason}", pytrace=False)
    pytest.skip(reason)


def trained_on_digits(run: Run, ranks: int, replica: str) -> None:
    """The MPI digits program's last line (chainer-mpi/train.py): loss halved, accuracy above the
    floor, identical weights on all `ranks`."""
    final = run.one(
        r"final loss (?P<last>[\d.]+) \(first (?P<first>[\d.]+)\), test accuracy (?P<acc>[\d.]+), "
        rf"{ranks} ranks, identical weights: True",
        replica,
    )
    last, first, acc = floats(final, "last", "first", "acc")
    assert last < first / 2 and acc > ACCURACY_FLOOR, run.describe()


def copy_example(name: str, dest: Path) -> Path:
    target = dest / name
    shutil.copytree(
        EXAMPLES / name,
        target,
        ignore=shutil.ignore_patterns(".model", ".example-state", "log", "__pycache__"),
    )
    return target


def cli_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    env.pop("KUBETRAIN_IMAGE_MAP", None)  # the examples run in this environment unless a test says so
    env.pop("KUBETRAIN_EXAMPLE_STATE_DIR", None)
    env.update(extra or {})
    return env


def cli_argv(job: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "kubetrain.cli.main", "run", "--no-status", *args, str(job)]


@dataclass
class Run:
    """One finished `kubetrain run`: exit code, output and wall time."""

    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    lines: list[tuple[str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        for line in self.stdout.splitlines():
            match = LOG_LINE.match(line)
            if match:
                self.lines.append((match["replica"], match["text"]))

    def logs(self, replica: str) -> list[str]:
        """The lines one replica (`worker-1`, `chief-0`) printed, in order."""
        return [text for r, text in self.lines if r == replica]

    def replicas(self) -> set[str]:
        return {r for r, _ in self.lines}

    def find(self, pattern: str, replica: str | None = None) -> list[re.Match[str]]:
        rx = re.compile(pattern)
        texts = self.logs(replica) if replica else [t for _, t in self.lines]
        return [m for m in (rx.search(t) for t in texts) if m]

    def one(self, pattern: str, replica: str | None = None) -> re.Match[str]:
        found = self.find(pattern, replica)
        assert found, f"no log line of {replica or 'any replica'} matches {pattern!r}\n{self.describe()}"
        return found[-1]

    def describe(self) -> str:
        tail = "\n".join(self.stdout.splitlines()[-60:])
        return (
            f"$ {' '.join(self.argv)}\nexit {self.returncode} after {self.seconds:.1f}s\n"
            f"--- stdout (last 60 lines)\n{tail}\n--- stderr\n{self.stderr[-4000:]}"
        )


def _stop(proc: subprocess.Popen[str]) -> None:
    """SIGTERM like a user's Ctrl-C (the CLI deletes the job and stops its pods), SIGKILL last."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(STOP_GRACE)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def run_job(job: Path, *args: str, env: dict[str, str] | None = None, timeout: float = RUN_TIMEOUT) -> Run:
    argv = cli_argv(job, *args)
    start = time.monotonic()
    proc = subprocess.Popen(
        argv,
        cwd=REPO,
        env=cli_env(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _stop(proc)
        stdout, stderr = proc.communicate()
        run = Run(argv, proc.returncode, stdout, stderr, time.monotonic() - start)
        pytest.fail(f"not finished after {timeout:.0f}s\n{run.describe()}", pytrace=False)
    return Run(argv, proc.returncode, stdout, stderr, time.monotonic() - start)


class KeptRun:
    """`kubetrain run --keep`: after the job finished the plane stays up with a kubeconfig written."""

    def __init__(self, proc: subprocess.Popen[str], argv: list[str], start: float) -> None:
        self.proc, self.argv, self.start = proc, argv, start
        self.stdout: list[str] = []
        self.stderr: list[str] = []
        self.kubeconfig_ready = threading.Event()
        self._readers = [
            threading.Thread(target=self._read, args=(proc.stdout, self.stdout), daemon=True),
            threading.Thread(target=self._read, args=(proc.stderr, self.stderr), daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    def _read(self, stream: object, sink: list[str]) -> None:
        for line in stream:  # type: ignore[attr-defined]
            sink.append(line)
            if "kubeconfig written to" in line:
                self.kubeconfig_ready.set()

    def wait_kept(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not self.kubeconfig_ready.wait(0.2):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.finish()
                pytest.fail(
                    "`kubetrain run --keep` did not keep the plane after the job finished\n"
                    + self.result().describe(),
                    pytrace=False,
                )

    def finish(self) -> Run:
        """Ctrl-C: the plane stops; the exit code is still the job's."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(STOP_GRACE)
            except subprocess.TimeoutExpired:
                _stop(self.proc)
        for reader in self._readers:
            reader.join(5)
        return self.result()

    def result(self) -> Run:
        return Run(
            self.argv,
            self.proc.returncode if self.proc.returncode is not None else -1,
            "".join(self.stdout),
            "".join(self.stderr),
            time.monotonic() - self.start,
        )


@contextmanager
def run_kept(job: Path, kubeconfig: Path, *args: str, timeout: float = RUN_TIMEOUT) -> Iterator[KeptRun]:
    argv = cli_argv(job, "--keep", "--kubeconfig-out", str(kubeconfig), *args)
    proc = subprocess.Popen(
        argv,
        cwd=REPO,
        env=cli_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    kept = KeptRun(proc, argv, time.monotonic())
    try:
        kept.wait_kept(timeout)
        yield kept
    finally:
        kept.finish()


def floats(match: re.Match[str], *groups: str) -> Sequence[float]:
    return [float(match[g]) for g in groups]
