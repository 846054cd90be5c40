"""Deterministic kills in the narrow windows that random kills only sometimes hit: right after the
operator's first write of a kind, the next incarnation must finish the job exactly as if nothing
happened (docs/upstream-behaviour.md#failure-modes: an operator restart mid-job, kubeflow/trainer#1186)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from kubetrain.embedded.apiserver.store import Event as StoreEvent
from tests.builders import job
from tests.integration.operator.harness import Cluster, PodAudit, conditions, wait_for


class KillSwitch:
    """Arms on a server-side write matching `when`; the test then kills the operator at once
    (before it can make its next write: the listener runs inside the server's commit)."""

    def __init__(self, cluster: Cluster, when: Callable[[StoreEvent], bool]) -> None:
        self.when = when
        self.tripped = asyncio.Event()
        self.operator = cluster.operator
        cluster.server.store.add_listener(self._on_event)

    def _on_event(self, ev: StoreEvent) -> None:
        if not self.tripped.is_set() and self.when(ev):
            self.tripped.set()
            # From inside the commit: no operator task runs again, so nothing after this write
            # can reach the server.
            self.operator.cancel_now()


def pod_deleted(name: str) -> Callable[[StoreEvent], bool]:
    def match(ev: StoreEvent) -> bool:
        return ev.type == "DELETED" and ev.obj.get("kind") == "Pod" and ev.obj["metadata"]["name"] == name

    return match


async def test_killed_between_cleanup_and_succeeded_status_does_not_rerun() -> None:
    async with Cluster.start() as cluster:
        audit = PodAudit()
        cluster.server.store.add_listener(audit.on_store_event)
        builder = (
            job("PyTorchJob", "cleanup").replicas("Master", 1).replicas("Worker", 1).clean_pod_policy("All")
        )
        await cluster.create(builder)
        await cluster.wait_children("cleanup", {"cleanup-master-0", "cleanup-worker-0"})
        await cluster.kubelet.run_all("cleanup")
        await cluster.wait_last_condition("PyTorchJob", "cleanup", "Running")

        # The master decides success: once it is gone, only the status can tell the job finished.
        switch = KillSwitch(cluster, pod_deleted("cleanup-master-0"))
        await cluster.kubelet.succeed_all("cleanup")
        await wait_for(switch.tripped.is_set, message="the operator never deleted a pod")
        await cluster.operator.kill()
        await cluster.operator.start()

        await asyncio.sleep(1.0)  # the next incarnation has synced and reconciled the job by now
        assert audit.of_job("cleanup") == {"cleanup-master-0": 1, "cleanup-worker-0": 1}
        done = await cluster.wait_last_condition("PyTorchJob", "cleanup", "Succeeded", timeout=4.0)
        assert conditions(done)[0][0] == "Created"
        await cluster.wait_children("cleanup", set())
