"""Session fixtures of the cluster tier: a namespace, the operator, and a node when none exists.

Nothing here runs unless a test module of the tier is collected, and every test module imports
`tier`, which skips it when KUBETRAIN_E2E_KUBECONFIG is unset (so this file must not import
`tier` at module level).
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import secrets
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kubetrain.kube.errors import ApiError
from kubetrain.runtime.transport import KubeClient
from tests.e2e.cluster import operator_identity
from tests.integration.operator_process.procs import OperatorProc, Proc, free_port

WEBHOOK_CONFIGURATION = "validator.training-operator.kubeflow.org"

_SDK_PATH = os.environ.get("KUBETRAIN_E2E_SDK_PATH", "")
if _SDK_PATH:
    sys.path.append(_SDK_PATH)  # last: an SDK installed with --target must not shadow our deps


def _sdk_installed() -> bool:
    try:
        return importlib.util.find_spec("kubeflow.training") is not None
    except ModuleNotFoundError:
        return False


collect_ignore = [] if _sdk_installed() else ["test_cluster_sdk.py"]
"""The upstream SDK's calls are tested when `kubeflow-training` is importable (installed, or in
KUBETRAIN_E2E_SDK_PATH); the session header says when they are not."""


@dataclass
class ClusterEnv:
    kubeconfig: Path
    context: str | None
    namespace: str
    mode: str
    timeout: float
    webhook_installed: bool = False
    own_webhook: bool = False
    """The tier created the webhook configuration (served by its operator) and removes it after."""
    embedded: bool = False
    node_name: str | None = None
    processes: list[Proc] = field(default_factory=list)

    def connection_flags(self) -> list[str]:
        return ["--context", self.context] if self.context else []

    async def client(self) -> KubeClient:
        return await KubeClient.from_kubeconfig(str(self.kubeconfig), self.context, qps=0)


async def _ready_nodes(kube: KubeClient) -> list[str]:
    nodes, _ = await kube.list("v1", "Node")
    ready = []
    for node in nodes:
        conditions = {c["type"]: c["status"] for c in (node.get("status") or {}).get("conditions") or ()}
        if conditions.get("Ready") == "True" and not (node.get("spec") or {}).get("unschedulable"):
            ready.append(node["metadata"]["name"])
    return ready


async def _prepare(env: ClusterEnv) -> bool:
    """Create the namespace, look at the cluster; True when it needs a node of ours."""
    async with await env.client() as kube:
        await kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": env.namespace}})
        version = await kube.request("GET", "/version")
        env.embedded = "kubetrain" in str(version.get("gitVersion", ""))
        try:
            config = await kube.get(
                "admissionregistration.k8s.io/v1",
                "ValidatingWebhookConfiguration",
                None,
                WEBHOOK_CONFIGURATION,
            )
            if operator_identity.made_by_the_tier(config):
                await operator_identity.remove_webhook(kube)  # left by a killed run
            else:
                env.webhook_installed = True
        except ApiError as err:
            if not err.not_found:
                raise
        return not await _ready_nodes(kube)


async def _wait_node_ready(env: ClusterEnv, name: str) -> None:
    async with await env.client() as kube:
        for _ in range(300):
            if name in await _ready_nodes(kube):
                return
            await asyncio.sleep(0.1)
    raise TimeoutError(f"node {name} did not become Ready")


async def _operator_connection(env: ClusterEnv, logs: Path) -> tuple[Path, list[str]]:
    """The tier operator's kubeconfig and flags: on a real API server it is its ServiceAccount (the
    manifests' RBAC) and serves its webhook over TLS unless one is installed; on an embedded plane
    it is the admin and installs the CRDs itself."""
    if env.embedded:
        return env.kubeconfig, [*env.connection_flags(), "--install-crds", "--no-webhook"]
    async with await env.client() as kube:
        kubeconfig = await operator_identity.operator_kubeconfig(
            kube, env.kubeconfig, logs / "operator.kubeconfig"
        )
        if env.webhook_installed:
            return kubeconfig, ["--no-webhook"]
        port = free_port()
        cert_dir = logs / "webhook-certs"
        ca = operator_identity.loopback_certificates(cert_dir)
        await operator_identity.install_webhook(kube, port, ca)
        env.webhook_installed = env.own_webhook = True
    return kubeconfig, [
        "--webhook-server-port",
        str(port),
        "--webhook-cert-dir",
        str(cert_dir),
        "--no-webhook-cert-generation",
    ]


async def _cleanup(env: ClusterEnv) -> None:
    async with await env.client() as kube:
        if env.own_webhook:
            await operator_identity.remove_webhook(kube)
        try:
            await kube.delete("v1", "Namespace", None, env.namespace)
        except ApiError as err:
            if not err.not_found:
                raise
        if env.node_name:
            try:
                await kube.delete("v1", "Node", None, env.node_name)
            except ApiError as err:
                if not err.not_found:
                    raise


def _node_args(env: ClusterEnv, workdir: Path) -> list[str]:
    """`kubetrain node` as the cluster's kubelet: its pods get their own loopback addresses and
    resolve each other by service names. It binds pending pods itself only where no scheduler runs
    (an embedded plane, or KUBETRAIN_E2E_BIND_PENDING=1); on a real API server its kubelet API
    authorizes callers with SubjectAccessReviews."""
    from tests.e2e.cluster import tier

    args = ["node", "--kubeconfig", str(env.kubeconfig), *env.connection_flags()]
    args += ["--name", str(env.node_name)]
    if env.embedded or os.environ.get("KUBETRAIN_E2E_BIND_PENDING") == "1":
        args.append("--bind-pending")
    if not env.embedded:  # the kubelet API asks the API server who may use it, as kubelets do
        args += ["--authorization-mode", "Webhook"]
    root = workdir.parent / "node-root"  # kept after the run: pod logs and sandboxes for a post-mortem
    return [*args, "--network", tier.NETWORK, "--workdir", str(workdir), "--root-dir", str(root)]


def _node_env(logs: Path) -> dict[str, str]:
    """The real-MXNet, real-ChainerMN and real-Horovod examples' images run in their own
    interpreters, as in `tests/e2e/test_examples`, `test_mpi_examples` and `test_horovod_examples`."""
    entries = [
        f'  - image: "{image}"\n    python: {python}\n'
        for image, python in (
            ("docker.io/kubeflow/mxnet*", os.environ.get("KUBETRAIN_E2E_MXNET_PYTHON", "")),
            ("everpeace/chainermn*", os.environ.get("KUBETRAIN_E2E_CHAINER_PYTHON", "")),
            ("horovod/horovod*", os.environ.get("KUBETRAIN_E2E_HOROVOD_PYTHON", "")),
        )
        if python
    ]
    if not entries:
        return {}
    image_map = logs / "images.yaml"
    image_map.write_text("images:\n" + "".join(entries))
    return {"KUBETRAIN_IMAGE_MAP": str(image_map)}


@pytest.fixture(scope="session")
def cluster_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterEnv]:
    from tests.e2e.cluster import tier

    logs = tmp_path_factory.mktemp("cluster-tier")
    suffix = secrets.token_hex(3)
    env = ClusterEnv(
        tier.KUBECONFIG, tier.CONTEXT, f"kubetrain-e2e-{suffix}", tier.OPERATOR_MODE, tier.TIMEOUT
    )
    needs_node = asyncio.run(_prepare(env))
    try:
        if env.mode == "local":
            kubeconfig, flags = asyncio.run(_operator_connection(env, logs))
            operator = OperatorProc(kubeconfig, logs / "operator.log", *flags, "--namespace", env.namespace)
            env.processes.append(operator)
            asyncio.run(operator.wait_ready(120))
        if needs_node:
            env.node_name = f"kubetrain-e2e-{suffix}"
            workdir = logs / "work"
            workdir.mkdir()
            env.processes.append(Proc(_node_args(env, workdir), logs / "node.log", env=_node_env(logs)))
            asyncio.run(_wait_node_ready(env, env.node_name))
        print(
            f"\ncluster tier: namespace {env.namespace}, operator {env.mode}, "
            f"{'node ' + env.node_name if env.node_name else 'existing nodes'}, "
            f"webhook {'installed' if env.webhook_installed else 'not installed'}, "
            f"SDK {'tested' if not collect_ignore else 'not installed: TrainingClient calls not tested'}, "
            f"logs in {logs}"
        )
        yield env
    finally:
        asyncio.run(_cleanup(env))
        for proc in reversed(env.processes):
            proc.stop()


@pytest.fixture
async def kube(cluster_env: ClusterEnv) -> AsyncIterator[KubeClient]:
    client = await cluster_env.client()
    yield client
    await client.close()
