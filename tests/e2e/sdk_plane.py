"""`kubetrain up` as a subprocess, driven by the upstream SDK: shared by the SDK e2e tests.

The plane is started as a user starts it, on a free port, and reached only through the kubeconfig
it writes. Every process it starts carries a marker in its environment, so a process that outlives
it is found by scanning /proc.
"""

from __future__ import annotations

import base64
import contextlib
import os
import signal
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import yaml
from kubeflow.training import TrainingClient

from tests.procscan import processes_with as scan

REPO = Path(__file__).resolve().parents[2]
NAMESPACE = "default"
MARKER_ENV = "KUBETRAIN_SDK_E2E_MARKER"


def processes_with(marker: str) -> list[int]:
    """Pids whose environment holds this suite's `marker`."""
    return scan(f"{MARKER_ENV}={marker}")


@dataclass
class Shutdown:
    returncode: int
    leftovers: list[int]
    output: str


class KubetrainUp:
    """`python -m kubetrain.cli.main up --port 0 --kubeconfig <tmp>`, started and stopped like a user does."""

    def __init__(
        self, workdir: Path, image_map: Path | None = None, gang_scheduler_name: str | None = None
    ) -> None:
        self.workdir = workdir
        self.kubeconfig = workdir / "kubeconfig.yaml"
        self.marker = uuid.uuid4().hex
        self._log_path = workdir / "kubetrain-up.log"
        self._image_map = image_map
        self._gang_scheduler_name = gang_scheduler_name
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 60.0) -> None:
        env = {**os.environ, MARKER_ENV: self.marker}
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
        if self._image_map is not None:
            env["KUBETRAIN_IMAGE_MAP"] = str(self._image_map)
        argv = [
            sys.executable,
            "-m",
            "kubetrain.cli.main",
            "up",
            "--port",
            "0",
            "--kubeconfig",
            str(self.kubeconfig),
            "--workdir",
            str(self.workdir),
            "--data-dir",
            str(self.workdir / "data"),
            "-n",
            NAMESPACE,
        ]
        if self._gang_scheduler_name:
            argv += ["--gang-scheduler-name", self._gang_scheduler_name]
        with open(self._log_path, "wb") as log:
            self._proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, cwd=REPO, env=env)
        deadline = time.monotonic() + timeout
        while not self._ready():
            if self._proc.poll() is not None:
                raise AssertionError(f"kubetrain up exited with {self._proc.returncode}:\n{self.output()}")
            if time.monotonic() > deadline:
                self.stop()
                raise AssertionError(f"kubetrain up not ready after {timeout:.0f}s:\n{self.output()}")
            time.sleep(0.1)

    def _ready(self) -> bool:
        """The kubeconfig is written once the plane serves; ready when the kubeflow.org API answers."""
        try:
            config = yaml.safe_load(self.kubeconfig.read_text())
            cluster = config["clusters"][0]["cluster"]
            ca = base64.b64decode(cluster["certificate-authority-data"]).decode()
            request = urllib.request.Request(
                f"{cluster['server']}/apis/kubeflow.org/v1",
                headers={"Authorization": f"Bearer {config['users'][0]['user']['token']}"},
            )
            context = ssl.create_default_context(cadata=ca)
            with urllib.request.urlopen(request, timeout=2, context=context) as response:
                return bool(response.status == 200)
        except (OSError, yaml.YAMLError, KeyError, IndexError, TypeError, ValueError, urllib.error.URLError):
            return False  # not written yet, half written, or not serving yet

    def output(self) -> str:
        return self._log_path.read_text(errors="replace") if self._log_path.exists() else ""

    def client(self, job_kind: str | None = None) -> TrainingClient:
        if job_kind is None:
            return TrainingClient(config_file=str(self.kubeconfig), namespace=NAMESPACE)
        return TrainingClient(config_file=str(self.kubeconfig), namespace=NAMESPACE, job_kind=job_kind)

    def stop(self, timeout: float = 30.0) -> Shutdown:
        """Ctrl-C, then whatever is left: kill what outlived it (ours by the marker) and report it."""
        assert self._proc is not None
        if self._proc.poll() is None:
            self._proc.send_signal(signal.SIGINT)
            try:
                self._proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        leftovers = processes_with(self.marker)
        for pid in leftovers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        return Shutdown(self._proc.returncode, leftovers, self.output())


def assert_clean(shutdown: Shutdown) -> None:
    assert shutdown.returncode == 0, f"kubetrain up exited with {shutdown.returncode}:\n{shutdown.output}"
    assert "Traceback" not in shutdown.output, shutdown.output
    assert shutdown.leftovers == [], f"processes outlived kubetrain up: {shutdown.leftovers}"


@contextlib.contextmanager
def running_plane(
    workdir: Path, image_map: Path | None = None, gang_scheduler_name: str | None = None
) -> Iterator[KubetrainUp]:
    """A started plane; on exit it is stopped and must shut down cleanly (no leftovers, no kubeconfig)."""
    plane = KubetrainUp(workdir, image_map=image_map, gang_scheduler_name=gang_scheduler_name)
    plane.start()
    try:
        yield plane
    finally:
        shutdown = plane.stop()
    assert_clean(shutdown)
    assert not plane.kubeconfig.exists(), "kubetrain up left its kubeconfig behind"
