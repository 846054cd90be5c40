"""`kubetrain operator` and `kubetrain node` as real subprocesses, for the process, cluster and
differential tiers (the last also runs upstream's operators through `Process`).

Each process writes its log to a file (shown when a test fails), and is stopped by its own pid:
SIGTERM for a graceful stop, SIGKILL to play a crash. Ports are picked free beforehand, so two
operators on one machine do not collide.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import aiohttp
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

REPO = Path(__file__).resolve().parents[3]
LEASE_FLAGS = (
    "--leader-election-lease-duration",
    "4",
    "--leader-election-renew-deadline",
    "3",
    "--leader-election-retry-period",
    "0.5",
)
"""Short leases: a SIGKILLed leader is replaced within ~4 s instead of client-go's 15 s."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def child_env() -> dict[str, str]:
    """The test's environment plus the source tree on PYTHONPATH (kubetrain is not pip-installed)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    env.pop("MY_POD_NAMESPACE", None)
    env.pop("KUBEFLOW_NAMESPACE", None)
    return env


async def run_cli(*args: str, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
    """`kubetrain ARGS` from the source tree, to completion, with its output captured."""
    return await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "kubetrain.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env=child_env(),
        cwd=REPO,
    )


class Process:
    """Any `argv` as a subprocess with its output in `log_path`, stopped by its own pid."""

    def __init__(
        self,
        argv: Sequence[str],
        log_path: Path,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.argv = list(argv)
        self.log_path = log_path
        self._log = open(log_path, "wb")  # noqa: SIM115 - closed in stop()
        self.popen = subprocess.Popen(
            self.argv,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env={**child_env(), **(env or {})},
            cwd=cwd or REPO,
        )

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def running(self) -> bool:
        return self.popen.poll() is None

    def log(self) -> str:
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text(errors="replace")

    def signal(self, signum: int) -> None:
        if self.running:
            os.kill(self.pid, signum)

    async def wait(self, timeout: float) -> int:
        deadline = time.monotonic() + timeout
        while self.running:
            if time.monotonic() > deadline:
                raise TimeoutError(f"pid {self.pid} still running after {timeout}s:\n{self.log()[-3000:]}")
            await asyncio.sleep(0.05)
        return int(self.popen.returncode)

    async def wait_for_log(self, text: str, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.log():
            if not self.running:
                code = self.popen.returncode
                raise AssertionError(f"exited ({code}) before logging {text!r}:\n{self.log()}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {text!r} after {timeout}s:\n{self.log()[-3000:]}")
            await asyncio.sleep(0.1)

    def stop(self, grace: float = 10.0) -> None:
        """SIGTERM, then SIGKILL after `grace`; always reaps and closes the log."""
        if self.running:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(grace)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(10)
        self._log.close()


class Proc(Process):
    """`python -m kubetrain.cli.main ARGS` from the source tree."""

    def __init__(
        self,
        args: Sequence[str],
        log_path: Path,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.args = list(args)
        super().__init__([sys.executable, "-m", "kubetrain.cli.main", *self.args], log_path, cwd, env)


class OperatorProc(Proc):
    """An operator subprocess with its probe and metrics ports on 127.0.0.1."""

    def __init__(self, kubeconfig: Path, log_path: Path, *extra: str) -> None:
        self.metrics_port = free_port()
        self.probe_port = free_port()
        super().__init__(
            [
                "operator",
                "--kubeconfig",
                str(kubeconfig),
                "--metrics-bind-address",
                f"127.0.0.1:{self.metrics_port}",
                "--health-probe-bind-address",
                f"127.0.0.1:{self.probe_port}",
                *extra,
            ],
            log_path,
        )

    async def get(self, port: int, path: str) -> tuple[int, str]:
        async with (
            aiohttp.ClientSession() as http,
            http.get(f"http://127.0.0.1:{port}{path}", timeout=aiohttp.ClientTimeout(total=5)) as resp,
        ):
            return resp.status, await resp.text()

    async def probe(self, path: str) -> tuple[int, str]:
        return await self.get(self.probe_port, path)

    async def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            if not self.running:
                raise AssertionError(f"operator exited ({self.popen.returncode}):\n{self.log()}")
            try:
                if (await self.probe("/readyz"))[0] == 200:
                    return
            except (aiohttp.ClientError, OSError, TimeoutError):
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"operator not ready after {timeout}s:\n{self.log()[-3000:]}")
            await asyncio.sleep(0.1)

    async def metrics(self) -> dict[str, list[Sample]]:
        """Family name -> samples, parsed with prometheus_client's own parser."""
        status, text = await self.get(self.metrics_port, "/metrics")
        assert status == 200, text
        return {family.name: list(family.samples) for family in text_string_to_metric_families(text)}

    async def is_leader(self) -> bool:
        try:
            samples = (await self.metrics()).get("leader_election_master_status", [])
        except (aiohttp.ClientError, OSError, TimeoutError):
            return False
        return any(s.value == 1.0 for s in samples)

    async def reconciles(self) -> float:
        """How many reconciles this process ran (the leader's count grows, a standby's stays 0)."""
        samples = (await self.metrics()).get("kubetrain_reconcile_duration_seconds", [])
        return sum(s.value for s in samples if s.name.endswith("_count"))


def start_node(
    kubeconfig: Path,
    log_path: Path,
    workdir: Path,
    name: str = "kubetrain-e2e",
    bind: bool = True,
    network: str = "host",
) -> Proc:
    args = [
        "node",
        "--kubeconfig",
        str(kubeconfig),
        "--name",
        name,
        "--workdir",
        str(workdir),
        "--network",
        network,
    ]
    if bind:
        args.append("--bind-pending")
    return Proc(args, log_path)
