"""The operator process: manager, leader election, probes and metrics, webhook, graceful shutdown.

`kubetrain operator` is this class behind argparse. The pieces exist on their own (Manager,
LeaderElector, HealthServer, WebhookServer + CertProvisioner); this module decides how they live
together, which is where operators usually go wrong:

* **Preflight, before anything listens.** The job CRDs must be served: `--install-crds` applies
  them, otherwise a kind whose CRD is missing is skipped with a warning when the kind was not
  asked for explicitly, and is a start-up error when it was (`--enable-scheme`). A requested gang
  scheduler whose PodGroup CRD is missing is *not* fatal (upstream exits): we log one ERROR line
  naming the CRD and run without gang scheduling, so jobs still start; restart the operator after
  installing the scheduler to turn it on.
* **Only the leader reconciles.** With `--leader-elect` the manager (caches, queues, workers)
  starts when the Lease is acquired and stops when it is lost or released. Every replica serves
  probes, metrics and the sidecars (the webhook, composed by the CLI because the webhook package
  is the runtime's sibling layer), like controller-runtime: the webhook must answer from any
  replica the Service picks.
* **Readiness reflects what this replica must do.** `/readyz` checks the sidecars (webhook) and,
  on the leader, that the caches synced. A standby is ready: making readiness wait for the lease
  would deadlock a rolling update (the new pod never becomes ready while the old one leads).
  Leadership itself is the `leader_election_master_status{name}` gauge, client-go's metric.
* **A lost lease is fatal** (exit 1), as in controller-runtime: work the old term started may
  still be in flight, and the next leader may already act; restarting is the safe way back.
* **Graceful shutdown** on SIGTERM/SIGINT: the work queues stop taking keys, in-flight reconciles
  drain (up to `drain_timeout`), then the Lease is released (holder cleared), so a standby takes
  over at its next retry instead of waiting out the lease duration; then the listeners close.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from prometheus_client import CollectorRegistry, Gauge, PlatformCollector, ProcessCollector

from kubetrain.api.kinds import KindInfo
from kubetrain.controller.config import SCHEDULER_PLUGINS_PODGROUP, VOLCANO_PODGROUP
from kubetrain.kinds.registry import SERVED_KINDS, crd_manifests
from kubetrain.kube.errors import ApiError
from kubetrain.kube.resources import ResourceType
from kubetrain.runtime.config import RuntimeConfig, resolve_kinds
from kubetrain.runtime.crds import install_crds
from kubetrain.runtime.health import DEFAULT_METRICS_ADDRESS, DEFAULT_PROBE_ADDRESS, HealthServer
from kubetrain.runtime.leaderelection import DEFAULT_LEASE_NAME, LeaderElectionConfig, LeaderElector
from kubetrain.runtime.manager import Manager
from kubetrain.runtime.transport import KubeClient

log = logging.getLogger(__name__)

JsonDict = dict[str, Any]
ClientFactory = Callable[[float, int], Awaitable[KubeClient]]
"""(qps, burst) -> a connected client; each call is a new client with its own rate limiter."""

EXIT_OK = 0
EXIT_FAILED = 1
LEADER_CLIENT_QPS = 20.0
LEADER_CLIENT_BURST = 30


class OperatorError(Exception):
    """The operator cannot start with these settings on this cluster; the message says why."""


@dataclass(frozen=True)
class LeaderElectionOptions:
    """`--leader-elect` and friends; durations are client-go's defaults (15 s / 10 s / 2 s)."""

    enabled: bool = False
    name: str = DEFAULT_LEASE_NAME
    namespace: str = "default"
    identity: str = ""
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def config(self) -> LeaderElectionConfig:
        """Raises ValueError for inconsistent durations (client-go's rules)."""
        return LeaderElectionConfig(
            namespace=self.namespace,
            name=self.name,
            identity=self.identity or default_identity(),
            lease_duration=self.lease_duration,
            renew_deadline=self.renew_deadline,
            retry_period=self.retry_period,
        )


class Sidecar(Protocol):
    """A part of the process that every replica runs next to the manager (the webhook server).

    `run()` works until cancelled (retrying its own failures: a sidecar never stops the operator);
    `ready()` feeds `/readyz`; `stop()` closes what `run()` opened.
    """

    name: str

    def ready(self) -> bool: ...

    async def run(self) -> None: ...

    async def stop(self) -> None: ...


SidecarFactory = Callable[[KubeClient, Mapping[str, KindInfo]], list[Sidecar]]
"""Builds the sidecars once the client exists and the served kinds are known. The runtime layer
may not import the webhook package (they are siblings), so the CLI composes it through this."""


@dataclass(frozen=True)
class OperatorOptions:
    runtime: RuntimeConfig = field(default_factory=RuntimeConfig)
    metrics_address: str = DEFAULT_METRICS_ADDRESS
    probe_address: str = DEFAULT_PROBE_ADDRESS
    leader: LeaderElectionOptions = field(default_factory=LeaderElectionOptions)
    drain_timeout: float = 10.0


