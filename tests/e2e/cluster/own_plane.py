"""A real Kubernetes control plane of one test module's own, for tests that must not share the tier's.

`control_plane(tmp_dir)` runs `scripts/k8s-control-plane up tmp_dir`, yields the admin kubeconfig
and stops exactly that plane afterwards (`down tmp_dir`, by pid). When no plane can be started (no
Go toolchain to build the binaries, a component that does not come up) the test is skipped with
the script's one-line reason, except under CI=true, where that is an error.

`token_kubeconfig` writes a kubeconfig for a ServiceAccount of the plane (a TokenRequest token), so
tests can act as a user that is not in system:masters and meet the real authorizer.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubetrain.runtime.transport import KubeClient

REPO = Path(__file__).resolve().parents[3]
SCRIPT = REPO / "scripts" / "k8s-control-plane"
UP_TIMEOUT = 3600.0
"""Building the binaries takes minutes, once per machine; starting a built plane ~10 s."""


class PlaneUnavailable(RuntimeError):
    """`scripts/k8s-control-plane up` failed; the message is its stderr."""


def _run(*args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout, check=False, cwd=REPO
    )


def start(tmp_dir: Path) -> Path:
    """Start a plane in `tmp_dir`; its admin kubeconfig. Raises PlaneUnavailable."""
    if not SCRIPT.is_file():
        raise PlaneUnavailable(f"{SCRIPT} is missing")
    result = _run("up", str(tmp_dir), timeout=UP_TIMEOUT)
    if result.returncode != 0:
        raise PlaneUnavailable(result.stderr.strip() or f"exit code {result.returncode}")
    return tmp_dir / "kubeconfig"


def stop(tmp_dir: Path) -> None:
    result = _run("down", str(tmp_dir), timeout=60)
    if result.returncode != 0:
        raise RuntimeError(f"k8s-control-plane down {tmp_dir}: {result.stderr.strip()}")


@contextmanager
def control_plane(tmp_dir: Path) -> Iterator[Path]:
    """A started plane's admin kubeconfig; the plane is stopped on exit. Skips (fails under CI)."""
    try:
        kubeconfig = start(tmp_dir)
    except PlaneUnavailable as exc:
        if os.environ.get("CI", "").lower() == "true":
            raise
        pytest.skip(f"no control plane of our own: {exc}")
    try:
        yield kubeconfig
    finally:
        stop(tmp_dir)


async def token_kubeconfig(
    kube: KubeClient, admin: Path, namespace: str, account: str, out: Path, *, create: bool = True
) -> Path:
    """A kubeconfig at `out` authenticating as ServiceAccount `namespace/account` (created here
    unless `create` is False)."""
    if create:
        await kube.create(
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": account, "namespace": namespace},
            }
        )
    request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}
    path = f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token"
    token = (await kube.request("POST", path, body=request))["status"]["token"]
    config: dict[str, Any] = yaml.safe_load(admin.read_text())
    cluster = config["clusters"][0]
    user = f"system:serviceaccount:{namespace}:{account}"
    out.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [cluster],
                "users": [{"name": user, "user": {"token": token}}],
                "contexts": [{"name": account, "context": {"cluster": cluster["name"], "user": user}}],
                "current-context": account,
            }
        )
    )
    out.chmod(0o600)
    return out
