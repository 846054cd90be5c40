"""The manager: informers, work queues and workers that run the pure planner for every kind.

Flow per job key `<Kind>/<namespace>/<name>`:
  job or child event -> queue (dedup) -> worker -> expectations satisfied? -> Observed from the
  caches -> plan() -> apply actions concurrently -> PUT status if changed -> events, metrics ->
  forget / requeue_after, or requeue rate-limited on error (controller-runtime's semantics).

Workers start only after every cache has synced: acting on a partial cache would re-create pods
that merely had not been listed yet (spec performance-reliability §3.2).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from prometheus_client import CollectorRegistry

from kubetrain.api.kinds import KINDS
from kubetrain.controller import reconciler
from kubetrain.controller.config import ChildType, ControllerConfig
from kubetrain.controller.plan import CreateObject, Observed, Plan
from kubetrain.runtime.applier import Applier
from kubetrain.runtime.cache import (
    INDEX_JOB_NAME,
    INDEX_OWNER_UID,
    JOB_NAME_LABEL,
    OPERATOR_NAME_LABEL,
    Change,
    controller_owner,
)
from kubetrain.runtime.config import RuntimeConfig, resolve_kinds
from kubetrain.runtime.crds import install_crds
from kubetrain.runtime.errors import ApiError
from kubetrain.runtime.events import EventRecorder, involved_object
from kubetrain.runtime.expectations import Expectations, child_id
from kubetrain.runtime.informer import Informer
from kubetrain.runtime.labels import matches
from kubetrain.runtime.metrics import Metrics
from kubetrain.runtime.ratelimit import default_controller_rate_limiter
from kubetrain.runtime.resources import ResourceType
from kubetrain.runtime.transport import KubeClient
from kubetrain.runtime.workqueue import QueueShutDown, WorkQueue

log = logging.getLogger(__name__)

JsonDict = dict[str, Any]
PlanFn = Callable[[JsonDict, Observed, datetime, ControllerConfig], Plan]
ChildrenFn = Callable[[ControllerConfig], list[ChildType]]

POD_KEY = "v1/Pod"
SERVICE_KEY = "v1/Service"
OWNED_SELECTOR = OPERATOR_NAME_LABEL


class KindSpec(Protocol):
    """What the manager needs of `kubetrain.api.kinds.KindInfo`."""

    @property
    def kind(self) -> str: ...
    @property
    def plural(self) -> str: ...
    @property
    def api_version(self) -> str: ...
    @property
    def controller_name(self) -> str: ...
    @property
    def framework(self) -> str: ...


@dataclass(frozen=True)
class Planner:
    """The controller package's two entry points, injectable for tests."""

    plan: PlanFn
    watched_children: ChildrenFn

    @classmethod
    def default(cls) -> Planner:
        return cls(reconciler.plan, reconciler.watched_children)


def default_kinds() -> Mapping[str, KindSpec]:
    return KINDS


def utcnow() -> datetime:
    return datetime.now(UTC)


def job_key(kind: str, namespace: str, name: str) -> str:
    return f"{kind}/{namespace}/{name}"


def split_key(key: str) -> tuple[str, str, str]:
    kind, namespace, name = key.split("/", 2)
    return kind, namespace, name


