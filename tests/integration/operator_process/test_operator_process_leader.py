"""Two operator processes with `--leader-elect`: one reconciles, a crash or a SIGTERM hands over.

Leases are short (4 s, renew deadline 3 s, retry 0.5 s) so that waiting out a SIGKILLed leader
takes seconds. Pods stay Pending (no node): what is measured is who creates them, and that every
pod name is ADDED exactly once across the handover.
"""

from __future__ import annotations

import signal
import time

from kubetrain.runtime.leaderelection import DEFAULT_LEASE_NAME
from kubetrain.runtime.transport import KubeClient
from tests.integration.operator_process.conftest import Processes
from tests.integration.operator_process.jobs import PodAddedLog, job, pods_of, wait_for
from tests.integration.operator_process.procs import LEASE_FLAGS, OperatorProc

LEASE_DURATION = 4.0


async def _pair(procs: Processes) -> tuple[OperatorProc, OperatorProc]:
    """Both candidates up; returns (leader, standby)."""
    flags = ("--install-crds", "--no-webhook", "--leader-elect", *LEASE_FLAGS)
    first, second = procs.operator(*flags, name="a"), procs.operator(*flags, name="b")
    await first.wait_ready()
    await second.wait_ready()

    async def leader() -> OperatorProc | None:
        states = [await first.is_leader(), await second.is_leader()]
        return None if states.count(True) != 1 else (first if states[0] else second)

    elected = await wait_for(leader, 15, "exactly one leader")
    return elected, second if elected is first else first


async def _holder(kube: KubeClient) -> str:
    lease = await kube.get("coordination.k8s.io/v1", "Lease", "default", DEFAULT_LEASE_NAME)
    return str(lease["spec"].get("holderIdentity") or "")


async def test_only_the_leader_reconciles(procs: Processes, kube: KubeClient) -> None:
    leader, standby = await _pair(procs)

    await kube.create(job("TFJob", "led", "default", replicas=3))
    await wait_for(lambda: _count_pods(kube, "led", 3), 20, "3 pods")

    assert await leader.reconciles() > 0
    assert await standby.reconciles() == 0
    assert await standby.probe("/readyz") == (200, "ok")  # a standby is ready: it serves probes/webhook
    assert await _holder(kube) != ""


async def test_sigkill_of_the_leader_hands_over_within_the_lease(procs: Processes, kube: KubeClient) -> None:
    leader, standby = await _pair(procs)
    audit = PodAddedLog(kube, "default")
    await audit.start()
    await kube.create(job("TFJob", "before", "default", replicas=3))
    await wait_for(lambda: _count_pods(kube, "before", 3), 20, "pods of the first job")

    leader.signal(signal.SIGKILL)
    killed = time.monotonic()
    await wait_for(standby.is_leader, LEASE_DURATION + 3, "standby takes over", interval=0.05)
    handover = time.monotonic() - killed
    await kube.create(job("TFJob", "after", "default", replicas=3))
    await wait_for(lambda: _count_pods(kube, "after", 3), 20, "pods of the second job")
    await kube.create(job("TFJob", "during", "default", replicas=2))
    await wait_for(lambda: _count_pods(kube, "during", 2), 20, "pods of the third job")
    await audit.stop()

    assert handover <= LEASE_DURATION + 2.5, f"handover took {handover:.1f}s"
    assert audit.duplicates() == []
    assert sorted(audit.added) == sorted(
        [f"before-worker-{i}" for i in range(3)]
        + [f"after-worker-{i}" for i in range(3)]
        + [f"during-worker-{i}" for i in range(2)]
    )
    assert await standby.reconciles() > 0


async def test_sigterm_releases_the_lease_for_a_fast_handover(procs: Processes, kube: KubeClient) -> None:
    leader, standby = await _pair(procs)
    old_holder = await _holder(kube)

    leader.signal(signal.SIGTERM)
    stopped = time.monotonic()
    await wait_for(standby.is_leader, LEASE_DURATION, "standby takes over", interval=0.05)
    handover = time.monotonic() - stopped

    assert handover < LEASE_DURATION / 2, f"handover took {handover:.1f}s: the lease was not released"
    assert await leader.wait(15) == 0
    assert "released lease" in leader.log()
    assert await _holder(kube) not in ("", old_holder)


async def _count_pods(kube: KubeClient, job_name: str, count: int) -> bool:
    return len(await pods_of(kube, "default", job_name)) == count
