"""The operator is killed (tasks cancelled where they stand, no drain) and restarted at seeded random
points of 20 concurrent job lifecycles: no duplicate pod, no lost job, the final status right
(docs/upstream-behaviour.md#failure-modes: an operator restart mid-job, kubeflow/trainer#1186)."""

from __future__ import annotations

import asyncio
import contextlib
import random

import pytest

from kubetrain.embedded.apiserver.store import Event as StoreEvent
from tests.integration.operator.harness import Cluster, Operator, PodAudit, wait_for
from tests.integration.reliability.lifecycles import lifecycles, settle_and_check

SEED = 20260101
# "clean-all" (cleanPodPolicy All) checks that a kill between the Succeeded status and the cleanup
# never re-runs a job (the manager writes a finishing status before the plan's deletes).
CHAOS_SCENARIOS = ("succeed", "restart", "fail", "clean-all")
JOBS = 20
MIN_KILLS = 6


class WriteClock:
    """Counts writes committed by the server (pods, services, jobs; not Events): the lifecycles'
    progress, so kill points land between real state changes, never in a livelock of kills that
    come before anything could land."""

    def __init__(self, cluster: Cluster) -> None:
        self.writes = 0
        cluster.server.store.add_listener(self._on_event)

    def _on_event(self, ev: StoreEvent) -> None:
        if ev.obj.get("kind") != "Event":
            self.writes += 1


async def chaos_monkey(
    operator: Operator, clock: WriteClock, rng: random.Random, done: asyncio.Event
) -> list[int]:
    """Kill the operator after a random number of committed writes (or 2 s without any), restart
    it after a random pause; until every lifecycle is done. Returns the write counts at kills."""
    kill_points: list[int] = []
    while not done.is_set():
        target = clock.writes + rng.randint(1, 25)

        def reached(target: int = target) -> bool:
            return clock.writes >= target or done.is_set()

        # If nothing moves for 2 s (the kubelet waits on the operator or the reverse), kill anyway.
        with contextlib.suppress(AssertionError):
            await wait_for(reached, timeout=2.0, interval=0.002)
        if done.is_set():
            break
        kill_points.append(clock.writes)
        await operator.kill()
        await asyncio.sleep(rng.uniform(0.0, 0.2))
        await operator.start()
    return kill_points


@pytest.mark.slow
async def test_kill_and_restart_during_twenty_lifecycles() -> None:
    rng = random.Random(SEED)
    jobs = lifecycles(JOBS, rng, prefix="chaos", scenarios=CHAOS_SCENARIOS)
    async with Cluster.start() as cluster:
        audit = PodAudit()
        await audit.follow(cluster)
        done = asyncio.Event()
        monkey = asyncio.create_task(chaos_monkey(cluster.operator, WriteClock(cluster), rng, done))

        async def create_then_drive(index: int) -> None:
            await asyncio.sleep(index * 0.05)  # staggered, so kills land in every phase
            await cluster.create(jobs[index].builder())
            await jobs[index].drive(cluster)

        try:
            await asyncio.gather(*(create_then_drive(i) for i in range(len(jobs))))
        finally:
            done.set()
            kill_points = await monkey
        # A final, clean incarnation must find nothing to do twice.
        await cluster.operator.kill()
        await cluster.operator.start()
        await settle_and_check(cluster, jobs, audit, settle=1.0)
        assert cluster.operator.kills >= MIN_KILLS, kill_points
        assert {lc.scenario for lc in jobs} == set(CHAOS_SCENARIOS) and len({lc.kind for lc in jobs}) == 6