def _parse_ts(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def _newer(candidate: JsonDict, current: JsonDict | None) -> bool:
    """resourceVersions are opaque, but etcd's are integers; only trust an integer comparison."""
    if current is None:
        return True
    try:
        return int(candidate["metadata"]["resourceVersion"]) > int(current["metadata"]["resourceVersion"])
    except (KeyError, TypeError, ValueError):
        return False


class KindController:
    """Per-kind state: the job informer, its queue and workers."""

    def __init__(self, info: KindSpec, resource: ResourceType, informer: Informer, queue: WorkQueue[str]):
        self.info = info
        self.resource = resource
        self.informer = informer
        self.queue = queue
        self.workers: list[asyncio.Task[None]] = []


class Manager:
    def __init__(
        self,
        client: KubeClient,
        config: RuntimeConfig | None = None,
        *,
        planner: Planner | None = None,
        kinds: Mapping[str, KindSpec] | None = None,
        registry: CollectorRegistry | None = None,
        clock: Callable[[], datetime] = utcnow,
        crd_manifests: list[JsonDict] | None = None,
    ) -> None:
        self.client = client
        self.config = config or RuntimeConfig()
        self.controller_config = self.config.controller_config()
        self.planner = planner or Planner.default()
        all_kinds = kinds if kinds is not None else default_kinds()
        enabled = resolve_kinds(self.config.enabled_schemes, all_kinds)
        self.kinds: dict[str, KindSpec] = {k: all_kinds[k] for k in enabled}
        self.metrics = Metrics(registry)
        self.expectations = Expectations()
        self.recorder = EventRecorder(client, max_pending=self.config.event_queue_size)
        self.crd_manifests = crd_manifests or []
        self._clock = clock
        self.controllers: dict[str, KindController] = {}
        self.child_informers: dict[str, Informer] = {}
        self.child_types: dict[str, ChildType] = {}
        self.applier = Applier(
            client,
            self.expectations,
            self._observable,
            lambda api_version, kind: f"{api_version}/{kind}" in self.child_informers,
            self.config.max_writes_in_flight,
        )
        self._pods_timed: set[str] = set()
        self._stopped = asyncio.Event()
        self._started = False

    # -- lifecycle ---------------------------------------------------------------------------

    @property
    def ready(self) -> bool:
        """All caches synced and workers running (for /readyz)."""
        return self._started and all(i.has_synced for i in self._informers())

    async def start(self) -> None:
        """Build and sync the caches, then start the workers. Raises if caches do not sync."""
        if self.config.install_crds and self.crd_manifests:
            await install_crds(self.client, self.crd_manifests)
        await self._build_child_informers()
        for kind, info in self.kinds.items():
            resource = self.client.resource(info.api_version, info.kind)
            informer = Informer(self.client, resource, namespace=self.config.namespace)
            queue: WorkQueue[str] = WorkQueue(
                default_controller_rate_limiter(qps=self.config.queue_qps, burst=self.config.queue_burst),
                name=kind,
            )
            kc = KindController(info, resource, informer, queue)
            informer.add_handler(self._job_handler(kc))
            self.metrics.track_queue(kind, _depth_of(queue))
            self.controllers[kind] = kc
        self.recorder.start()
        for informer in self._informers():
            informer.start()
        synced = await asyncio.gather(
            *(i.wait_for_sync(self.config.cache_sync_timeout) for i in self._informers())
        )
        if not all(synced):
            await self.stop()
            raise TimeoutError(f"caches did not sync within {self.config.cache_sync_timeout:.0f}s")
        for kc in self.controllers.values():
            kc.workers = [
                asyncio.create_task(self._worker(kc), name=f"{kc.info.kind}-worker-{i}")
                for i in range(max(1, self.config.workers))
            ]
        self._started = True
        log.info("manager started: kinds=%s namespace=%s", ",".join(self.kinds), self.config.namespace or "*")

    async def run(self) -> None:
        """Start, then serve until `stop()` is called."""
        await self.start()
        await self._stopped.wait()

    async def stop(self, drain_timeout: float = 10.0) -> None:
        """Stop taking keys, let in-flight reconciles finish, then stop caches and events."""
        for kc in self.controllers.values():
            kc.queue.shutdown()
        workers = [t for kc in self.controllers.values() for t in kc.workers]
        if workers:
            _, pending = await asyncio.wait(workers, timeout=drain_timeout)
            for task in pending:
                task.cancel()
            for task in pending:
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        await asyncio.gather(*(i.stop() for i in self._informers()))
        await self.recorder.stop()
        self.metrics.events_dropped.set(self.recorder.dropped)
        self._started = False
        self._stopped.set()

    def _informers(self) -> list[Informer]:
        return [*self.child_informers.values(), *(kc.informer for kc in self.controllers.values())]

    # -- informers and event mapping ---------------------------------------------------------

    async def _build_child_informers(self) -> None:
        types = [
            ChildType("v1", "Pod", "pods", OWNED_SELECTOR),
            ChildType("v1", "Service", "services", OWNED_SELECTOR),
        ]
        for ct in self.planner.watched_children(self.controller_config):
            if ct.key not in {t.key for t in types}:
                types.append(ct)
        for ct in types:
            resource = self._child_resource(ct)
            if ct.key not in (POD_KEY, SERVICE_KEY) and not await self._served(resource):
                log.warning("%s is not served by the API server; not watching it", ct.key)
                continue
            informer = Informer(
                self.client, resource, namespace=self.config.namespace, label_selector=ct.label_selector
            )
            informer.add_handler(self._child_handler)
            self.child_informers[ct.key] = informer
            self.child_types[ct.key] = ct

    def _child_resource(self, ct: ChildType) -> ResourceType:
        if (ct.api_version, ct.kind) not in self.client.registry:
            self.client.registry.register(ResourceType(ct.api_version, ct.kind, ct.plural))
        return self.client.resource(ct.api_version, ct.kind)

    async def _served(self, resource: ResourceType) -> bool:
        """Upstream watches PodGroups only if their CRD is installed (spec §3.1)."""
        try:
            await self.client.list(resource.api_version, resource.plural, self.config.namespace, limit=1)
        except ApiError as err:
            if err.not_found:
                return False
            raise
        return True

    def _job_handler(self, kc: KindController) -> Callable[[Change], None]:
        def handle(change: Change) -> None:
            obj = change.new or change.old
            assert obj is not None
            meta = obj["metadata"]
            key = job_key(kc.info.kind, meta.get("namespace", ""), meta["name"])
            if change.type == "DELETED":
                self.expectations.delete(key)
                self._pods_timed.discard(meta.get("uid", ""))
            kc.queue.add(key)

        return handle

    def _child_handler(self, change: Change) -> None:
        obj = change.new or change.old
        assert obj is not None
        owner = controller_owner(obj)
        if owner is None:
            return
        kc = self.controllers.get(owner.get("kind", ""))
        if kc is None or owner.get("apiVersion") != kc.info.api_version:
            return
        meta = obj["metadata"]
        key = job_key(kc.info.kind, meta.get("namespace", ""), owner["name"])
        child = child_id(obj.get("kind", ""), meta["name"])
        if change.type == "ADDED":
            self.expectations.creation_observed(key, child)
        elif change.type == "DELETED" or (change.new or {}).get("metadata", {}).get("deletionTimestamp"):
            # Like the Job controller, a deletionTimestamp already counts as the observed delete.
            self.expectations.deletion_observed(key, child)
        kc.queue.add(key)

    def _observable(self, obj: JsonDict) -> bool:
        ct = self.child_types.get(f"{obj.get('apiVersion')}/{obj.get('kind')}")
        if ct is None:
            return False
        return matches(ct.label_selector, (obj.get("metadata") or {}).get("labels"))

    # -- the reconcile -----------------------------------------------------------------------

    def observed_for(self, job: JsonDict) -> Observed:
        """The job's children from the caches: pods by owner uid and job-name label, services by
        label, other kinds by controller owner uid."""
        meta = job["metadata"]
        ns, name, uid = meta.get("namespace", ""), meta["name"], meta.get("uid")
        pods: list[JsonDict] = []
        services: list[JsonDict] = []
        others: dict[str, list[JsonDict]] = {}
        for key, informer in self.child_informers.items():
            if key == POD_KEY:
                pods = [
                    p
                    for p in informer.store.by_index(INDEX_OWNER_UID, uid or "")
                    if (p["metadata"].get("labels") or {}).get(JOB_NAME_LABEL) == name
                    and p["metadata"].get("namespace") == ns
                ]
            elif key == SERVICE_KEY:
                services = informer.store.by_index(INDEX_JOB_NAME, f"{ns}/{name}")
            else:
                others[key] = informer.store.by_index(INDEX_OWNER_UID, uid or "") if uid else []
        return Observed(pods=pods, services=services, others=others)

    async def _worker(self, kc: KindController) -> None:
        while True:
            try:
                key = await kc.queue.get()
            except QueueShutDown:
                return
            started = time.perf_counter()
            try:
                await self.reconcile(kc, key)
            except Exception:
                log.exception("%s: reconcile failed unexpectedly", key)
                self.metrics.reconcile_errors.labels(kind=kc.info.kind).inc()
                kc.queue.add_rate_limited(key)
            finally:
                kc.queue.done(key)
                self.metrics.reconcile_duration.labels(kind=kc.info.kind).observe(
                    time.perf_counter() - started
                )

    async def reconcile(self, kc: KindController, key: str) -> None:
        """One reconcile of one job key, with controller-runtime's requeue semantics."""
        _, ns, name = split_key(key)
        job = kc.informer.store.get(ns, name)
        if job is None:
            self.expectations.delete(key)
            kc.queue.forget(key)
            return
        if not self.expectations.satisfied(key):
            # The observing event will enqueue the key; the timer only covers a lost event.
            kc.queue.add_after(key, self.expectations.remaining_ttl(key) + 0.001)
            return
        observed = self.observed_for(job)
        try:
            plan = self.planner.plan(job, observed, self._clock(), self.controller_config)
        except Exception:
            log.exception("%s: planner raised", key)
            self.metrics.reconcile_errors.labels(kind=kc.info.kind).inc()
            kc.queue.add_rate_limited(key)
            return

        outcome = await self.applier.apply(key, ns, plan.actions)
        for (verb, result), n in outcome.writes.items():
            self.metrics.api_writes.labels(verb=verb, result=result).inc(n)
        for event in plan.events:
            involved = involved_object(job) if event.involved is None else _ref_dict(event.involved)
            self.recorder.record(kc.info.controller_name, involved, event.type, event.reason, event.message)
        self.metrics.events_dropped.set(self.recorder.dropped)
        self._time_pods_created(kc, job, observed, plan, outcome.errors == [])

        if plan.requeue_after is not None:
            kc.queue.add_after(key, max(0.0, plan.requeue_after))
        if outcome.errors:
            self.metrics.reconcile_errors.labels(kind=kc.info.kind).inc()
            kc.queue.add_rate_limited(key)
            return
        if plan.status is not None and not await self._write_status(kc, key, job, plan.status):
            return
        for metric in plan.metrics:
            self.metrics.increment(metric)
        kc.queue.forget(key)

    async def _write_status(self, kc: KindController, key: str, job: JsonDict, status: JsonDict) -> bool:
        """PUT /status conditional on the cached resourceVersion; on 409 re-get and requeue."""
        try:
            written = await self.client.replace_status({**job, "status": status})
        except ApiError as err:
            if err.not_found:
                kc.queue.forget(key)
                return False
            if err.conflict:
                log.debug("%s: status conflict, re-reading", key)
                with contextlib.suppress(ApiError):
                    fresh = await self.client.get(kc.info.api_version, kc.info.kind, *split_key(key)[1:])
                    self._store_if_newer(kc, fresh)
                kc.queue.add_rate_limited(key)
                return False
            log.info("%s: status write failed: %s", key, err)
            self.metrics.reconcile_errors.labels(kind=kc.info.kind).inc()
            kc.queue.add_rate_limited(key)
            return False
        # Our own write is the newest version: storing it now saves a reconcile on its watch event
        # (which then carries the same resourceVersion and is deduplicated by the store).
        self._store_if_newer(kc, written)
        return True

    def _store_if_newer(self, kc: KindController, obj: JsonDict) -> None:
        store = kc.informer.store
        meta = obj.get("metadata") or {}
        if _newer(obj, store.get(meta.get("namespace"), meta.get("name", ""))):
            store.upsert(obj)

    def _time_pods_created(
        self, kc: KindController, job: JsonDict, observed: Observed, plan: Plan, ok: bool
    ) -> None:
        """Observe create-to-pods once per job: when the pods that exist or were just created
        reach the sum of the job's replicas."""
        uid = job["metadata"].get("uid", "")
        if not ok or uid in self._pods_timed:
            return
        desired = _desired_replicas(job, kc.info)
        if desired is None or desired == 0:
            return
        created = sum(1 for a in plan.actions if isinstance(a, CreateObject) and a.obj.get("kind") == "Pod")
        live = sum(1 for p in observed.pods if not p["metadata"].get("deletionTimestamp"))
        if live + created < desired:
            return
        born = _parse_ts(job["metadata"].get("creationTimestamp"))
        self._pods_timed.add(uid)
        if born is not None:
            elapsed = (self._clock() - born).total_seconds()
            self.metrics.create_to_pods.labels(kind=kc.info.kind).observe(max(0.0, elapsed))


def _desired_replicas(job: JsonDict, info: KindSpec) -> int | None:
    field = getattr(info, "replica_specs_field", None)
    specs = (job.get("spec") or {}).get(field) if field else None
    if not isinstance(specs, dict):
        return None
    total = 0
    for rspec in specs.values():
        replicas = (rspec or {}).get("replicas")
        total += 1 if replicas is None else int(replicas)
    return total


def _depth_of(queue: WorkQueue[str]) -> Callable[[], float]:
    return lambda: float(len(queue))


def _ref_dict(ref: Any) -> JsonDict:
    out = {"apiVersion": ref.api_version, "kind": ref.kind, "namespace": ref.namespace, "name": ref.name}
    if ref.uid:
        out["uid"] = ref.uid
    return out
