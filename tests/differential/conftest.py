"""The differential tier's session: one real control plane, one `kubetrain node`, and every scenario
run under its upstream operator (training-operator, then mpi-operator), then under `kubetrain
operator`, each operator in a namespace of its own; the scenarios of one operator run concurrently
(`KUBETRAIN_DIFF_CONCURRENCY` at a time). Gang scheduling is a flag of the whole operator, so its
scenarios run in a phase of their own: each operator again with `--gang-scheduler-name` and
scheduler-plugins' PodGroup CRD installed.

Two operators never reconcile at the same time: each upstream one runs with its own CRDs (of the
same module version) and is stopped before the next; ours then replaces them with kubetrain's.
All watch only their namespace and use the admin kubeconfig. The plane is started and stopped here
with `scripts/k8s-control-plane` (cached binaries: seconds).
"""

from __future__ import annotations

import asyncio
import json
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
from tests.integration.operator_process.jobs import get_or_none, wait_for
from tests.integration.operator_process.procs import REPO, OperatorProc, Proc
from tests.podlogs import job_logs

JsonDict = dict[str, Any]
PLANE_SCRIPT = REPO / "scripts" / "k8s-control-plane"
JOB_TIMEOUT = float(os.environ.get("KUBETRAIN_DIFF_TIMEOUT", "300"))
NO_WEBHOOK = "--no-webhook"
"""Neither operator's webhook is registered with the API server: both see the same, unvalidated,
job (upstream v1.9.2 has no flag to turn its webhook server off, so it serves one nobody calls)."""
PEERS = {"training-operator": peers.UpstreamTrainingOperator, "mpi-operator": peers.UpstreamMPIOperator}
"""Upstream's operators, in the order they run; each takes the scenarios `scenarios.of_upstream` gives it."""
CHILD_KINDS = (
    ("v1", "Service"),
    ("v1", "ConfigMap"),
    ("v1", "Secret"),
    ("v1", "ServiceAccount"),
    ("batch/v1", "Job"),
    ("rbac.authorization.k8s.io/v1", "Role"),
    ("rbac.authorization.k8s.io/v1", "RoleBinding"),
    ("autoscaling/v2", "HorizontalPodAutoscaler"),
    ("scheduling.x-k8s.io/v1alpha1", "PodGroup"),
)
"""What an operator creates beside pods, compared when the job owns it (MPIJob v2beta1: its hostfile
ConfigMap, SSH Secret and launcher Job; MPIJob v1: its launcher's ServiceAccount, Role and
RoleBinding; an elastic PyTorchJob: its HPA; gang scheduling: the PodGroup). A kind the plane does
not serve (the PodGroup CRD) has none."""
CONCURRENCY = int(os.environ.get("KUBETRAIN_DIFF_CONCURRENCY", "4"))
"""Scenarios of one operator run this many at a time (each in its own job; they share the node)."""
SETTLE = 2.0
"""A finished run is taken once its pods and status stayed the same this long."""
IGNORED_FOR = 8.0
"""How long a job the operator must leave alone is watched."""
TTL_WAIT = 60.0
OUR_CRDS = REPO / "manifests" / "crds"


@dataclass
class Run:
    """One scenario under one operator: its view and where its logs are."""

    view: dict[str, Any]
    logs: str
    error: str = ""
    """Why the run has no view (its scenario's test fails with it; the others still compare)."""
    events_recorded: int = 0
    """How many events the operator recorded for the job (the sum of their counts)."""
    pod_logs: str = ""
    """What the job's pods printed, when it failed or never finished (for reading a failure)."""

    def logs_tail(self, chars: int = 4000) -> str:
        return f"\nits pods' logs (tail):\n{self.pod_logs[-chars:]}" if self.pod_logs else ""


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


