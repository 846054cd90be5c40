"""Leader failover between two operator processes on a real cluster.

Both operators watch a namespace of their own and use a Lease of their own, so the tier's main
operator (or an in-cluster one, which may also reconcile that namespace) does not blur the result:
leadership is read from each process's `leader_election_master_status`, reconciles from its
`kubetrain_reconcile_duration_seconds` count, and duplicates from the pods' ADDED events.
"""

from __future__ import annotations

import secrets
import signal
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from kubetrain.kube.errors import ApiError
from kubetrain.runtime.transport import KubeClient
from tests.e2e.cluster import tier
from tests.e2e.cluster.conftest import ClusterEnv
from tests.integration.operator_process.jobs import PodAddedLog, job, pods_of, wait_condition, wait_for
from tests.integration.operator_process.procs import LEASE_FLAGS, OperatorProc

assert tier.KUBECONFIG  # importing tier skips this module without a cluster

LEASE_DURATION = 4.0


@pytest.fixture
async def failover_namespace(kube: KubeClient, cluster_env: ClusterEnv) -> AsyncIterator[str]:
    name = f"{cluster_env.namespace}-fo-{secrets.token_hex(2)}"  # a real namespace takes a while to go
    await kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    yield name
    try:
        await kube.delete("v1", "Namespace", None, name)
    except ApiError as err:
        if not err.not_found:
            raise


async def test_killing_the_leader_hands_over_without_duplicate_pods(
    kube: KubeClient, cluster_env: ClusterEnv, failover_namespace: str, tmp_path: Path
) -> None:
    ns = failover_namespace
    lease = f"kubetrain-e2e-{secrets.token_hex(3)}"
    flags = (
        *cluster_env.connection_flags(),
        "--no-webhook",
        "--leader-elect",
        "--namespace",
        ns,
        "--leader-election-namespace",
        ns,
        "--leader-election-id",
        lease,
        *LEASE_FLAGS,
    )
    first = OperatorProc(cluster_env.kubeconfig, tmp_path / "a.log", *flags)
    second = OperatorProc(cluster_env.kubeconfig, tmp_path / "b.log", *flags)
    audit = PodAddedLog(kube, ns)
    try:
        await first.wait_ready(120)
        await second.wait_ready(120)

        async def leader() -> OperatorProc | None:
            states = [await first.is_leader(), await second.is_leader()]
            return None if states.count(True) != 1 else (first if states[0] else second)

        elected: OperatorProc = await wait_for(leader, 30, "exactly one leader")
        standby = second if elected is first else first
        await audit.start()
        await kube.create(job("TFJob", "before", ns, "print('ok')", replicas=2))
        await wait_for(lambda: _has_pods(kube, ns, "before", 2), cluster_env.timeout, "pods of the first job")
        assert await standby.reconciles() == 0

        elected.signal(signal.SIGKILL)
        killed = time.monotonic()
        await wait_for(standby.is_leader, LEASE_DURATION + 5, "standby takes over", interval=0.05)
        handover = time.monotonic() - killed
        await kube.create(job("TFJob", "after", ns, "print('ok')", replicas=2))
        await wait_for(lambda: _has_pods(kube, ns, "after", 2), cluster_env.timeout, "pods of the second job")
        await audit.stop()

        assert handover <= LEASE_DURATION + 3, f"handover took {handover:.1f}s"
        assert audit.duplicates() == []
        assert await standby.reconciles() > 0
    finally:
        await audit.stop()
        first.stop()
        second.stop()


async def _has_pods(kube: KubeClient, ns: str, job_name: str, count: int) -> bool:
    return len(await pods_of(kube, ns, job_name)) == count


async def test_an_operator_killed_mid_job_and_restarted_makes_no_duplicate_pod(
    kube: KubeClient, cluster_env: ClusterEnv, failover_namespace: str, tmp_path: Path
) -> None:
    """SIGKILL while the job's pods are being created; the next operator finishes the job from what
    the API server holds, creating each missing pod once and none twice."""
    ns = failover_namespace
    flags = (*cluster_env.connection_flags(), "--no-webhook", "--namespace", ns)
    replicas = 6
    audit = PodAddedLog(kube, ns)
    first = OperatorProc(cluster_env.kubeconfig, tmp_path / "first.log", *flags)
    second: OperatorProc | None = None
    try:
        await first.wait_ready(120)
        await audit.start()
        created = await kube.create(
            job("TFJob", "restarted", ns, "import time; time.sleep(2)", replicas=replicas)
        )
        await wait_for(lambda: pods_of(kube, ns, "restarted"), cluster_env.timeout, "a first pod")
        first.signal(signal.SIGKILL)
        second = OperatorProc(cluster_env.kubeconfig, tmp_path / "second.log", *flags)
        await second.wait_ready(120)

        await wait_condition(kube, created, "Succeeded", cluster_env.timeout)

        await audit.stop()
        assert audit.duplicates() == []
        assert len(await pods_of(kube, ns, "restarted")) == replicas
    finally:
        await audit.stop()
        first.stop()
        if second is not None:
            second.stop()
