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

from kubetrain.runtime.errors import ApiError
from kubetrain.runtime.transport import KubeClient
from tests.integration.operator_process.procs import OperatorProc, Proc

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
            await kube.get(
                "admissionregistration.k8s.io/v1",
                "ValidatingWebhookConfiguration",
                None,
                WEBHOOK_CONFIGURATION,
            )
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


async def _cleanup(env: ClusterEnv) -> None:
    async with await env.client() as kube:
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
            operator = OperatorProc(
                env.kubeconfig,
                logs / "operator.log",
                *env.connection_flags(),
                "--install-crds",
                "--no-webhook",
                "--namespace",
                env.namespace,
            )
            env.processes.append(operator)
            asyncio.run(operator.wait_ready(120))
        if needs_node:
            env.node_name = f"kubetrain-e2e-{suffix}"
            workdir = logs / "work"
            workdir.mkdir()
            env.processes.append(
                Proc(
                    [
                        "node",
                        "--kubeconfig",
                        str(env.kubeconfig),
                        *env.connection_flags(),
                        "--name",
                        env.node_name,
                        "--bind-pending",
                        "--network",
                        "host",
                        "--workdir",
                        str(workdir),
                    ],
                    logs / "node.log",
                )
            )
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
