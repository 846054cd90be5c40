"""Start-up against clusters that lack something: CRDs, a gang scheduler's PodGroup CRD, flags."""

from __future__ import annotations

from kubetrain.kinds.registry import REPLICA_SPEC_KINDS as KINDS
from kubetrain.runtime.crds import install_crds
from kubetrain.runtime.operator import crd_manifests
from kubetrain.runtime.transport import KubeClient
from tests.integration.operator_process.conftest import Processes
from tests.integration.operator_process.jobs import job, pods_of, wait_for


async def test_no_job_crd_installed_is_a_clear_startup_error(procs: Processes) -> None:
    operator = procs.operator("--no-webhook")

    assert await operator.wait(30) == 1
    assert "none of the job CRDs is installed" in operator.log()
    assert "Traceback" not in operator.log()


async def test_an_explicitly_enabled_kind_without_its_crd_is_refused(
    procs: Processes, kube: KubeClient
) -> None:
    await install_crds(kube, crd_manifests({"TFJob": KINDS["TFJob"]}))
    operator = procs.operator("--no-webhook", "--enable-scheme", "tfjob", "--enable-scheme", "PyTorchJob")

    assert await operator.wait(30) == 1
    assert "the CRD pytorchjobs.kubeflow.org is not installed" in operator.log()


async def test_kinds_without_crds_are_skipped_when_not_asked_for(procs: Processes, kube: KubeClient) -> None:
    await install_crds(kube, crd_manifests({"TFJob": KINDS["TFJob"]}))
    operator = procs.operator("--no-webhook")
    await operator.wait_ready()

    log = operator.log()
    assert "the CRD pytorchjobs.kubeflow.org is not installed: not reconciling PyTorchJob" in log
    assert "reconciling TFJob in all namespaces" in log


async def test_missing_podgroup_crd_runs_without_gang_scheduling(procs: Processes, kube: KubeClient) -> None:
    operator = procs.operator("--install-crds", "--no-webhook", "--gang-scheduler-name", "volcano")
    await operator.wait_ready()
    assert "running WITHOUT gang scheduling" in operator.log()

    await kube.create(job("PyTorchJob", "ungrouped", "default"))

    pods = await wait_for(lambda: pods_of(kube, "default", "ungrouped"), 20, "pods created")
    assert pods[0]["spec"].get("schedulerName", "default-scheduler") == "default-scheduler"
    assert "scheduling.k8s.io/group-name" not in (pods[0]["metadata"].get("annotations") or {})


async def test_bad_flags_exit_2_with_the_flag_named(procs: Processes) -> None:
    operator = procs.operator(
        "--leader-elect", "--leader-election-lease-duration", "2", "--leader-election-renew-deadline", "3"
    )

    assert await operator.wait(30) == 2
    assert "leader election: lease_duration must be greater than renew_deadline" in operator.log()
