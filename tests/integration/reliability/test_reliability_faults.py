"""409 conflicts, 5xx and 429 answers injected by the server are survived: every job still ends
right, no pod is created twice, and every injected fault was actually hit
(docs/upstream-behaviour.md#failure-modes: an API server answering 429 or 5xx, 409 Conflict on status)."""

from __future__ import annotations

import random

import pytest

from kubetrain.embedded.apiserver.faults import FaultRule
from kubetrain.kinds.registry import REPLICA_SPEC_KINDS as KINDS
from tests.integration.operator.harness import KIND_CASES, Cluster, PodAudit
from tests.integration.reliability.lifecycles import lifecycles, run_and_check

SEED = 409


def arm_faults(cluster: Cluster) -> list[FaultRule]:
    inject = cluster.server.faults.inject
    rules = [
        inject("create", "pods", 500, count=4),
        inject("create", "pods", 503, count=3, retry_after=0),
        inject("create", "pods", 429, count=3, retry_after=0),
        inject("create", "services", 500, count=3),
        inject("create", "services", 429, count=2, retry_after=0),
        inject("delete", "pods", 503, count=2, retry_after=0),
        inject("list", "pods", 500, count=1),
        inject("watch", "pods", 503, count=2, retry_after=0),
        inject("create", "events", 500, count=3),
    ]
    for kind in KIND_CASES:
        plural = KINDS[kind].plural
        rules.append(inject("update", f"{plural}/status", 409, count=2))
        rules.append(inject("update", f"{plural}/status", 500, count=1))
    return rules


@pytest.mark.slow
async def test_conflicts_and_server_errors_are_survived() -> None:
    rng = random.Random(SEED)
    jobs = lifecycles(12, rng, prefix="fault")
    async with Cluster.start(start_operator=False) as cluster:
        audit = PodAudit()
        await audit.follow(cluster)
        rules = arm_faults(cluster)
        await cluster.operator.start()  # its first list and watches meet the faults too
        await run_and_check(cluster, jobs, audit)
        unhit = [(r.verb, r.resource, r.code, r.remaining) for r in rules if r.remaining > 0]
        assert unhit == [], "faults never hit, so the test proved nothing about them"