def default_identity() -> str:
    """The pod name when the Deployment passes it (POD_NAME), else client-go's hostname_uuid."""
    return os.environ.get("POD_NAME") or f"{socket.gethostname()}_{uuid.uuid4()}"


async def is_served(client: KubeClient, api_version: str, plural: str, namespace: str | None) -> bool:
    """Whether the API server serves a resource (a missing CRD answers 404 on list)."""
    try:
        await client.list(api_version, plural, namespace, limit=1)
    except ApiError as err:
        if err.not_found:
            return False
        raise
    return True


async def served_kinds(
    client: KubeClient, config: RuntimeConfig, available: Mapping[str, KindInfo]
) -> dict[str, KindInfo]:
    """The enabled kinds whose CRDs are served; see the module docstring for the policy."""
    explicit = bool(config.enabled_schemes)
    wanted = resolve_kinds(config.enabled_schemes, available)
    out: dict[str, KindInfo] = {}
    for kind in wanted:
        info = available[kind]
        if await is_served(client, info.api_version, info.plural, config.namespace):
            out[kind] = info
        elif explicit:
            raise OperatorError(
                f"the CRD {info.crd_name} is not installed, so {kind} cannot be reconciled: install the "
                "CRDs (`kubetrain install`, or run the operator with --install-crds) or remove "
                f"--enable-scheme {kind.lower()}"
            )
        else:
            log.warning("the CRD %s is not installed: not reconciling %s", info.crd_name, kind)
    if not out:
        raise OperatorError(
            "none of the job CRDs is installed: install them with `kubetrain install` "
            "or run the operator with --install-crds"
        )
    return out


async def gang_scheduler_available(client: KubeClient, config: RuntimeConfig) -> bool:
    """Whether the PodGroup CRD of the requested gang scheduler is served."""
    name = config.gang_scheduler_name
    api_version, kind, plural = VOLCANO_PODGROUP if name.lower() == "volcano" else SCHEDULER_PLUGINS_PODGROUP
    if (api_version, kind) not in client.registry:
        client.registry.register(ResourceType(api_version, kind, plural))
    try:
        return await is_served(client, api_version, plural, config.namespace)
    except ApiError as err:
        # Forbidden or a server error: we cannot tell, so keep what the user asked for.
        log.warning(
            "cannot check whether %s/%s is served (%s); keeping gang scheduling", api_version, kind, err
        )
        return True


