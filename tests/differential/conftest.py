"""The differential tier's session: one real control plane, one `kubetrain node`, and every scenario
run under its upstream operator (training-operator, then mpi-operator), then under `kubetrain
operator`, each operator in a namespace of its own.

Two operators never reconcile at the same time: each upstream one runs with its own CRDs (of the
same module version) and is stopped before the next; ours then replaces them with kubetrain's.
All watch only their namespace and use the admin kubeconfig. The plane is started and stopped here
with `scripts/k8s-control-plane` (cached binaries: seconds).
"""

from __future__ import annotations

import asyncio
import os
import secrets
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubetrain.kube.errors import ApiError
from kubetrain.runtime.crds import CRD_API, install_crds
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
PEERS = {"training-operator": peers.UpstreamTrainingOperator, "mpi-operator": peers.UpstreamMPIOperator}
"""Upstream's operators, in the order they run; each takes the scenarios `scenarios.upstream_of` gives it."""
CHILD_KINDS = (("v1", "Service"), ("v1", "ConfigMap"), ("v1", "Secret"), ("batch/v1", "Job"))
"""What an operator creates beside pods, compared when the job owns it (MPIJob v2beta1: its hostfile
ConfigMap, SSH Secret and launcher Job)."""
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
    children: dict[str, list[JsonDict]] = {}
    for api_version, kind in CHILD_KINDS:
        items, _ = await kube.list(api_version, kind, namespace)
        children[kind] = [o for o in items if _owned_by(o, done)]
    return compare.view(done, pods, children)


def _owned_by(obj: JsonDict, owner: JsonDict) -> bool:
    uid = owner["metadata"]["uid"]
    return any(ref.get("uid") == uid for ref in obj["metadata"].get("ownerReferences") or ())


async def _drop_if_incompatible(kube: KubeClient, crd: JsonDict) -> None:
    """Delete the served CRD of `crd`'s name when it stored a version `crd` lacks (training-operator's
    MPIJob v1 before mpi-operator's v2beta1-only CRD): the API server refuses such an update."""
    name = crd["metadata"]["name"]
    try:
        served = await kube.get(CRD_API, "CustomResourceDefinition", None, name)
    except ApiError as err:
        if err.not_found:
            return
        raise
    versions = {v["name"] for v in crd["spec"]["versions"]}
    if set(served.get("status", {}).get("storedVersions") or ()) <= versions:
        return
    await kube.delete(CRD_API, "CustomResourceDefinition", None, name)

    async def gone() -> bool:
        try:
            await kube.get(CRD_API, "CustomResourceDefinition", None, name)
        except ApiError as err:
            if err.not_found:
                return True
            raise
        return False

    await wait_for(gone, 60, f"CRD {name} deleted")


async def _phase(
    kubeconfig: Path, crds: list[JsonDict], start: Any, namespace: str, wanted: list[str]
) -> dict[str, Run]:
    async with await _client(kubeconfig) as kube:
        for crd in crds:
            await _drop_if_incompatible(kube, crd)
        await install_crds(kube, crds)
        await _namespace(kube, namespace)
        operator = start(namespace)
        try:
            await operator.wait_ready()
            return {s: Run(await _run(kube, s, namespace), str(operator.log_path)) for s in wanted}
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
    upstream = {name: (peers.binary(name), peers.crd_manifests(name)) for name in PEERS}
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
        for name, (binary, crds) in upstream.items():
            wanted = [s for s in scenarios.SCENARIOS if scenarios.upstream_of(s) == name]
            runs.upstream |= asyncio.run(
                _phase(
                    kubeconfig,
                    crds,
                    partial(PEERS[name], binary, kubeconfig, log_path=logs / f"upstream-{name}.log"),
                    f"upstream-{name}-{suffix}",
                    wanted,
                )
            )
        runs.kubetrain = asyncio.run(
            _phase(
                kubeconfig,
                our_crds,
                lambda ns: OperatorProc(kubeconfig, logs / "kubetrain.log", "--namespace", ns, NO_WEBHOOK),
                f"kubetrain-{suffix}",
                list(scenarios.SCENARIOS),
            )
        )
        yield runs
    finally:
        node.stop()
        subprocess.run([str(PLANE_SCRIPT), "down", str(plane)], capture_output=True, check=False, timeout=120)
