"""The differential tier's session: one real control plane, one `kubetrain node`, and every scenario run
first under upstream's training-operator, then under `kubetrain operator`, each in its own namespace.

The two operators never reconcile at the same time: upstream's runs with its own CRDs (of the same
module version), is stopped, then ours replaces them with kubetrain's and runs. Both watch only their
namespace and use the admin kubeconfig. The plane is started and stopped here with
`scripts/k8s-control-plane` (cached binaries: seconds).
"""

from __future__ import annotations

import asyncio
import os
import secrets
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubetrain.runtime.crds import install_crds
from kubetrain.runtime.errors import ApiError
from kubetrain.runtime.transport import KubeClient
from tests.differential import compare, peers, scenarios
from tests.integration.operator_process.jobs import wait_for
from tests.integration.operator_process.procs import REPO, OperatorProc, Proc

JsonDict = dict[str, Any]
PLANE_SCRIPT = REPO / "scripts" / "k8s-control-plane"
JOB_TIMEOUT = float(os.environ.get("KUBETRAIN_DIFF_TIMEOUT", "300"))
NO_WEBHOOK = "--no-webhook"
"""Neither operator's webhook is registered with the API server: both see the same, unvalidated,
job (upstream v1.9.2 has no flag to turn its webhook server off, so it serves one nobody calls)."""
OUR_CRDS = REPO / "manifests" / "crds"


@dataclass
class Run:
    """One scenario under one operator: its view and where its logs are."""

    view: dict[str, Any]
    logs: str


@dataclass
class Runs:
    upstream: dict[str, Run] = field(default_factory=dict)
    kubetrain: dict[str, Run] = field(default_factory=dict)


async def _client(kubeconfig: Path) -> KubeClient:
    return await KubeClient.from_kubeconfig(str(kubeconfig), qps=0)


async def _wait_node_ready(kubeconfig: Path, name: str) -> None:
    async def ready() -> bool:
        async with await _client(kubeconfig) as kube:
            try:
                node = await kube.get("v1", "Node", None, name)
            except ApiError as err:
                if err.not_found:
                    return False
                raise
        conditions = node.get("status", {}).get("conditions", ())
        return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)

    await wait_for(ready, 60, f"node {name} Ready", interval=0.2)


async def _namespace(kube: KubeClient, namespace: str) -> None:
    """The namespace, upstream's webhook Secret, and its `default` ServiceAccount (pods need it)."""
    await peers.prepare_namespace(kube, namespace)

    async def account() -> bool:
        try:
            await kube.get("v1", "ServiceAccount", namespace, "default")
        except ApiError as err:
            if err.not_found:
                return False
            raise
        return True

    await wait_for(account, 60, f"ServiceAccount {namespace}/default")


def settled(status: JsonDict) -> bool:
    """Finished, and for a success no replica still counted active (checked once every pod of the
    job has ended, so neither operator has anything left to count): upstream writes its Succeeded
    condition in the pass that sees the deciding replica done, and moves the others' `active` to
    `succeeded` in the next pass (its pods may still be running when the condition appears)."""
    true = {c["type"] for c in status.get("conditions") or () if c["status"] == "True"}
    if "Failed" in true:
        return True
    replicas = (status.get("replicaStatuses") or {}).values()
    return "Succeeded" in true and not any(r.get("active") for r in replicas)


async def _run(kube: KubeClient, scenario: str, namespace: str) -> dict[str, Any]:
    """Create the scenario's job, wait until it finished, and take its view."""
    job = scenarios.manifest(scenario, namespace)
    await kube.create(job)
    name = job["metadata"]["name"]

    selector = f"training.kubeflow.org/job-name={name}"

    async def finished() -> tuple[JsonDict, list[JsonDict]] | None:
        pods, _ = await kube.list("v1", "Pod", namespace, label_selector=selector)
        current = await kube.get(job["apiVersion"], job["kind"], namespace, name)
        ended = all(p.get("status", {}).get("phase") in ("Succeeded", "Failed") for p in pods)
        return (current, pods) if ended and settled(current.get("status") or {}) else None

    done, pods = await wait_for(finished, JOB_TIMEOUT, f"{job['kind']} {namespace}/{name} finished", 0.5)
    services, _ = await kube.list("v1", "Service", namespace, label_selector=selector)
    return compare.view(done, pods, services)


async def _phase(
    kubeconfig: Path, crds: list[JsonDict], start: Any, namespace: str, logs: Path
) -> dict[str, Run]:
    async with await _client(kubeconfig) as kube:
        await install_crds(kube, crds)
        await _namespace(kube, namespace)
        operator = start(namespace)
        try:
            await operator.wait_ready()
            runs = {}
            for scenario in scenarios.SCENARIOS:
                runs[scenario] = Run(await _run(kube, scenario, namespace), str(logs))
            return runs
        finally:
            operator.stop()


def _plane(directory: Path) -> Path:
    if shutil.which("go") is None:
        peers.unavailable("no Go toolchain on PATH: install Go >= 1.26 to build the control plane")
    up = subprocess.run(
        [str(PLANE_SCRIPT), "up", str(directory)], capture_output=True, text=True, check=False, timeout=3600
    )
    if up.returncode != 0:
        peers.unavailable(up.stderr.strip())
    return directory / "kubeconfig"


@pytest.fixture(scope="session")
def differential(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    binary = peers.binary("training-operator")
    upstream_crds = peers.crd_manifests("training-operator")
    our_crds = [yaml.safe_load(p.read_text()) for p in sorted(OUR_CRDS.glob("kubeflow.org_*.yaml"))]
    peers.ensure_serving_certificate()
    logs = tmp_path_factory.mktemp("differential")
    plane = logs / "plane"
    kubeconfig = _plane(plane)
    suffix = secrets.token_hex(3)
    node_name = f"kubetrain-diff-{suffix}"
    (logs / "work").mkdir()
    node = Proc(
        [
            "node",
            "--kubeconfig",
            str(kubeconfig),
            "--name",
            node_name,
            "--authorization-mode",
            "Webhook",
            "--network",
            "isolated",
            "--workdir",
            str(logs / "work"),
            "--root-dir",
            str(logs / "node-root"),
        ],
        logs / "node.log",
    )
    try:
        asyncio.run(_wait_node_ready(kubeconfig, node_name))
        runs = Runs()
        runs.upstream = asyncio.run(
            _phase(
                kubeconfig,
                upstream_crds,
                lambda ns: peers.UpstreamTrainingOperator(binary, kubeconfig, ns, logs / "upstream.log"),
                f"upstream-{suffix}",
                logs,
            )
        )
        runs.kubetrain = asyncio.run(
            _phase(
                kubeconfig,
                our_crds,
                lambda ns: OperatorProc(kubeconfig, logs / "kubetrain.log", "--namespace", ns, NO_WEBHOOK),
                f"kubetrain-{suffix}",
                logs,
            )
        )
        yield runs
    finally:
        node.stop()
        subprocess.run([str(PLANE_SCRIPT), "down", str(plane)], capture_output=True, check=False, timeout=120)
