"""Upstream's JobSet controller on a real control plane: the peer the JobSet tests also run against.

`scripts/k8s-control-plane` starts kube-apiserver, etcd, kube-controller-manager (whose real Job
controller runs the Jobs) and kube-scheduler; `kubetrain node` joins as the kubelet; upstream's
controller (`scripts/upstream-operators build jobset`: sigs.k8s.io/jobset v0.10.1, unchanged) runs
with its JobSet webhooks (defaulting and validation, as its manifests register them) served on
loopback with a self-signed certificate, internal cert management off, leader election off. The
pod webhooks (exclusive placement only) are not registered. Opt in with
``KUBETRAIN_JOBSET_UPSTREAM=1``: the first build takes minutes.
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import contextlib
import os
import secrets
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from cryptography.hazmat.primitives import serialization

from kubetrain.embedded.jobset import jobset_crd
from kubetrain.kube.client import KubeAPI
from kubetrain.kube.pki import pem_key, serving_certificate
from tests.integration.operator_process.procs import Proc, Process, free_port
from tests.polling import wait_for

JsonDict = dict[str, Any]
REPO = Path(__file__).resolve().parents[3]
PLANE_SCRIPT = REPO / "scripts" / "k8s-control-plane"
OPERATORS_SCRIPT = REPO / "scripts" / "upstream-operators"
OPT_IN = "KUBETRAIN_JOBSET_UPSTREAM"


def wanted() -> bool:
    return os.environ.get(OPT_IN, "").lower() in ("1", "true", "yes")


def _run(*argv: str, timeout: float = 3600) -> str:
    done = subprocess.run(list(argv), capture_output=True, text=True, check=False, timeout=timeout)
    if done.returncode != 0:
        pytest.fail(f"{' '.join(argv)}: {done.stderr.strip()}")
    return done.stdout.strip()


def _webhooks(port: int, ca: bytes) -> list[JsonDict]:
    """Upstream's JobSet webhook configurations (config/components/webhook/manifests.yaml), pointed
    at the controller's loopback server instead of its Service."""

    def hook(name: str, path: str, operations: list[str]) -> JsonDict:
        return {
            "name": name,
            "admissionReviewVersions": ["v1"],
            "clientConfig": {
                "url": f"https://127.0.0.1:{port}{path}",
                "caBundle": base64.b64encode(ca).decode(),
            },
            "failurePolicy": "Fail",
            "sideEffects": "None",
            "rules": [
                {
                    "apiGroups": ["jobset.x-k8s.io"],
                    "apiVersions": ["v1alpha2"],
                    "operations": operations,
                    "resources": ["jobsets"],
                }
            ],
        }

    kind = "admissionregistration.k8s.io/v1"
    return [
        {
            "apiVersion": kind,
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": "jobset-mutating-webhook-configuration"},
            "webhooks": [hook("mjobset.kb.io", "/mutate-jobset-x-k8s-io-v1alpha2-jobset", ["CREATE"])],
        },
        {
            "apiVersion": kind,
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "jobset-validating-webhook-configuration"},
            "webhooks": [
                hook("vjobset.kb.io", "/validate-jobset-x-k8s-io-v1alpha2-jobset", ["CREATE", "UPDATE"])
            ],
        },
    ]


class UpstreamJobSetPlane:
    """`start()` ... `stop()`; `kubeconfig` is the admin's."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.kubeconfig = directory / "plane" / "kubeconfig"
        self.procs: list[Process] = []
        self.webhook_port = free_port()
        self.probe_port = free_port()

    def start(self) -> None:
        binary = _run(str(OPERATORS_SCRIPT), "build", "jobset")
        _run(str(PLANE_SCRIPT), "up", str(self.dir / "plane"))
        node = f"kubetrain-jobset-{secrets.token_hex(3)}"
        (self.dir / "work").mkdir(exist_ok=True)
        self.procs.append(
            Proc(
                [
                    "node",
                    "--kubeconfig",
                    str(self.kubeconfig),
                    "--name",
                    node,
                    "--network",
                    "isolated",
                    "--workdir",
                    str(self.dir / "work"),
                    "--root-dir",
                    str(self.dir / "node-root"),
                ],
                self.dir / "node.log",
            )
        )
        cert, key = serving_certificate("jobset-webhook", ["127.0.0.1", "localhost"])
        certs = self.dir / "certs"
        certs.mkdir(exist_ok=True)
        ca = cert.public_bytes(serialization.Encoding.PEM)
        (certs / "tls.crt").write_bytes(ca)
        (certs / "tls.key").write_bytes(pem_key(key))
        config = {
            "apiVersion": "config.jobset.x-k8s.io/v1alpha1",
            "kind": "Configuration",
            "internalCertManagement": {"enable": False},
            "webhook": {"port": self.webhook_port, "host": "127.0.0.1", "certDir": str(certs)},
            "metrics": {"bindAddress": "0"},
            "health": {"healthProbeBindAddress": f"127.0.0.1:{self.probe_port}"},
            "leaderElection": {"leaderElect": False},
        }
        (self.dir / "config.yaml").write_text(yaml.safe_dump(config))
        self.procs.append(
            Process(
                [binary, f"--config={self.dir / 'config.yaml'}", f"--kubeconfig={self.kubeconfig}"],
                self.dir / "jobset-controller.log",
            )
        )
        # On a thread: the session fixture may be set up from a test's running event loop.
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            pool.submit(asyncio.run, self._ready(node, ca)).result()

    async def _ready(self, node: str, ca: bytes) -> None:
        async with await KubeAPI.from_kubeconfig(str(self.kubeconfig)) as api:
            with contextlib.suppress(Exception):
                await api.create("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", jobset_crd())
            for body in _webhooks(self.webhook_port, ca):
                plural = body["kind"].lower() + "s"
                await api.create(f"/apis/admissionregistration.k8s.io/v1/{plural}", body)
            await wait_for(
                lambda: self._probe(), 120, "upstream's JobSet controller to be ready", interval=0.5
            )
            await wait_for(lambda: _node_ready(api, node), 120, "the node to be Ready", interval=0.5)
            await wait_for(
                lambda: api.get_or_none("/api/v1/namespaces/default/serviceaccounts/default"),
                60,
                "the default service account",
            )

    async def _probe(self) -> bool:
        for proc in self.procs:
            if not proc.running:
                raise AssertionError(f"{proc.argv[0]} exited:\n{proc.log()[-3000:]}")
        try:
            async with (
                aiohttp.ClientSession() as http,
                http.get(
                    f"http://127.0.0.1:{self.probe_port}/readyz", timeout=aiohttp.ClientTimeout(total=5)
                ) as r,
            ):
                return r.status == 200
        except (aiohttp.ClientError, OSError, TimeoutError):
            return False

    def stop(self) -> None:
        for proc in reversed(self.procs):
            proc.stop()
        subprocess.run([str(PLANE_SCRIPT), "down", str(self.dir / "plane")], capture_output=True, timeout=120)


async def _node_ready(api: KubeAPI, name: str) -> bool:
    node = await api.get_or_none(f"/api/v1/nodes/{name}")
    conditions = ((node or {}).get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


@contextlib.contextmanager
def upstream_plane(directory: Path) -> Iterator[UpstreamJobSetPlane]:
    plane = UpstreamJobSetPlane(directory)
    try:
        plane.start()
        yield plane
    finally:
        plane.stop()
