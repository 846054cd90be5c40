"""The example TrainJobs on a real control plane, with upstream's JobSet controller running their
JobSets (issue #14's cluster part).

What a cluster user gets: the real kube-apiserver serves upstream's Trainer CRDs (installed by
`kubetrain operator --install-crds`), `kubetrain apply -f` submits each example's runtime and
TrainJob unchanged, kubetrain's operator builds the JobSet, **upstream's** JobSet controller (built
from sigs.k8s.io/jobset, with its own webhooks) makes the Jobs and the headless Service, the real
Job controller and kube-scheduler run the pods on the `kubetrain node`, and the ranks meet over the
Service's DNS names as on a cluster. The TrainJob must end Complete with upstream's reason and
jobsStatus, built from the status upstream's controller wrote. Opt in (as the JobSet tests) with
``KUBETRAIN_JOBSET_UPSTREAM=1``; CI sets it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from kubetrain.embedded.podgroups import podgroup_crds
from tests.integration.jobset.test_local_plane import kubectl
from tests.integration.jobset.upstream_plane import OPT_IN, UpstreamJobSetPlane, upstream_plane, wanted
from tests.integration.operator_process.procs import OperatorProc, run_cli
from tests.polling import wait_for

from .kueue_flow import run_kueue_flow
from .test_trainjob_examples_local import CASES, EXAMPLES, Case

pytestmark = pytest.mark.skipif(not wanted(), reason=f"upstream's JobSet controller runs with {OPT_IN}=1")
FINISH_TIMEOUT = 300.0


@dataclass
class Cluster:
    plane: UpstreamJobSetPlane
    operator: OperatorProc

    def logs(self) -> str:
        """The tails of kubetrain's operator's and upstream's JobSet controller's logs."""
        jobset = (self.plane.dir / "jobset-controller.log").read_text(errors="replace")
        return f"operator:\n{self.operator.log()[-3000:]}\njobset-controller:\n{jobset[-3000:]}"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """Upstream's JobSet plane plus kubetrain's operator (Trainer CRDs installed by it), with the
    scheduler-plugins and Volcano PodGroup CRDs installed first (as those schedulers' installs do),
    so the operator watches PodGroups."""
    directory = tmp_path_factory.mktemp("trainjob-upstream-jobset")
    with upstream_plane(directory) as plane:
        crds = directory / "podgroup-crds.yaml"
        crds.write_text(yaml.safe_dump_all(podgroup_crds()), encoding="utf-8")
        code, out = asyncio.run(kubectl(plane.kubeconfig, "apply", "-f", str(crds)))
        assert code == 0, out
        operator = OperatorProc(
            plane.kubeconfig,
            directory / "operator.log",
            "--install-crds",
            "--no-webhook",
            "--leader-elect=false",
        )
        try:
            # On a thread: the module fixture may be set up from a test's running event loop.
            with concurrent.futures.ThreadPoolExecutor(1) as pool:
                pool.submit(asyncio.run, operator.wait_ready()).result()
            yield Cluster(plane, operator)
        finally:
            operator.stop()


async def trainjob_status(kubeconfig: Path, name: str) -> dict:
    """The TrainJob's status once Complete or Failed is True, else {}."""
    code, out = await kubectl(kubeconfig, "get", "trainjob", name, "-o", "json")
    if code != 0:
        return {}
    status = json.loads(out).get("status") or {}
    true = {c["type"] for c in status.get("conditions") or [] if c.get("status") == "True"}
    return status if true & {"Complete", "Failed"} else {}


@pytest.mark.parametrize("case", CASES, ids=[c.job for c in CASES])
async def test_example_trainjob_completes_with_upstreams_jobset_controller(
    cluster: Cluster, case: Case
) -> None:
    kubeconfig = cluster.plane.kubeconfig
    example = EXAMPLES / case.job / "trainjob.yaml"
    done = await run_cli("apply", "-f", str(example), "--kubeconfig", str(kubeconfig))
    assert done.returncode == 0, done.stdout + done.stderr
    try:
        try:
            status = await wait_for(
                lambda: trainjob_status(kubeconfig, case.job),
                FINISH_TIMEOUT,
                "the TrainJob to finish",
                interval=1.0,
            )
        except AssertionError as err:
            _, objects = await kubectl(kubeconfig, "get", "trainjob,jobset,jobs,pods", "-o", "wide")
            raise AssertionError(f"{err}\n{objects}\n{cluster.logs()}") from None
        _, logs = await kubectl(
            kubeconfig, "logs", "-l", f"jobset.sigs.k8s.io/jobset-name={case.job}", "--tail=-1"
        )
        [complete] = [c for c in status["conditions"] if c["type"] == "Complete"]
        assert (complete["status"], complete["reason"]) == ("True", "AllJobsCompleted"), (
            status,
            logs,
            cluster.logs(),
        )
        [trainer] = [s for s in status["jobsStatus"] if s["name"] == case.env_job]
        assert trainer["succeeded"] == 1 and trainer["failed"] == 0, status

        code, out = await kubectl(kubeconfig, "get", "jobset", case.job, "-o", "json")
        assert code == 0, out
        jobset = json.loads(out)
        owner = jobset["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["name"], owner["controller"]) == ("TrainJob", case.job, True)
        conditions = {c["type"]: c["status"] for c in jobset["status"]["conditions"]}
        assert conditions.get("Completed") == "True", jobset["status"]  # upstream's controller wrote it
        selector = f"jobset.sigs.k8s.io/jobset-name={case.job}"
        code, out = await kubectl(kubeconfig, "get", "pods", "-l", selector, "-o", "json")
        assert code == 0, out
        pods = json.loads(out)["items"]
        hostnames = {f"{case.job}-{rjob}-0-{i}" for rjob, count in case.pods for i in range(count)}
        # Completed: the trainer's pods are kept; the JobSet deletes still-active Jobs (MPI's sshd nodes).
        found = {p["spec"]["hostname"] for p in pods}
        assert found <= hostnames and f"{case.job}-{case.env_job}-0-0" in found, found
        [trainer_pod, *_] = [
            p
            for p in pods
            if p["metadata"]["labels"]["jobset.sigs.k8s.io/replicatedjob-name"] == case.env_job
        ]
        env = {e["name"]: e.get("value") for e in trainer_pod["spec"]["containers"][0].get("env") or []}
        assert {name: env.get(name) for name in case.env} == case.env, env
        if case.hostfile:
            code, out = await kubectl(
                kubeconfig, "get", "configmap", f"{case.job}-mpi-hostfile", "-o", "json"
            )
            assert code == 0 and json.loads(out)["data"] == {"hostfile": case.hostfile}, out
        for text, times in case.log_marks:
            assert logs.count(text) == times, (text, logs)
    finally:
        await run_cli("delete", "-f", str(example), "--kubeconfig", str(kubeconfig))


GANG_RUNTIME = """
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainingRuntime
metadata: {name: gang, namespace: default}
spec:
  mlPolicy: {numNodes: 1}
  podGroupPolicy:
    coscheduling: {scheduleTimeoutSeconds: 45}
    volcano: {networkTopology: {mode: soft}}
  template:
    metadata: {annotations: {scheduling.volcano.sh/queue-name: research}}
    spec:
      replicatedJobs:
      - name: node
        template:
          metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}}
          spec:
            template:
              spec:
                containers:
                - {name: node, image: python:3.11, command: [python, -c, "print('gang member ran')"]}
---
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: tj-gang, namespace: default}
spec:
  runtimeRef: {apiGroup: trainer.kubeflow.org, kind: TrainingRuntime, name: gang}
  trainer:
    numNodes: 2
    resourcesPerNode: {requests: {cpu: 100m, memory: 64Mi}}
"""


async def test_a_gang_runtimes_pod_groups_are_accepted_by_the_real_api_server_and_collected_with_the_trainjob(
    cluster: Cluster, tmp_path: Path
) -> None:
    """Both pod group plugins at once (upstream runs both when a policy has both): the real API
    server stores each PodGroup as built, upstream's JobSet controller carries the label and the
    annotation onto the pods, the real kube-scheduler (no gang plugin) runs them, the TrainJob
    completes, and the real garbage collector deletes both PodGroups with the TrainJob (the owner
    reference is valid)."""
    kubeconfig = cluster.plane.kubeconfig
    manifest = tmp_path / "gang.yaml"
    manifest.write_text(GANG_RUNTIME, encoding="utf-8")
    done = await run_cli("apply", "-f", str(manifest), "--kubeconfig", str(kubeconfig))
    assert done.returncode == 0, done.stdout + done.stderr
    kinds = ("podgroups.scheduling.x-k8s.io", "podgroups.scheduling.volcano.sh")
    try:
        status = await wait_for(
            lambda: trainjob_status(kubeconfig, "tj-gang"), FINISH_TIMEOUT, "tj-gang", interval=1.0
        )
        assert [c["reason"] for c in status["conditions"] if c["type"] == "Complete"] == ["AllJobsCompleted"]
        specs = {}
        for kind in kinds:
            code, out = await kubectl(kubeconfig, "get", kind, "tj-gang", "-o", "json")
            assert code == 0, out
            group = json.loads(out)
            owner = group["metadata"]["ownerReferences"][0]
            assert (owner["kind"], owner["name"], owner["controller"]) == ("TrainJob", "tj-gang", True)
            specs[kind] = group["spec"]
        resources = {"cpu": "200m", "memory": "128Mi"}
        assert specs[kinds[0]] == {"minMember": 2, "minResources": resources, "scheduleTimeoutSeconds": 45}
        assert specs[kinds[1]] == {
            "minMember": 2,
            "minResources": resources,
            "queue": "research",
            "networkTopology": {"mode": "soft", "highestTierAllowed": 1},
        }
        code, out = await kubectl(
            kubeconfig, "get", "pods", "-l", "scheduling.x-k8s.io/pod-group=tj-gang", "-o", "json"
        )
        pods = json.loads(out)["items"]
        assert code == 0 and len(pods) == 2, out
        assert {p["metadata"]["annotations"]["scheduling.k8s.io/group-name"] for p in pods} == {"tj-gang"}
    finally:
        await run_cli("delete", "-f", str(manifest), "--kubeconfig", str(kubeconfig))

    async def collected() -> bool:
        for kind in kinds:
            code, out = await kubectl(kubeconfig, "get", kind, "-o", "name")
            if code != 0 or out.strip():
                return False
        return True

    await wait_for(collected, 60, "the PodGroups collected with their TrainJob")


async def test_a_runtime_patch_added_while_suspended_reaches_upstreams_jobset_and_its_pods(
    cluster: Cluster, tmp_path: Path
) -> None:
    """Kueue's flow (`kueue_flow.py`): upstream's JobSet webhook accepts the re-applied pod
    templates of a suspended JobSet, and its controller starts the resumed Jobs' pods with them."""
    await run_kueue_flow(cluster.plane.kubeconfig, tmp_path, cluster.logs)