class Transitions:
    """The job's condition transitions in the order a watch from before its creation saw them: a
    line each time a condition type's status, reason or message changes (however the operator
    batched its writes), so a Running -> Restarting -> Running sequence shows, not only its end."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._last: dict[str, str] = {}

    def observe(self, job: JsonDict) -> None:
        for condition in (job.get("status") or {}).get("conditions") or ():
            line = compare.transition(condition)
            if self._last.get(condition["type"]) != line:
                self._last[condition["type"]] = line
                self.lines.append(line)

    async def follow(self, kube: KubeClient, job: JsonDict, listening: asyncio.Event) -> None:
        api_version, kind = job["apiVersion"], job["kind"]
        namespace, name = job["metadata"]["namespace"], job["metadata"]["name"]
        selector = f"metadata.name={name}"
        _, rv = await kube.list(api_version, kind, namespace, field_selector=selector)
        listening.set()
        while True:
            async for event in kube.watch(
                api_version, kind, namespace, resource_version=rv, field_selector=selector
            ):
                if event["type"] in ("ADDED", "MODIFIED"):
                    self.observe(event["object"])
                    rv = event["object"]["metadata"]["resourceVersion"]


async def _get(kube: KubeClient, job: JsonDict) -> JsonDict | None:
    meta = job["metadata"]
    return await get_or_none(kube, job["apiVersion"], job["kind"], meta["namespace"], meta["name"])


async def _observed(kube: KubeClient, job: JsonDict) -> tuple[JsonDict | None, list[JsonDict]]:
    selector = f"training.kubeflow.org/job-name={job['metadata']['name']}"
    pods, _ = await kube.list("v1", "Pod", job["metadata"]["namespace"], label_selector=selector)
    return await _get(kube, job), pods


def _over(scenario: scenarios.Scenario, job: JsonDict | None, pods: list[JsonDict]) -> bool:
    if scenario.end is scenarios.End.CREATED:
        return job is not None and len(pods) == _replicas(job)
    if job is None or not settled(job.get("status") or {}):
        return False
    if any(p["metadata"].get("deletionTimestamp") for p in pods):
        return False
    ended = all(p.get("status", {}).get("phase") in ("Succeeded", "Failed") for p in pods)
    return ended or scenario.end is scenarios.End.PODS_MAY_RUN


def _replicas(job: JsonDict) -> int:
    specs = next(v for k, v in job["spec"].items() if k.endswith("ReplicaSpecs"))
    return sum(int(spec.get("replicas", 1)) for spec in specs.values())


def _fingerprint(job: JsonDict | None, pods: list[JsonDict]) -> Any:
    status = (job or {}).get("status") or {}
    return (
        status.get("conditions"),
        status.get("replicaStatuses"),
        sorted(p["metadata"]["uid"] for p in pods),
    )


async def _until_over(
    kube: KubeClient, scenario: scenarios.Scenario, job: JsonDict
) -> tuple[JsonDict, list[JsonDict]]:
    """The job and its pods once the run is over and stayed so for `SETTLE` seconds."""
    if scenario.end is scenarios.End.IGNORED:
        await asyncio.sleep(IGNORED_FOR)
        current, pods = await _observed(kube, job)
        assert current is not None
        return current, pods
    last: list[str] = ["the job was never seen"]
    while True:

        async def over() -> tuple[JsonDict, list[JsonDict]] | None:
            current, pods = await _observed(kube, job)
            if current is not None and _over(scenario, current, pods):
                return current, pods
            last[0] = _state(current, pods)
            return None

        try:
            done, pods = await wait_for(over, JOB_TIMEOUT, "finished", 0.5)
        except TimeoutError:
            meta = job["metadata"]
            raise TimeoutError(
                f"{job['kind']} {meta['namespace']}/{meta['name']} not finished after {JOB_TIMEOUT:g}s: "
                f"{last[0]}"
            ) from None
        await asyncio.sleep(SETTLE)
        again, pods_again = await _observed(kube, job)
        if _fingerprint(done, pods) == _fingerprint(again, pods_again):
            return done, pods


def _state(job: JsonDict | None, pods: list[JsonDict]) -> str:
    """The job's true conditions and its pods' phases, for a run that did not finish."""
    if job is None:
        return "the job is gone"
    true = [c["type"] for c in (job.get("status") or {}).get("conditions") or () if c["status"] == "True"]
    phases = {p["metadata"]["name"]: p.get("status", {}).get("phase") for p in pods}
    return f"conditions {true}, pods {phases}"


async def _resume_when_suspended(kube: KubeClient, job: JsonDict) -> None:
    async def suspended() -> bool:
        current = await _get(kube, job)
        conditions = ((current or {}).get("status") or {}).get("conditions") or ()
        return any(c["type"] == "Suspended" and c["status"] == "True" for c in conditions)

    await wait_for(suspended, 60, f"{job['metadata']['name']} Suspended", 0.2)
    await kube.merge_patch(
        job["apiVersion"],
        job["kind"],
        job["metadata"]["namespace"],
        job["metadata"]["name"],
        {"spec": {"runPolicy": {"suspend": False}}},
    )


async def _deleted(kube: KubeClient, job: JsonDict) -> bool:
    async def gone() -> bool:
        return await _get(kube, job) is None

    try:
        await wait_for(gone, TTL_WAIT, f"{job['metadata']['name']} deleted by its TTL", 0.5)
    except (TimeoutError, AssertionError):
        return False
    return True


async def _children(kube: KubeClient, owner: JsonDict) -> dict[str, list[JsonDict]]:
    children: dict[str, list[JsonDict]] = {}
    for api_version, kind in CHILD_KINDS:
        try:
            items, _ = await kube.list(api_version, kind, owner["metadata"]["namespace"])
        except ApiError as err:
            if err.not_found:  # a CRD the plane does not serve
                continue
            raise
        children[kind] = [o for o in items if _owned_by(o, owner)]
    return children


async def _events(kube: KubeClient, job: JsonDict) -> list[JsonDict]:
    selector = f"involvedObject.uid={job['metadata']['uid']}"
    events, _ = await kube.list("v1", "Event", job["metadata"]["namespace"], field_selector=selector)
    return events


class RunFailed(Exception):
    """A run that got no view, with what its pods printed."""

    def __init__(self, why: str, pod_logs: str) -> None:
        super().__init__(why)
        self.pod_logs = pod_logs


def _failed(job: JsonDict) -> bool:
    conditions = (job.get("status") or {}).get("conditions") or ()
    return any(c["type"] == "Failed" and c["status"] == "True" for c in conditions)


async def _run(kubeconfig: Path, name: str, namespace: str) -> tuple[dict[str, Any], int, str]:
    """Create the scenario's job (watching its conditions from before), drive it as the scenario
    says, wait until its run is over, and take its view, its events' count and, when it failed,
    its pods' logs; then delete it (pods may still run). A run that does not get there raises
    RunFailed with its pods' logs."""
    scenario = scenarios.SCENARIOS[name]
    job = scenarios.manifest(name, namespace)
    transitions = Transitions()
    async with await _client(kubeconfig) as kube:
        listening = asyncio.Event()
        follower = asyncio.create_task(transitions.follow(kube, job, listening))
        try:
            await asyncio.wait_for(listening.wait(), 30)
            await kube.create(job)
            try:
                if scenario.resume:
                    await _resume_when_suspended(kube, job)
                done, pods = await _until_over(kube, scenario, job)
            except Exception as exc:
                logs = await job_logs(kube, kubeconfig, namespace, job["metadata"]["name"])
                raise RunFailed(f"{type(exc).__name__}: {exc}", logs) from exc
            pod_logs = (
                await job_logs(kube, kubeconfig, namespace, done["metadata"]["name"]) if _failed(done) else ""
            )
            await asyncio.sleep(1.0)  # the last events are recorded asynchronously
            events = await _events(kube, done)
            seen = compare.view(
                done, pods, await _children(kube, done), transitions=transitions.lines, events=events
            )
            recorded = sum(int(e.get("count") or 1) for e in events)
            if scenario.end is scenarios.End.DELETED:
                seen["job.deletedByTTL"] = await _deleted(kube, job)
        finally:
            follower.cancel()
        try:
            await kube.delete(job["apiVersion"], job["kind"], namespace, job["metadata"]["name"])
        except ApiError as err:
            if not err.not_found:
                raise
    return seen, recorded, pod_logs


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
    """Every wanted scenario under one operator, `CONCURRENCY` at a time, in one namespace."""
    async with await _client(kubeconfig) as kube:
        for crd in crds:
            await _drop_if_incompatible(kube, crd)
        await install_crds(kube, crds)
        await _namespace(kube, namespace)
    operator = start(namespace)
    slots = asyncio.Semaphore(CONCURRENCY)

    async def one(name: str) -> Run:
        async with slots:
            try:
                seen, recorded, pod_logs = await _run(kubeconfig, name, namespace)
                return Run(seen, str(operator.log_path), events_recorded=recorded, pod_logs=pod_logs)
            except RunFailed as exc:
                return Run({}, str(operator.log_path), str(exc), pod_logs=exc.pod_logs)
            except Exception as exc:
                return Run({}, str(operator.log_path), f"{type(exc).__name__}: {exc}")

    try:
        await operator.wait_ready()
        runs = await asyncio.gather(*(one(s) for s in wanted))
        return dict(zip(wanted, runs, strict=True))
    finally:
        operator.stop()


