"""Two planes for the StatefulSet conformance tests, each reached only through its kubeconfig.

* ``embedded``: `kubetrain up` (its API server, binder, Job and StatefulSet controllers, garbage
  collector and node), as a user runs it;
* ``real``: a real control plane from `scripts/k8s-control-plane up` (kube-apiserver, etcd,
  kube-scheduler, and kube-controller-manager, whose StatefulSet controller is the reference) with
  `kubetrain node` as its kubelet. Without a Go toolchain or the cached binaries it skips, and
  fails under ``CI=true``.

Every test gets its own namespace. The tests never look at which plane they run on: each
assertion must hold against Kubernetes unchanged.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import subprocess
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from kubetrain.kube.errors import ApiError
from kubetrain.runtime.transport import KubeClient
from tests.integration.operator_process.jobs import wait_for
from tests.integration.operator_process.procs import REPO, Proc

IN_CI = os.environ.get("CI") == "true"
PLANE_SCRIPT = REPO / "scripts" / "k8s-control-plane"


@dataclass
class Plane:
    name: str
    kubeconfig: Path
    node_log: Path

    async def client(self) -> KubeClient:
        return await KubeClient.from_kubeconfig(str(self.kubeconfig), qps=0)


async def _ready_node(kubeconfig: Path) -> bool:
    async with await KubeClient.from_kubeconfig(str(kubeconfig), qps=0) as kube:
        nodes, _ = await kube.list("v1", "Node")
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for node in nodes
        for c in (node.get("status") or {}).get("conditions") or ()
    )


def _wait_ready(kubeconfig: Path, proc: Proc) -> None:
    async def ready() -> bool:
        if not proc.running:
            raise RuntimeError(f"exited before its node was Ready:\n{proc.log()[-3000:]}")
        if not kubeconfig.is_file():
            return False
        try:
            return await _ready_node(kubeconfig)
        except (ApiError, OSError, ValueError):
            return False

    asyncio.run(wait_for(ready, 120, "a Ready node", interval=0.2))


def _embedded(base: Path) -> Iterator[Plane]:
    kubeconfig, log = base / "kubeconfig", base / "up.log"
    (base / "work").mkdir()
    args = ["up", "--kubeconfig", str(kubeconfig), "--data-dir", str(base / "data"), "--reset"]
    proc = Proc([*args, "--workdir", str(base / "work"), "--network", "isolated"], log)
    try:
        _wait_ready(kubeconfig, proc)
        yield Plane("embedded", kubeconfig, log)
    finally:
        proc.stop()


def _real(base: Path) -> Iterator[Plane]:
    plane = base / "plane"
    up = subprocess.run(
        [str(PLANE_SCRIPT), "up", str(plane)], capture_output=True, text=True, timeout=900, check=False
    )
    if up.returncode != 0:
        subprocess.run([str(PLANE_SCRIPT), "down", str(plane)], capture_output=True, check=False, timeout=120)
        why = f"no real control plane: {up.stderr.strip()[-500:]}"
        if IN_CI:
            raise RuntimeError(f"CI=true: {why}")
        pytest.skip(why)
    kubeconfig, log = plane / "kubeconfig", base / "node.log"
    (base / "work").mkdir()
    node = Proc(
        [
            "node",
            "--kubeconfig",
            str(kubeconfig),
            "--name",
            f"kubetrain-sts-{secrets.token_hex(3)}",
            "--authorization-mode",
            "Webhook",
            "--network",
            "isolated",
            "--workdir",
            str(base / "work"),
            "--root-dir",
            str(base / "node-root"),
        ],
        log,
    )
    try:
        _wait_ready(kubeconfig, node)
        yield Plane("real", kubeconfig, log)
    finally:
        node.stop()
        subprocess.run([str(PLANE_SCRIPT), "down", str(plane)], capture_output=True, check=False, timeout=120)


@pytest.fixture(scope="session", params=["embedded", "real"])
def plane(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Plane]:
    base = tmp_path_factory.mktemp(f"statefulset-{request.param}")
    yield from (_embedded if request.param == "embedded" else _real)(base)


@pytest.fixture
async def kube(plane: Plane) -> AsyncIterator[KubeClient]:
    client = await plane.client()
    yield client
    await client.close()


@pytest.fixture
async def ns(plane: Plane, kube: KubeClient) -> AsyncIterator[str]:
    """A namespace of the test's own; on a real plane, once its `default` ServiceAccount exists (its
    admission refuses pods before; the embedded server admits them without one)."""
    name = f"sts-{secrets.token_hex(4)}"
    await kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})

    async def account() -> bool:
        try:
            await kube.get("v1", "ServiceAccount", name, "default")
        except ApiError as err:
            if err.not_found:
                return False
            raise
        return True

    if plane.name == "real":
        await wait_for(account, 60, f"ServiceAccount {name}/default")
    yield name
    try:
        await kube.delete("v1", "Namespace", None, name)
    except ApiError as err:
        if not err.not_found:
            raise
