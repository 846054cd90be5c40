"""Leader election on a coordination.k8s.io/v1 Lease, with client-go's semantics.

Port of client-go's `leaderelection` package (LeaseLock), so a kubetrain operator and anything
else reading the Lease (kubectl, dashboards, an upstream operator during a migration) agree:

* a candidate acquires the Lease when it has no holder or when the record it observed has not
  changed for `lease_duration`. Expiry is measured on the candidate's own monotonic clock from
  the moment it last saw the record change, never from `renewTime`, so clock skew between
  machines cannot hand the lease out early;
* every write is an update with the observed resourceVersion: of two candidates racing for an
  expired lease exactly one wins, the other gets 409 and keeps following;
* the leader renews every `retry_period`; if it cannot renew for `renew_deadline` (< lease
  duration) it stops leading before anyone else may acquire, so two leaders never overlap;
* on graceful shutdown the leader releases (holder empty, leaseDurationSeconds 1), so a standby
  takes over at its next retry instead of waiting out the lease (client-go's ReleaseOnCancel).

The elector gets its own `KubeClient` (own token bucket): a manager busy creating thousands of pods
must not delay a renewal past the deadline and lose leadership for nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from kubetrain.kube.errors import ApiError
from kubetrain.kube.rng import RNG
from kubetrain.kube.timefmt import format_microtime

log = logging.getLogger(__name__)

JsonDict = dict[str, Any]
LEASE_API = "coordination.k8s.io/v1"
LEASE_KIND = "Lease"
DEFAULT_LEASE_NAME = "1ca428e5.training-operator.kubeflow.org"
"""Upstream's `--leader-election-id`: the same name keeps one leader across a migration."""
JITTER_FACTOR = 1.2
"""client-go's acquire jitter: retries spread over [retry, retry * (1 + 1.2)]."""

Callback = Callable[[], Awaitable[None] | None]


class LeaseClient(Protocol):
    """The verbs the elector uses; the runtime's `KubeClient` has them."""

    async def get(self, api_version: str, kind: str, namespace: str | None, name: str) -> JsonDict: ...

    async def create(self, obj: JsonDict, *, namespace: str | None = None) -> JsonDict: ...

    async def replace(self, obj: JsonDict, *, subresource: str | None = None) -> JsonDict: ...


@dataclass(frozen=True)
class LeaderElectionConfig:
    """client-go's defaults (LeaseDuration 15 s, RenewDeadline 10 s, RetryPeriod 2 s)."""

    namespace: str
    name: str = DEFAULT_LEASE_NAME
    identity: str = ""
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    release_on_cancel: bool = True

    def __post_init__(self) -> None:
        if not self.identity:
            raise ValueError("leader election needs a non-empty identity")
        if self.lease_duration <= self.renew_deadline:
            raise ValueError("lease_duration must be greater than renew_deadline")
        if self.renew_deadline <= JITTER_FACTOR * self.retry_period:
            raise ValueError("renew_deadline must be greater than retry_period * 1.2")
        if self.lease_duration < 1:
            raise ValueError("lease_duration must be at least 1 second (the Lease stores whole seconds)")

    @property
    def lease_duration_seconds(self) -> int:
        return max(1, round(self.lease_duration))


@dataclass
class LeaderRecord:
    """The Lease spec fields client-go's LeaderElectionRecord maps onto."""

    holder_identity: str = ""
    lease_duration_seconds: int = 0
    acquire_time: str | None = None
    renew_time: str | None = None
    lease_transitions: int = 0

    @classmethod
    def from_lease(cls, lease: JsonDict) -> LeaderRecord:
        spec = lease.get("spec") or {}
        return cls(
            holder_identity=spec.get("holderIdentity") or "",
            lease_duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
            acquire_time=spec.get("acquireTime"),
            renew_time=spec.get("renewTime"),
            lease_transitions=int(spec.get("leaseTransitions") or 0),
        )

    def to_spec(self) -> JsonDict:
        spec: JsonDict = {
            "holderIdentity": self.holder_identity,
            "leaseDurationSeconds": self.lease_duration_seconds,
            "leaseTransitions": self.lease_transitions,
        }
        if self.acquire_time:
            spec["acquireTime"] = self.acquire_time
        if self.renew_time:
            spec["renewTime"] = self.renew_time
        return spec