def _our_operator(kubeconfig: Path, log: Path, flags: list[str], namespace: str) -> OperatorProc:
    return OperatorProc(kubeconfig, log, "--namespace", namespace, NO_WEBHOOK, *flags)


def _plane(directory: Path) -> Path:
    if shutil.which("go") is None:
        peers.unavailable("no Go toolchain on PATH: install Go >= 1.26 to build the control plane")
    up = subprocess.run(
        [str(PLANE_SCRIPT), "up", str(directory)], capture_output=True, text=True, check=False, timeout=3600
    )
    if up.returncode != 0:
        peers.unavailable(up.stderr.strip())
    return directory / "kubeconfig"


def _selected(session: pytest.Session) -> set[str]:
    """The scenarios the session's selected tests ask for (`pytest tests/differential -k mpi` runs
    only those)."""
    selected = set()
    for item in session.items:
        callspec = getattr(item, "callspec", None)
        if callspec is not None and "differential" in getattr(item, "fixturenames", ()):
            selected.add(callspec.params["scenario"])
    return selected


@pytest.fixture(scope="session")
def differential(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    selected = _selected(request.session)
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
        gang_crds = [peers.podgroup_crd()]  # served in every phase, so each sees the same kinds
        for name, (binary, crds) in upstream.items():
            for gang in (False, True):
                if not (wanted := [s for s in scenarios.of_upstream(name, gang=gang) if s in selected]):
                    continue
                tag = "-gang" if gang else ""
                start = partial(
                    PEERS[name],
                    binary,
                    kubeconfig,
                    log_path=logs / f"upstream-{name}{tag}.log",
                    extra=(f"--gang-scheduler-name={peers.GANG_SCHEDULER}",) if gang else (),
                )
                namespace = f"upstream-{name}{tag}-{suffix}"
                runs.upstream |= asyncio.run(_phase(kubeconfig, crds + gang_crds, start, namespace, wanted))
        for gang in (False, True):
            if not (wanted := [s for s in scenarios.of_phase(gang=gang) if s in selected]):
                continue
            tag = "-gang" if gang else ""
            flags = ["--gang-scheduler-name", peers.GANG_SCHEDULER] if gang else []
            log = logs / f"kubetrain{tag}.log"
            ours = partial(_our_operator, kubeconfig, log, flags)
            runs.kubetrain |= asyncio.run(
                _phase(kubeconfig, our_crds + gang_crds, ours, f"kubetrain{tag}-{suffix}", wanted)
            )
        for side, seen in (("upstream", runs.upstream), ("kubetrain", runs.kubetrain)):
            for scenario, run in seen.items():  # for reading a failure: the whole view of each run
                (logs / f"view-{side}-{scenario}.json").write_text(
                    json.dumps(run.view, indent=1, sort_keys=True)
                )
        yield runs
    finally:
        node.stop()
        subprocess.run([str(PLANE_SCRIPT), "down", str(plane)], capture_output=True, check=False, timeout=120)
