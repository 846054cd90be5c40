"""Upstream's training-operator and mpi-operator as processes beside `kubetrain operator`, on one real
control plane.

Each binary comes from `scripts/upstream-operators` (built from upstream's Go module, cached). Outside
CI an unbuilt binary skips the tier with one line saying how to build it (minutes, once); under
CI=true it is built here, and a missing Go toolchain or a failed build is an error.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from cryptography.hazmat.primitives import serialization

from kubetrain.kube.errors import ApiError
from kubetrain.kube.pki import pem_key, serving_certificate
from kubetrain.runtime.transport import KubeClient
from tests.integration.operator_process.procs import REPO, Process, free_port

JsonDict = dict[str, Any]
SCRIPT = REPO / "scripts" / "upstream-operators"
WEBHOOK_SECRET = "training-operator-webhook-cert"
"""The Secret upstream's cert rotator fills (its --webhook-secret-name default); it must exist."""
SERVING_CERTS = Path("/tmp/k8s-webhook-server/serving-certs")
"""Where upstream v1.9.2 waits for its webhook certificate (a constant in its pkg/cert, the Secret's
mount path in its Deployment); it exits when nothing appears there."""


def unavailable(why: str) -> None:
    """Skip the tier outside CI, fail it under CI=true; `why` says how to get what is missing."""
    if os.environ.get("CI") == "true":
        raise RuntimeError(f"CI=true: the differential tier must run: {why}")
    pytest.skip(f"differential tier: {why}")


def _script(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, check=False, timeout=3600)


def binary(name: str) -> Path:
    """The cached binary of upstream's `name`; under CI=true built if missing."""
    found = _script("path", name)
    if found.returncode != 0 and os.environ.get("CI") == "true":
        found = _script("build", name)
    if found.returncode != 0:
        unavailable(f"{found.stderr.strip()} (needs Go >= 1.26; a few minutes, once)")
    return Path(found.stdout.strip())


def crd_manifests(name: str) -> list[JsonDict]:
    """Upstream's CRDs of the same module version as the binary."""
    found = _script("manifests", name)
    if found.returncode != 0:
        unavailable(found.stderr.strip())
    return [
        yaml.safe_load(path.read_text())
        for path in sorted(Path(found.stdout.strip()).glob("kubeflow.org_*.yaml"))
    ]