@dataclass
class _Observed:
    record: LeaderRecord = field(default_factory=LeaderRecord)
    raw: JsonDict | None = None
    at: float = 0.0
    """Local monotonic time at which the record last changed."""


class LeaderElector:
    """Campaigns for the Lease and keeps it; `run()` returns when leadership ends.

    `on_started_leading` runs once the lease is acquired (an async callback is started as a task
    and cancelled when leadership ends); `on_stopped_leading` runs when leadership is lost or
    released; `on_new_leader(identity)` whenever the observed holder changes. Like controller-
    runtime, the caller should treat a lost lease as fatal (exit): the work it guarded may still
    be in flight and another leader may already act.
    """

    def __init__(
        self,
        client: LeaseClient,
        config: LeaderElectionConfig,
        *,
        on_started_leading: Callback | None = None,
        on_stopped_leading: Callback | None = None,
        on_new_leader: Callable[[str], None] | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.client = client
        self.config = config
        self.on_started_leading = on_started_leading
        self.on_stopped_leading = on_stopped_leading
        self.on_new_leader = on_new_leader
        self._monotonic = monotonic
        self._wall_clock = wall_clock
        self._observed = _Observed()
        self._leading = False
        self._reported_leader: str | None = None
        self._leader_task: asyncio.Future[None] | None = None

    # -- state ----------------------------------------------------------------------------------

    @property
    def identity(self) -> str:
        return self.config.identity

    @property
    def is_leader(self) -> bool:
        """True from a successful acquire until renewal fails, the lease is released or run ends."""
        return self._leading

    @property
    def leader(self) -> str:
        """The holder of the last observed record ("" when none)."""
        return self._observed.record.holder_identity

    def _lease_valid(self, now: float) -> bool:
        return self._observed.at + self._observed.record.lease_duration_seconds > now

    def _observe(self, record: LeaderRecord, raw: JsonDict | None) -> None:
        self._observed = _Observed(record, raw, self._monotonic())
        if record.holder_identity != self._reported_leader:
            self._reported_leader = record.holder_identity
            if record.holder_identity:
                log.info("lease %s is held by %s", self.config.name, record.holder_identity)
            if self.on_new_leader is not None and record.holder_identity:
                self.on_new_leader(record.holder_identity)

    # -- the protocol ---------------------------------------------------------------------------

    async def try_acquire_or_renew(self) -> bool:
        """One attempt (client-go's tryAcquireOrRenew); True when we hold the lease after it."""
        now = self._wall_clock()
        stamp = format_microtime(now)
        desired = LeaderRecord(self.identity, self.config.lease_duration_seconds, stamp, stamp, 0)
        holding = self._observed.record.holder_identity == self.identity
        # 1. Fast path: the leader updates optimistically against the version it last wrote.
        if holding and self._observed.raw is not None and self._lease_valid(self._monotonic()):
            desired.acquire_time = self._observed.record.acquire_time
            desired.lease_transitions = self._observed.record.lease_transitions
            with contextlib.suppress(ApiError):
                await self._update(self._observed.raw, desired)
                return True
        # 2. Read (or create) the record.
        try:
            lease = await self.client.get(LEASE_API, LEASE_KIND, self.config.namespace, self.config.name)
        except ApiError as err:
            if not err.not_found:
                log.warning("error retrieving lease %s: %s", self._describe(), err)
                return False
            return await self._create(desired)
        current = LeaderRecord.from_lease(lease)
        if current != self._observed.record or self._observed.raw is None:
            self._observe(current, lease)
        else:
            self._observed.raw = lease
        # 3. Held by someone else and not expired on our clock: follow.
        holding = current.holder_identity == self.identity
        if current.holder_identity and self._lease_valid(self._monotonic()) and not holding:
            return False
        # 4. Acquire (or renew through the slow path).
        if holding:
            desired.acquire_time = current.acquire_time
            desired.lease_transitions = current.lease_transitions
        else:
            desired.lease_transitions = current.lease_transitions + 1
        try:
            await self._update(lease, desired)
        except ApiError as err:
            log.info("failed to update lease %s: %s", self._describe(), err)
            return False
        return True

    async def _create(self, record: LeaderRecord) -> bool:
        body = {
            "apiVersion": LEASE_API,
            "kind": LEASE_KIND,
            "metadata": {"name": self.config.name, "namespace": self.config.namespace},
            "spec": record.to_spec(),
        }
        try:
            created = await self.client.create(body)
        except ApiError as err:
            log.info("error creating lease %s: %s", self._describe(), err)
            return False
        self._observe(record, created)
        return True

    async def _update(self, lease: JsonDict, record: LeaderRecord) -> None:
        body = {**lease, "apiVersion": LEASE_API, "kind": LEASE_KIND, "spec": record.to_spec()}
        updated = await self.client.replace(body)
        self._observe(record, updated)

    async def release(self) -> bool:
        """Give the lease up if we hold it (holder "", duration 1 s): the standby takes over at once.

        Reads the lease first and writes only if it still names us, so releasing after a lost
        renewal can never clear another leader's record.
        """
        try:
            async with asyncio.timeout(self.config.renew_deadline):
                lease = await self.client.get(LEASE_API, LEASE_KIND, self.config.namespace, self.config.name)
                current = LeaderRecord.from_lease(lease)
                if current.holder_identity != self.identity:
                    return True
                stamp = format_microtime(self._wall_clock())
                await self._update(lease, LeaderRecord("", 1, stamp, stamp, current.lease_transitions))
        except (ApiError, TimeoutError) as err:
            log.warning("failed to release lease %s: %s", self._describe(), err)
            return False
        log.info("released lease %s", self._describe())
        return True

    # -- the loops ------------------------------------------------------------------------------

    async def run(self) -> None:
        """Acquire, lead until renewal fails, then stop leading; releases when cancelled."""
        try:
            await self._acquire()
            await self._set_leading(True)
            await self._renew()
        finally:
            await asyncio.shield(self._finish())

    async def _finish(self) -> None:
        """Stop the guarded work first, then release: never lead while a release is pending."""
        was_leading = self._leading
        await self._set_leading(False)
        if self.config.release_on_cancel and was_leading:
            await self.release()

    async def _acquire(self) -> None:
        log.info("attempting to acquire lease %s", self._describe())
        while True:
            if await self.try_acquire_or_renew():
                log.info("successfully acquired lease %s", self._describe())
                return
            period = self.config.retry_period
            await asyncio.sleep(period + RNG.random() * JITTER_FACTOR * period)

    async def _renew(self) -> None:
        while True:
            deadline = self._monotonic() + self.config.renew_deadline
            while True:
                started = self._monotonic()
                remaining = deadline - started
                renewed = False
                if remaining > 0:
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(remaining):
                            renewed = await self.try_acquire_or_renew()
                if renewed:
                    break
                if self._monotonic() + self.config.retry_period >= deadline:
                    log.warning(
                        "failed to renew lease %s within %.1fs", self._describe(), self.config.renew_deadline
                    )
                    return
                await asyncio.sleep(self.config.retry_period)
            await asyncio.sleep(max(0.0, self.config.retry_period - (self._monotonic() - started)))

    async def _set_leading(self, leading: bool) -> None:
        if leading == self._leading:
            return
        self._leading = leading
        if leading:
            result = self.on_started_leading() if self.on_started_leading else None
            if inspect.isawaitable(result):
                self._leader_task = asyncio.ensure_future(result)
                self._leader_task.add_done_callback(_log_failure)
            return
        if self._leader_task is not None:
            self._leader_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._leader_task
            self._leader_task = None
        result = self.on_stopped_leading() if self.on_stopped_leading else None
        if inspect.isawaitable(result):
            await result

    def _describe(self) -> str:
        return f"{self.config.namespace}/{self.config.name}"


def _log_failure(task: asyncio.Future[None]) -> None:
    """The leader's work ended on its own with an error: say so (its owner decides what follows)."""
    if not task.cancelled() and task.exception() is not None:
        log.error("on_started_leading failed", exc_info=task.exception())