class Operator:
    """`await Operator(options, connect).run(stop)` serves until `stop` is set; returns an exit code."""

    def __init__(
        self,
        options: OperatorOptions,
        connect: ClientFactory,
        *,
        sidecars: SidecarFactory | None = None,
        kinds: Mapping[str, KindInfo] | None = None,
    ) -> None:
        self.options = options
        self._connect = connect
        self._sidecar_factory = sidecars
        self.sidecars: list[Sidecar] = []
        self._available = dict(kinds if kinds is not None else SERVED_KINDS)
        self.registry = CollectorRegistry()
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        self._leader_gauge = Gauge(
            "leader_election_master_status",
            "1 while this replica holds the leader Lease, else 0 (client-go's metric)",
            ["name"],
            registry=self.registry,
        )
        self.manager: Manager | None = None
        self.health: HealthServer | None = None
        self.elector: LeaderElector | None = None
        self._client: KubeClient | None = None
        self._lease_client: KubeClient | None = None
        self._leading = False
        self._fatal = asyncio.Event()
        self._fatal_reason = ""
        self._background: list[asyncio.Task[None]] = []

    # -- public -----------------------------------------------------------------------------------

    @property
    def leading(self) -> bool:
        """True while this replica runs the manager (always, without leader election)."""
        return self._leading

    def ready(self) -> bool:
        """The readiness check of the reconciling part: a standby is ready, a leader once synced."""
        if not self._leading:
            return True
        return self.manager is not None and self.manager.ready

    async def run(self, stop: asyncio.Event) -> int:
        """Preflight, serve until `stop` (exit 0), a lost lease or a fatal error (exit 1)."""
        opts = self.options
        try:
            self._client = await self._connect(opts.runtime.kube_api_qps, opts.runtime.kube_api_burst)
            runtime, kinds = await self._preflight(self._client)
            self.manager = Manager(self._client, runtime, kinds=kinds, registry=self.registry)
            if self._sidecar_factory is not None:
                self.sidecars = self._sidecar_factory(self._client, kinds)
            await self._start_health()
            for sidecar in self.sidecars:
                self._background.append(asyncio.create_task(sidecar.run(), name=f"kubetrain-{sidecar.name}"))
            return await self._serve(stop)
        finally:
            await self._shutdown()

    # -- start-up ---------------------------------------------------------------------------------

    async def _preflight(self, client: KubeClient) -> tuple[RuntimeConfig, dict[str, KindInfo]]:
        runtime = self.options.runtime
        if runtime.install_crds:
            wanted = resolve_kinds(runtime.enabled_schemes, self._available)
            kinds = {k: self._available[k] for k in wanted}
            try:
                await install_crds(client, crd_manifests(kinds))
            except ApiError as err:
                raise OperatorError(
                    f"cannot install the CRDs ({err}); an operator without the right to write CRDs "
                    "needs them installed beforehand (`kubetrain install`)"
                ) from None
        else:
            kinds = await served_kinds(client, runtime, self._available)
        if runtime.gang_scheduler_name and not await gang_scheduler_available(client, runtime):
            log.error(
                "gang scheduler %r requested but its PodGroup CRD is not installed: running WITHOUT gang "
                "scheduling (pods use the default scheduler); install %s and restart the operator "
                "to enable it",
                runtime.gang_scheduler_name,
                "Volcano" if runtime.gang_scheduler_name.lower() == "volcano" else "scheduler-plugins",
            )
            runtime = replace(runtime, gang_scheduler_name="")
        log.info(
            "reconciling %s in %s",
            ", ".join(kinds),
            f"namespace {runtime.namespace}" if runtime.namespace else "all namespaces",
        )
        return replace(runtime, install_crds=False, enabled_schemes=()), kinds

    async def _start_health(self) -> None:
        opts = self.options
        self.health = HealthServer(
            self.registry, probe_address=opts.probe_address, metrics_address=opts.metrics_address
        )
        self.health.add_readyz_check("manager", self.ready)
        for sidecar in self.sidecars:
            self.health.add_readyz_check(sidecar.name, sidecar.ready)
        try:
            await self.health.start()
        except OSError as exc:
            raise OperatorError(f"cannot listen for probes/metrics: {exc.strerror or exc}") from None

    # -- serving ----------------------------------------------------------------------------------

    async def _serve(self, stop: asyncio.Event) -> int:
        waiters: list[asyncio.Future[Any]] = [
            asyncio.ensure_future(stop.wait()),
            asyncio.ensure_future(self._fatal.wait()),
        ]
        elector_task: asyncio.Task[None] | None = None
        if self.options.leader.enabled:
            self._lease_client = await self._connect(LEADER_CLIENT_QPS, LEADER_CLIENT_BURST)
            self.elector = LeaderElector(
                self._lease_client,
                self.options.leader.config(),
                on_started_leading=self._lead,
                on_stopped_leading=self._stopped_leading,
            )
            self._leader_gauge.labels(name=self.options.leader.name).set(0)
            log.info(
                "leader election on: lease %s/%s, identity %s",
                self.options.leader.namespace,
                self.options.leader.name,
                self.elector.identity,
            )
            elector_task = asyncio.create_task(self.elector.run(), name="kubetrain-leader-election")
            waiters.append(elector_task)
        else:
            self._background.append(asyncio.create_task(self._lead(), name="kubetrain-manager"))
        try:
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters[:2]:
                waiter.cancel()
        code = EXIT_OK
        if self._fatal.is_set():
            log.error("stopping: %s", self._fatal_reason)
            code = EXIT_FAILED
        elif elector_task is not None and elector_task.done():
            log.error("leader election lost: stopping so that a restarted replica can campaign again")
            code = EXIT_FAILED
        else:
            log.info("shutting down: draining workers%s", " and releasing the lease" if elector_task else "")
        if elector_task is not None and not elector_task.done():
            elector_task.cancel()
        if elector_task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await elector_task
        return code

    async def _lead(self) -> None:
        """The leader's term: start the manager, run until cancelled, then drain it."""
        assert self.manager is not None
        self._leading = True
        if self.options.leader.enabled:
            self._leader_gauge.labels(name=self.options.leader.name).set(1)
        try:
            await self.manager.start()
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.exception("the manager failed")
            self._fatal_reason = f"the manager failed: {exc}"
            self._fatal.set()
        finally:
            try:
                await self.manager.stop(self.options.drain_timeout)
            except Exception:
                log.exception("stopping the manager failed")

    def _stopped_leading(self) -> None:
        self._leading = False
        self._leader_gauge.labels(name=self.options.leader.name).set(0)
        log.info("stopped leading")

    # -- shutdown ---------------------------------------------------------------------------------

    async def _shutdown(self) -> None:
        for task in self._background:
            task.cancel()
        for task in self._background:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._background = []
        for sidecar in self.sidecars:
            await _quietly(sidecar.stop(), sidecar.name)
        if self.health is not None:
            await _quietly(self.health.stop(), "health server")
        for client in (self._lease_client, self._client):
            if client is not None:
                await _quietly(client.close(), "API client")
        self._client = self._lease_client = None


async def _quietly(coro: Awaitable[None], what: str) -> None:
    try:
        await coro
    except Exception:
        log.warning("stopping the %s failed", what, exc_info=True)