def ensure_serving_certificate() -> None:
    """A self-signed pair where upstream's webhook server loads it, unless one is there already.

    No ValidatingWebhookConfiguration points at upstream's webhook (the API server never calls it);
    the server only has to start, and the operator only reports ready once the file exists. The
    directory is renamed into place whole, so a concurrent run never sees half a pair.
    """
    if (SERVING_CERTS / "tls.crt").exists():
        return
    SERVING_CERTS.parent.mkdir(parents=True, exist_ok=True)
    cert, key = serving_certificate("training-operator", ["localhost"], validity=dt.timedelta(days=3650))
    staging = Path(tempfile.mkdtemp(dir=SERVING_CERTS.parent))
    (staging / "tls.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (staging / "tls.key").write_bytes(pem_key(key))
    staging.chmod(0o755)
    try:
        staging.rename(SERVING_CERTS)
    except OSError:  # another run put its pair there first
        for path in staging.iterdir():
            path.unlink()
        staging.rmdir()


class UpstreamTrainingOperator(Process):
    """Upstream's `training-operator.v1` watching one namespace, leader election off, its metrics and
    probes on free loopback ports (the webhook server binds every interface: v1.9.2 has no flag for
    its host). `extra` flags are appended (e.g. `--gang-scheduler-name`)."""

    def __init__(
        self, binary: Path, kubeconfig: Path, namespace: str, *, log_path: Path, extra: Sequence[str] = ()
    ) -> None:
        self.probe_port = free_port()
        argv = [
            str(binary),
            "--namespace",
            namespace,
            "--leader-elect=false",
            f"--metrics-bind-address=127.0.0.1:{free_port()}",
            f"--health-probe-bind-address=127.0.0.1:{self.probe_port}",
            f"--webhook-server-port={free_port()}",
            *extra,
        ]
        env = {"KUBECONFIG": str(kubeconfig), "MY_POD_NAMESPACE": namespace, "TMPDIR": "/tmp"}
        super().__init__(argv, log_path, env=env)

    async def wait_ready(self, timeout: float = 120.0) -> None:
        """Until /readyz answers 200: certificates in place and its controllers set up."""
        deadline = time.monotonic() + timeout
        url = f"http://127.0.0.1:{self.probe_port}/readyz"
        async with aiohttp.ClientSession() as http:
            while True:
                if not self.running:
                    raise AssertionError(f"upstream operator exited ({self.popen.returncode}):\n{self.log()}")
                try:
                    async with http.get(url, timeout=aiohttp.ClientTimeout(total=5)) as resp:
                        if resp.status == 200:
                            return
                except (aiohttp.ClientError, OSError, TimeoutError):
                    pass
                if time.monotonic() > deadline:
                    raise TimeoutError(f"upstream operator not ready after {timeout}s:\n{self.log()[-3000:]}")
                await asyncio.sleep(0.2)


class UpstreamMPIOperator(Process):
    """Upstream's mpi-operator v0.8.0 watching one namespace. Its leader election cannot be turned
    off (the Lease goes to that namespace) and its health check listens on a fixed :8080 of every
    interface, so it is ready when it holds the Lease, and one runs at a time."""

    def __init__(
        self, binary: Path, kubeconfig: Path, namespace: str, *, log_path: Path, extra: Sequence[str] = ()
    ) -> None:
        self.kubeconfig = kubeconfig
        self.namespace = namespace
        args = ["--kubeConfig", str(kubeconfig), "--namespace", namespace, "--lock-namespace", namespace]
        super().__init__([str(binary), *args, *extra], log_path)

    async def wait_ready(self, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        async with await KubeClient.from_kubeconfig(str(self.kubeconfig), qps=0) as kube:
            while True:
                if not self.running:
                    code = self.popen.returncode
                    raise AssertionError(f"upstream mpi-operator exited ({code}):\n{self.log()}")
                try:
                    lease = await kube.get("coordination.k8s.io/v1", "Lease", self.namespace, "mpi-operator")
                    if lease.get("spec", {}).get("holderIdentity"):
                        return
                except ApiError as err:
                    if not err.not_found:
                        raise
                if time.monotonic() > deadline:
                    raise TimeoutError(f"upstream mpi-operator has no Lease after {timeout}s:\n{self.log()}")
                await asyncio.sleep(0.2)


async def prepare_namespace(kube: KubeClient, namespace: str) -> None:
    """The namespace and the empty Secret upstream's cert rotator fills (its Deployment's manifests
    ship it)."""
    await kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    await kube.create(
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": WEBHOOK_SECRET, "namespace": namespace}}
    )


GANG_SCHEDULER = "scheduler-plugins-scheduler"
"""The `--gang-scheduler-name` both operators get in the gang phase: a scheduler-plugins name, so
jobs get a `scheduling.x-k8s.io` PodGroup (no such scheduler runs: the pods stay Pending)."""


def podgroup_crd() -> JsonDict:
    """scheduler-plugins' PodGroup CRD of the version training-operator's go.mod requires, from the
    Go module cache its build filled (as upstream's e2e installs it)."""
    found = _script("manifests", "training-operator")
    if found.returncode != 0:
        unavailable(found.stderr.strip())
    module = next(p for p in Path(found.stdout.strip()).parents if "@" in p.name)
    required = (module / "go.mod").read_text()
    version = next(
        line.split()[1]
        for line in required.splitlines()
        if line.strip().startswith("sigs.k8s.io/scheduler-plugins ")
    )
    crd = module.parents[2] / "sigs.k8s.io" / f"scheduler-plugins@{version}" / "config" / "crd" / "bases"
    path = crd / "scheduling.x-k8s.io_podgroups.yaml"
    if not path.exists():
        unavailable(f"no {path}: `go mod download sigs.k8s.io/scheduler-plugins@{version}`")
    loaded: JsonDict = yaml.safe_load(path.read_text())
    return loaded
