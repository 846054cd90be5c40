"""Watches broken and resourceVersions compacted mid-run by the server: nothing missed
(docs/upstream-behaviour.md#failure-modes: 410 Gone on watch; kubernetes_asyncio#327, python-base#57)."""

from __future__ import annotations

import asyncio
import random

import pytest

from tests.integration.operator.harness import Cluster, PodAudit, wait_for
from tests.integration.reliability.lifecycles import lifecycles, run_and_check

SEED = 7


async def watch_chaos(cluster: Cluster, rng: random.Random, stop: asyncio.Event) -> tuple[int, int]:
    """Every 30-150 ms: break every watch (half the time with a 410 ERROR event first), compact the
    history (so a resume from any older resourceVersion gets 410 Gone), or both."""
    breaks = compactions = 0
    while not stop.is_set():
        await asyncio.sleep(rng.uniform(0.03, 0.15))
        action = rng.choice(("break", "compact", "both"))
        if action in ("compact", "both"):
            cluster.server.compact()
            compactions += 1
        if action in ("break", "both"):
            cluster.server.break_watches(gone=rng.random() < 0.5)
            breaks += 1
    return breaks, compactions


@pytest.mark.slow
async def test_broken_watches_and_compaction_miss_nothing() -> None:
    rng = random.Random(SEED)
    jobs = lifecycles(16, rng, prefix="watch")
    async with Cluster.start() as cluster:
        audit = PodAudit()  # from inside the server: our own watches are broken too
        cluster.server.store.add_listener(audit.on_store_event)
        stop = asyncio.Event()
        chaos = asyncio.create_task(watch_chaos(cluster, rng, stop))
        try:
            await run_and_check(cluster, jobs, audit)
        finally:
            stop.set()
            breaks, compactions = await chaos
        assert breaks >= 3 and compactions >= 3, (breaks, compactions)

        manager = cluster.operator.manager
        assert manager is not None
        pods = manager.child_informers["v1/Pod"]
        assert pods.reflector.lists > 1, "the reflector never had to relist"

        # The operator's caches converge on the server's state: same objects, same versions.
        async def caches_match() -> bool:
            for key, informer in [("v1/Pod", pods), ("v1/Service", manager.child_informers["v1/Service"])]:
                kind = key.split("/")[1]
                items, _ = await cluster.client.list(
                    "v1", kind, label_selector="training.kubeflow.org/operator-name"
                )
                server = {i["metadata"]["name"]: i["metadata"]["resourceVersion"] for i in items}
                cached = {
                    o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in informer.store.list()
                }
                if server != cached:
                    return False
            return True

        await wait_for(caches_match, timeout=5.0, message="operator caches differ from the server")
