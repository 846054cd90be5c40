"""The operators vs_upstream.py puts side by side: upstream's training-operator and mpi-operator
(started as the differential tier starts them, tests/differential/peers.py) and `kubetrain
operator`, each a process of its own watching one namespace, with the flags of its arm.

An arm is an operator and its flags: upstream at its defaults, upstream with kubetrain's client
rate limit and worker count, or kubetrain at its defaults. Upstream's defaults are read from the
binary's own `--help`, so the table states what really ran.
"""

from __future__ import annotations

import asyncio
import re
import shlex
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from kubetrain.runtime.config import RuntimeConfig
from tests.differential import peers
from tests.integration.operator_process.procs import OperatorProc

KUBETRAIN = "kubetrain"
TRAINING_OPERATOR = "training-operator"
MPI_OPERATOR = "mpi-operator"
RATE_FLAGS = {
    TRAINING_OPERATOR: ("kube-api-qps", "kube-api-burst", "controller-threads"),
    MPI_OPERATOR: ("kube-api-qps", "kube-api-burst", "threadiness"),
    KUBETRAIN: ("kube-api-qps", "kube-api-burst", "controller-threads"),
}
"""Each operator's flags for (client QPS, client burst, reconcile workers)."""
SYNCED_LOG = {
    TRAINING_OPERATOR: ("Starting workers", "pytorchjob-controller"),
    MPI_OPERATOR: ("Started workers",),
}
"""A log line (all of these words) an upstream operator writes once its caches synced: its
readiness does not wait for them (controller-runtime's /readyz is a ping; mpi-operator's signal is
its Lease, taken before its informers start)."""


class Peer(Protocol):
    """What the differential tier's peers and kubetrain's OperatorProc have in common."""

    popen: subprocess.Popen[bytes]

    async def wait_ready(self, timeout: float = ...) -> None: ...

    def log(self) -> str: ...

    def stop(self, grace: float = ...) -> None: ...


def help_defaults(binary: Path) -> dict[str, str]:
    """Flag name -> default, from a Go binary's `--help` (the flag package's `(default X)`)."""
    out = subprocess.run([str(binary), "--help"], capture_output=True, text=True, timeout=60, check=False)
    text = out.stdout + out.stderr
    found = re.findall(r"^\s+-{1,2}([\w-]+)(?: \w+)?\n\s+.*?\(default ([^)]*)\)", text, re.MULTILINE)
    return dict(found)


def kubetrain_defaults() -> dict[str, str]:
    config = RuntimeConfig()
    return {
        "kube-api-qps": f"{config.kube_api_qps:g}",
        "kube-api-burst": str(config.kube_api_burst),
        "controller-threads": str(config.workers),
    }


@dataclass(frozen=True)
class Arm:
    """One operator with one set of flags."""

    name: str
    operator: str
    binary: Path | None = None
    """Upstream's binary (None for kubetrain)."""
    flags: dict[str, str] = field(default_factory=dict)
    """Flags passed beyond those every start gets (namespace, ports)."""
    defaults: dict[str, str] = field(default_factory=dict)
    """The binary's flag defaults, for saying what the unset flags were."""

    def setting(self, flag: str) -> str:
        return self.flags.get(flag, self.defaults.get(flag, "?"))

    def rates(self) -> str:
        """`QPS q, burst b, w workers`: the settings that decide the arm's create rate."""
        qps, burst, workers = (self.setting(f) for f in RATE_FLAGS[self.operator])
        return f"QPS {qps}, burst {burst}, {workers} workers"

    def start(self, kubeconfig: Path, namespace: str, log_dir: Path) -> Running:
        log_path = log_dir / f"{self.operator}-{self.name}-{namespace}.log"
        peer: Peer
        if self.operator == KUBETRAIN:
            extra = [f"--{k}={v}" for k, v in self.flags.items()]
            peer = OperatorProc(kubeconfig, log_path, "--namespace", namespace, "--no-webhook", *extra)
        elif self.operator == TRAINING_OPERATOR:
            peer = peers.UpstreamTrainingOperator(
                self._binary(log_dir), kubeconfig, namespace, log_path=log_path
            )
        else:
            peer = peers.UpstreamMPIOperator(self._binary(log_dir), kubeconfig, namespace, log_path=log_path)
        return Running(self, peer)

    def _binary(self, log_dir: Path) -> Path:
        """Upstream's binary, or for extra flags a script that execs it with them prepended: the
        process is the one peers.py starts (same pid, same other flags)."""
        assert self.binary is not None
        if not self.flags:
            return self.binary
        script = log_dir / f"{self.operator}-{self.name}.sh"
        if not script.exists():
            flags = " ".join(shlex.quote(f"--{k}={v}") for k, v in self.flags.items())
            script.write_text(f'#!/bin/sh\nexec {shlex.quote(str(self.binary))} {flags} "$@"\n')
            script.chmod(0o755)
        return script


class Running:
    """A started arm: its process, until stopped."""

    def __init__(self, arm: Arm, peer: Peer) -> None:
        self.arm = arm
        self.peer = peer
        self.pid = peer.popen.pid

    async def wait_synced(self, timeout: float = 180.0) -> float:
        """Until the operator is ready and its caches are synced; seconds it took."""
        started = time.monotonic()
        await self.peer.wait_ready(timeout)
        words = SYNCED_LOG.get(self.arm.operator)
        while words and not any(all(w in line for w in words) for line in self.peer.log().splitlines()):
            if self.peer.popen.poll() is not None:
                raise RuntimeError(f"{self.arm.name} exited:\n{self.peer.log()[-3000:]}")
            if time.monotonic() - started > timeout:
                raise TimeoutError(f"{self.arm.name}: caches not synced after {timeout:.0f} s")
            await asyncio.sleep(0.1)
        return time.monotonic() - started

    def stop(self) -> None:
        self.peer.stop()


def arms(kind: str) -> list[Arm]:
    """The three arms of `kind` (pytorch or mpi): upstream at its defaults, upstream at kubetrain's
    rate settings, kubetrain at its defaults."""
    operator = TRAINING_OPERATOR if kind == "pytorch" else MPI_OPERATOR
    binary = peers.binary(operator)
    ours = kubetrain_defaults()
    equal = dict(zip(RATE_FLAGS[operator], (ours[f] for f in RATE_FLAGS[KUBETRAIN]), strict=True))
    equal["kube-api-qps"] = str(int(float(equal["kube-api-qps"])))  # upstream's flag is an int
    defaults = help_defaults(binary)
    return [
        Arm("upstream-default", operator, binary, {}, defaults),
        Arm("upstream-equal", operator, binary, equal, defaults),
        Arm(KUBETRAIN, KUBETRAIN, None, {}, ours),
    ]


def scratch_dir() -> Path:
    return Path(tempfile.mkdtemp(prefix="vs-upstream-"))
