"""Leader election between electors against the embedded API server, on a compressed clock.

The lease is 2 s, the renew deadline 1.5 s and the retry period 0.2 s (client-go's 15/10/2 scaled
down, keeping renew_deadline + retry_period < lease_duration, the condition for never having two
leaders). A sampler records every elector's `is_leader` every 100 ms; no sample may show two.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from kubetrain.embedded.apiserver import EmbeddedAPIServer
from kubetrain.kube.errors import ApiError
from kubetrain.kube.timefmt import parse_time
from kubetrain.runtime.leaderelection import (
    DEFAULT_LEASE_NAME,
    LEASE_API,
    LeaderElectionConfig,
    LeaderElector,
)
from kubetrain.runtime.transport import KubeClient

NS = "kubeflow"
LEASE = 2.0
RENEW = 1.5
RETRY = 0.2
MICROTIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


class Partitionable:
    """A lease client whose network can be cut, like a leader losing the API server."""

    def __init__(self, inner: KubeClient) -> None:
        self.inner = inner
        self.cut = False

    def _check(self) -> None:
        if self.cut:
            raise ApiError(0, "ConnectionError", "network partition")

    async def get(self, api_version: str, kind: str, namespace: str | None, name: str) -> dict[str, Any]:
        self._check()
        return await self.inner.get(api_version, kind, namespace, name)

    async def create(self, obj: dict[str, Any], *, namespace: str | None = None) -> dict[str, Any]:
        self._check()
        return await self.inner.create(obj, namespace=namespace)

    async def replace(self, obj: dict[str, Any], *, subresource: str | None = None) -> dict[str, Any]:
        self._check()
        return await self.inner.replace(obj, subresource=subresource)


class Candidate:
    """One operator process: its own client, its elector, its run task and a log of callbacks."""

    def __init__(self, api: EmbeddedAPIServer, identity: str, *, release: bool = True) -> None:
        # Its own client, as in the operator: the manager's limiter cannot starve renewals.
        self.client = Partitionable(
            KubeClient.for_url(api.url, api.token, api.ca_file, qps=0, max_attempts=1)
        )
        self.events: list[tuple[str, float]] = []
        self.elector = LeaderElector(
            self.client,
            LeaderElectionConfig(
                namespace=NS,
                identity=identity,
                lease_duration=LEASE,
                renew_deadline=RENEW,
                retry_period=RETRY,
                release_on_cancel=release,
            ),
            on_started_leading=lambda: self.events.append(("started", time.monotonic())),
            on_stopped_leading=lambda: self.events.append(("stopped", time.monotonic())),
        )
        self.task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.task = asyncio.create_task(self.elector.run())

    async def stop(self) -> None:
        if self.task is not None and not self.task.done():
            self.task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await self.task
        await self.client.inner.close()

    def when(self, what: str) -> float:
        return next(t for name, t in self.events if name == what)


class Timeline:
    """Samples who leads every 100 ms."""

    def __init__(self, candidates: list[Candidate]) -> None:
        self.candidates = candidates
        self.samples: list[tuple[float, list[str]]] = []
        self._task = asyncio.create_task(self._sample())

    async def _sample(self) -> None:
        while True:
            leaders = [c.elector.identity for c in self.candidates if c.elector.is_leader]
            self.samples.append((time.monotonic(), leaders))
            await asyncio.sleep(0.1)

    async def close(self) -> None:
        self._task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await self._task

    def assert_never_two_leaders(self) -> None:
        assert self.samples, "no samples taken"
        overlaps = [(t, ls) for t, ls in self.samples if len(ls) > 1]
        assert not overlaps, overlaps


@pytest.fixture
async def api() -> AsyncIterator[EmbeddedAPIServer]:
    async with EmbeddedAPIServer() as server:
        async with KubeClient.for_url(server.url, server.token, server.ca_file, qps=0) as admin:
            await admin.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
        yield server


@pytest.fixture
async def candidates(api: EmbeddedAPIServer) -> AsyncIterator[Callable[..., Candidate]]:
    made: list[Candidate] = []

    def make(identity: str, **kwargs: Any) -> Candidate:
        cand = Candidate(api, identity, **kwargs)
        made.append(cand)
        return cand

    yield make
    for cand in made:
        await cand.stop()


async def wait_for(predicate: Callable[[], bool], timeout: float) -> float:
    """Seconds until `predicate()` holds; fails after `timeout`."""
    start = time.monotonic()
    while not predicate():
        assert time.monotonic() - start < timeout, "condition not reached in time"
        await asyncio.sleep(0.02)
    return time.monotonic() - start


async def lease(api: EmbeddedAPIServer) -> dict[str, Any]:
    async with KubeClient.for_url(api.url, api.token, api.ca_file, qps=0) as admin:
        return await admin.get(LEASE_API, "Lease", NS, DEFAULT_LEASE_NAME)


def leader_of(cands: list[Candidate]) -> Candidate:
    (leader,) = [c for c in cands if c.elector.is_leader]
    return leader


async def test_one_of_two_leads_and_the_lease_says_who(
    api: EmbeddedAPIServer, candidates: Callable[..., Candidate]
) -> None:
    cands = [candidates("operator-a"), candidates("operator-b")]
    timeline = Timeline(cands)
    for c in cands:
        c.start()
    await wait_for(lambda: any(c.elector.is_leader for c in cands), 3)
    first = await lease(api)
    await asyncio.sleep(1.0)
    await timeline.close()
    timeline.assert_never_two_leaders()

    leader = leader_of(cands)
    follower = next(c for c in cands if c is not leader)
    spec = (await lease(api))["spec"]
    assert spec["holderIdentity"] == leader.elector.identity
    assert spec["leaseDurationSeconds"] == 2
    assert spec["leaseTransitions"] == 0
    assert MICROTIME.match(spec["acquireTime"]) and MICROTIME.match(spec["renewTime"])
    assert spec["acquireTime"] == first["spec"]["acquireTime"]
    assert parse_time(spec["renewTime"]) > parse_time(first["spec"]["renewTime"])  # renewing
    assert follower.elector.leader == leader.elector.identity
    assert [e for e, _ in leader.events] == ["started"] and follower.events == []


async def test_graceful_shutdown_releases_and_the_other_takes_over_at_once(
    api: EmbeddedAPIServer, candidates: Callable[..., Candidate]
) -> None:
    cands = [candidates("operator-a"), candidates("operator-b")]
    timeline = Timeline(cands)
    for c in cands:
        c.start()
    await wait_for(lambda: any(c.elector.is_leader for c in cands), 3)
    await asyncio.sleep(0.5)  # the follower has seen the lease renewed: it would wait a full term
    leader = leader_of(cands)
    follower = next(c for c in cands if c is not leader)

    stopped_at = time.monotonic()
    await leader.stop()
    took = await wait_for(lambda: follower.elector.is_leader, LEASE)
    await timeline.close()
    timeline.assert_never_two_leaders()

    assert took < 1.0, f"takeover after release took {took:.2f}s; the lease is {LEASE}s"
    assert [e for e, _ in leader.events] == ["started", "stopped"]
    assert leader.when("stopped") <= follower.when("started")
    assert follower.when("started") - stopped_at < 1.0
    spec = (await lease(api))["spec"]
    assert spec["holderIdentity"] == follower.elector.identity
    assert spec["leaseTransitions"] == 1
    assert spec["leaseDurationSeconds"] == 2  # the new leader writes its own duration over the 1 s


async def test_a_crashed_leader_is_replaced_within_the_lease_duration(
    api: EmbeddedAPIServer, candidates: Callable[..., Candidate]
) -> None:
    cands = [candidates("operator-a", release=False), candidates("operator-b", release=False)]
    timeline = Timeline(cands)
    for c in cands:
        c.start()
    await wait_for(lambda: any(c.elector.is_leader for c in cands), 3)
    await asyncio.sleep(0.5)
    leader = leader_of(cands)
    follower = next(c for c in cands if c is not leader)

    await leader.stop()  # no release: the lease stays as the dead leader last renewed it
    assert (await lease(api))["spec"]["holderIdentity"] == leader.elector.identity
    took = await wait_for(lambda: follower.elector.is_leader, LEASE + 2.2 * RETRY + 0.5)
    await timeline.close()
    timeline.assert_never_two_leaders()
    # Not before the lease could have expired (measured from the last renewal the follower saw)...
    assert took >= LEASE - RETRY - 0.1, f"took over after {took:.2f}s, before the lease expired"
    spec = (await lease(api))["spec"]
    assert spec["holderIdentity"] == follower.elector.identity and spec["leaseTransitions"] == 1


async def test_a_partitioned_leader_steps_down_before_anyone_takes_over(
    api: EmbeddedAPIServer, candidates: Callable[..., Candidate]
) -> None:
    cands = [candidates("operator-a"), candidates("operator-b")]
    timeline = Timeline(cands)
    for c in cands:
        c.start()
    await wait_for(lambda: any(c.elector.is_leader for c in cands), 3)
    await asyncio.sleep(0.5)
    leader = leader_of(cands)
    follower = next(c for c in cands if c is not leader)

    leader.client.cut = True
    stepped_down = await wait_for(lambda: not leader.elector.is_leader, RENEW + RETRY + 0.5)
    await wait_for(lambda: follower.elector.is_leader, LEASE + 2.2 * RETRY + 0.5)
    await asyncio.sleep(0.5)
    await timeline.close()
    timeline.assert_never_two_leaders()

    assert stepped_down <= RENEW + RETRY + 0.3
    # Exact, not sampled: the old leader stopped before the new one started.
    assert leader.when("stopped") < follower.when("started")
    assert leader.task is not None and leader.task.done()  # run() returns when leadership is lost

    leader.client.cut = False  # the network heals: the old leader does not come back by itself
    await asyncio.sleep(3 * RETRY)
    assert not leader.elector.is_leader and follower.elector.is_leader


async def test_many_candidates_racing_for_a_fresh_lease_elect_exactly_one(
    api: EmbeddedAPIServer, candidates: Callable[..., Candidate]
) -> None:
    cands = [candidates(f"operator-{i}") for i in range(6)]
    timeline = Timeline(cands)
    for c in cands:
        c.start()
    await wait_for(lambda: any(c.elector.is_leader for c in cands), 3)
    await asyncio.sleep(1.0)
    await timeline.close()
    timeline.assert_never_two_leaders()
    leader = leader_of(cands)
    assert all(c.elector.leader == leader.elector.identity for c in cands)


async def test_async_leader_work_is_cancelled_when_leadership_ends(api: EmbeddedAPIServer) -> None:
    cancelled = asyncio.Event()
    leaders: list[str] = []

    async def lead() -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    async with KubeClient.for_url(api.url, api.token, api.ca_file, qps=0) as client:
        elector = LeaderElector(
            client,
            LeaderElectionConfig(
                NS, identity="solo", lease_duration=LEASE, renew_deadline=RENEW, retry_period=RETRY
            ),
            on_started_leading=lead,
            on_new_leader=leaders.append,
        )
        task = asyncio.create_task(elector.run())
        await wait_for(lambda: elector.is_leader, 3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert cancelled.is_set() and not elector.is_leader
        assert leaders == ["solo"]
        spec = (await client.get(LEASE_API, "Lease", NS, DEFAULT_LEASE_NAME))["spec"]
        assert spec["holderIdentity"] == "" and spec["leaseDurationSeconds"] == 1  # released


async def test_release_never_clears_another_holders_lease(api: EmbeddedAPIServer) -> None:
    async with KubeClient.for_url(api.url, api.token, api.ca_file, qps=0) as client:
        config = LeaderElectionConfig(
            NS, identity="a", lease_duration=LEASE, renew_deadline=RENEW, retry_period=RETRY
        )
        elector = LeaderElector(client, config)
        assert await elector.try_acquire_or_renew()
        current = await client.get(LEASE_API, "Lease", NS, DEFAULT_LEASE_NAME)
        current["spec"]["holderIdentity"] = "b"
        await client.replace(current)
        assert await elector.release()
        assert (await client.get(LEASE_API, "Lease", NS, DEFAULT_LEASE_NAME))["spec"]["holderIdentity"] == "b"


def test_config_enforces_client_go_invariants() -> None:
    with pytest.raises(ValueError, match="identity"):
        LeaderElectionConfig(NS)
    with pytest.raises(ValueError, match="renew_deadline"):
        LeaderElectionConfig(NS, identity="x", lease_duration=10, renew_deadline=10)
    with pytest.raises(ValueError, match="retry_period"):
        LeaderElectionConfig(NS, identity="x", renew_deadline=2, retry_period=2)
    default = LeaderElectionConfig(NS, identity="x")
    assert (default.lease_duration, default.renew_deadline, default.retry_period) == (15.0, 10.0, 2.0)
    assert default.name == "1ca428e5.training-operator.kubeflow.org"
    assert default.lease_duration_seconds == 15
