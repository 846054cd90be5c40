"""The manager: informers, work queues and workers that run the pure planner for every kind.

Flow per job key `<Kind>/<namespace>/<name>`:
  job or child event -> queue (dedup) -> worker -> expectations satisfied? -> Observed from the
  caches -> plan() -> apply actions concurrently -> PUT status if changed -> events, metrics ->
  forget / requeue_after, or requeue rate-limited on error (controller-runtime's semantics).

Workers start only after every cache has synced: acting on a partial cache would re-create pods
that merely had not been listed yet (docs/upstream-behaviour.md#failure-modes).

The manager names no kind: what a kind needs beyond its own children comes from its
registration's observe hints (`kubetrain.kinds.registration.ObserveHints`), and what to do after
a pass from the plan's own signals:

* `batch_job_pods`: the pods of the job's batch/v1 Jobs (their controller is the Job): they are
  shown to the planner and their events reach the job through the Job's own controller reference;
* `context`: kinds a planner reads but does not own (owned by no job): every cached object of
  them is shown, and a change to one queues every job of the kinds that read them;
* `namesakes`: objects of a watched kind in the job's namespace named `<job>` or `<job>-...` that
  the job does not control, so the planner can refuse them instead of creating over them;
* `Plan.retry`: the pass counts as an error and is retried with backoff (a refused namesake);
  `Plan.requeue_now`: the job is planned again at once after its writes;
* a patch of the job itself (e.g. an annotation freezing which version's mechanics a job uses):
  its response becomes the base of this pass's status write.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Protocol

from prometheus_client import CollectorRegistry

from kubetrain.controller.config import ChildType, ControllerConfig
from kubetrain.controller.plan import (
    Action,
    CreateObject,
    DeleteObject,
    ObjectRef,
    Observed,
    PatchObject,
    Plan,
)
from kubetrain.kinds import registry as kind_registry
from kubetrain.kinds.registration import KindRegistration, ObserveHints, unregistered
from kubetrain.kube.errors import ApiError
from kubetrain.kube.labels import matches
from kubetrain.kube.resources import ResourceType
from kubetrain.kube.tasks import cancel_and_wait
from kubetrain.kube.timefmt import parse_time
from kubetrain.runtime.applier import Applier, ApplyResult
from kubetrain.runtime.cache import (
    DEFAULT_INDEXERS,
    INDEX_JOB_NAME,
    INDEX_NAME_PREFIX,
    INDEX_OWNER_UID,
    JOB_NAME_LABEL,
    OPERATOR_NAME_LABEL,
    Change,
    IndexFunc,
    controller_owner,
    index_by_name_prefix,
)
from kubetrain.runtime.config import RuntimeConfig, resolve_kinds
from kubetrain.runtime.crds import install_crds
from kubetrain.runtime.events import EventRecorder, involved_object
from kubetrain.runtime.expectations import Expectations, child_id
from kubetrain.runtime.informer import Informer
from kubetrain.runtime.metrics import Metrics
from kubetrain.runtime.ratelimit import default_controller_rate_limiter
from kubetrain.runtime.transport import KubeClient
from kubetrain.runtime.workqueue import QueueShutDown, WorkQueue

log = logging.getLogger(__name__)

JsonDict = dict[str, Any]
PlanFn = Callable[[JsonDict, Observed, datetime, ControllerConfig], Plan]
ChildrenFn = Callable[..., list[ChildType]]
"""(config) -> child types, or (config, kind names) -> child types when `Planner.by_kind`."""

POD_KEY = "v1/Pod"
SERVICE_KEY = "v1/Service"
BATCH_JOB_KEY = "batch/v1/Job"
PRIORITY_CLASS = ChildType("scheduling.k8s.io/v1", "PriorityClass", "priorityclasses", None)
"""Cluster-scoped context, not children: every one is shown to a planner whose registration asks
for them under gang scheduling (a gang's minResources ordered by priority)."""
OWNED_SELECTOR = OPERATOR_NAME_LABEL
FORBIDDEN = 403
CHILD_BATCH_MIN_PLAN = 0.005
"""Plans cheaper than this (jobs of up to ~100 replicas) are re-run at once on a child event."""
CHILD_BATCH_FACTOR = 3.0
CHILD_BATCH_MAX = 1.0
"""A costlier job waits `CHILD_BATCH_FACTOR` times its last plan (at most `CHILD_BATCH_MAX`
seconds, the batch period of kube-controller-manager's Job controller) after a child event before
it is planned again, so the events of that window make one plan. Without it a 10,000-replica job,
whose pods change all the time, is re-planned back to back and its O(replicas) plans starve the
event loop the API server and the node share (issue 17)."""


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
    by_kind: bool = False
    """Whether `watched_children` also takes the served kind names (the real one does: the
    registrations name the children their planners own)."""

    @classmethod
    def default(cls) -> Planner:
        return cls(kind_registry.plan, kind_registry.watched_children, by_kind=True)

    def children(self, config: ControllerConfig, kinds: Sequence[str]) -> list[ChildType]:
        if self.by_kind:
            return self.watched_children(config, list(kinds))
        return self.watched_children(config)


def default_kinds() -> Mapping[str, KindSpec]:
    return kind_registry.SERVED_KINDS


def utcnow() -> datetime:
    return datetime.now(UTC)


def job_key(kind: str, namespace: str, name: str) -> str:
    return f"{kind}/{namespace}/{name}"


def split_key(key: str) -> tuple[str, str, str]:
    kind, namespace, name = key.split("/", 2)
    return kind, namespace, name


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

    def __init__(
        self,
        info: KindSpec,
        registration: KindRegistration,
        resource: ResourceType,
        informer: Informer,
        queue: WorkQueue[str],
    ):
        self.info = info
        self.registration = registration
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
        self.registrations: dict[str, KindRegistration] = {
            k: kind_registry.registration_for(k) or unregistered(info) for k, info in self.kinds.items()
        }
        # Kinds the caller neither passed nor named: skipped when their CRD is not served (an
        # install of some of the CRDs only must not wait forever for the others to list).
        self._optional_kinds = set() if kinds is not None or self.config.enabled_schemes else set(enabled)
        self.metrics = Metrics(registry)
        self.expectations = Expectations()
        self.recorder = EventRecorder(client, max_pending=self.config.event_queue_size)
        self.crd_manifests = crd_manifests or []
        self._clock = clock
        self.controllers: dict[str, KindController] = {}
        self.child_informers: dict[str, Informer] = {}
        self.child_types: dict[str, ChildType] = {}
        self._services_by_owner = False
        self._context_keys: set[str] = set()
        """The `context` kinds of the served kinds' observe hints (listed whole, owned by no job)."""
        self.applier = Applier(
            client,
            self.expectations,
            self._observable,
            lambda api_version, kind: f"{api_version}/{kind}" in self.child_informers,
            self.config.max_writes_in_flight,
            selective=self._selective,
        )
        self._pods_timed: set[str] = set()
        self._plan_cost: dict[str, float] = {}
        """Seconds the last plan of each job key took (see CHILD_BATCH_FACTOR)."""
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
        await self._drop_unserved_kinds()
        await self._build_child_informers()
        for kind, info in self.kinds.items():
            resource = self.client.resource(info.api_version, info.kind)
            informer = Informer(self.client, resource, namespace=self.config.namespace)
            queue: WorkQueue[str] = WorkQueue(
                default_controller_rate_limiter(qps=self.config.queue_qps, burst=self.config.queue_burst),
                name=kind,
            )
            kc = KindController(info, self.registrations[kind], resource, informer, queue)
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
            await cancel_and_wait(pending)
        await asyncio.gather(*(i.stop() for i in self._informers()))
        await self.recorder.stop()
        self.metrics.events_dropped.set(self.recorder.dropped)
        self._started = False
        self._stopped.set()

    def _informers(self) -> list[Informer]:
        return [*self.child_informers.values(), *(kc.informer for kc in self.controllers.values())]

    # -- informers and event mapping ---------------------------------------------------------

    async def _drop_unserved_kinds(self) -> None:
        """Leave out the default kinds the API server does not serve, before their children are
        watched (no Secret or Role informer for a kind whose CRD is not installed)."""
        for kind in [k for k in self.kinds if k in self._optional_kinds]:
            info = self.kinds[kind]
            problem = await self._unserved(self.client.resource(info.api_version, info.kind))
            if problem:
                log.warning("%s: not reconciling %s", problem, kind)
                del self.kinds[kind]

    def _child_types(self) -> list[ChildType]:
        """Pods and Services, then what the planner asks for; a kind asked for with two
        selectors is watched unfiltered (a planner's own Service may carry no operator label)."""
        types: dict[str, ChildType] = {
            POD_KEY: ChildType("v1", "Pod", "pods", OWNED_SELECTOR),
            SERVICE_KEY: ChildType("v1", "Service", "services", OWNED_SELECTOR),
        }
        requested = list(self.planner.children(self.controller_config, list(self.kinds)))
        if self.controller_config.gang_scheduling and self._observes(lambda hints: hints.priority_classes):
            requested.append(PRIORITY_CLASS)
        for kind in self.kinds:
            for ct in self.registrations[kind].observe.context:
                self._context_keys.add(ct.key)
                requested.append(ct)
        for ct in requested:
            if ct.key == SERVICE_KEY:
                self._services_by_owner = True
            have = types.get(ct.key)
            if have is None:
                types[ct.key] = ct
            elif have.label_selector != ct.label_selector:
                types[ct.key] = replace(have, label_selector=None)
        return list(types.values())

    async def _build_child_informers(self) -> None:
        indexers: dict[str, IndexFunc] | None = None
        if self._observes(lambda hints: hints.namesakes):
            indexers = {**DEFAULT_INDEXERS, INDEX_NAME_PREFIX: index_by_name_prefix}
        for ct in self._child_types():
            resource = self._child_resource(ct)
            if ct.key not in (POD_KEY, SERVICE_KEY):
                problem = await self._unserved(resource, ct.label_selector)
                if problem:
                    log.warning("%s; not watching %s", problem, ct.key)
                    continue
            informer = Informer(
                self.client,
                resource,
                namespace=self.config.namespace,
                label_selector=ct.label_selector,
                indexers=indexers,
            )
            informer.add_handler(self._child_handler)
            self.child_informers[ct.key] = informer
            self.child_types[ct.key] = ct

    def _observes(self, hint: Callable[[ObserveHints], bool]) -> bool:
        """Whether any served kind's registration asks for this observe hint."""
        return any(hint(self.registrations[k].observe) for k in self.kinds)

    def _child_resource(self, ct: ChildType) -> ResourceType:
        if (ct.api_version, ct.kind) not in self.client.registry:
            self.client.registry.register(ResourceType(ct.api_version, ct.kind, ct.plural))
        return self.client.resource(ct.api_version, ct.kind)

    async def _unserved(self, resource: ResourceType, label_selector: str | None = None) -> str:
        """Why `resource` cannot be watched ("" when it can). Upstream watches PodGroups only if
        their CRD is installed (docs/upstream-behaviour.md#watches); a kind the operator's RBAC does
        not grant (a launcher's Roles without their RBAC component, PriorityClasses in a
        single-namespace install) is left out the same way instead of failing the whole operator.
        One page of one object, of the informer's own selection: the probe reads no Secret the
        cache would not hold."""
        try:
            pages = self.client.list_pages(
                resource.api_version,
                resource.plural,
                self.config.namespace,
                label_selector=label_selector,
                limit=1,
            )
            async for _ in pages:
                break
            await pages.aclose()
        except ApiError as err:
            if err.not_found:
                return f"{resource.plural}.{resource.api_version} is not served by the API server"
            if err.status == FORBIDDEN:
                return f"the operator may not list {resource.plural}.{resource.api_version}"
            raise
        return ""

    def _job_handler(self, kc: KindController) -> Callable[[Change], None]:
        def handle(change: Change) -> None:
            obj = change.new or change.old
            assert obj is not None
            meta = obj["metadata"]
            key = job_key(kc.info.kind, meta.get("namespace", ""), meta["name"])
            if change.type == "DELETED":
                self.expectations.delete(key)
                self._pods_timed.discard(meta.get("uid", ""))
                self._plan_cost.pop(key, None)
            kc.queue.add(key)

        return handle

    def _child_handler(self, change: Change) -> None:
        obj = change.new or change.old
        assert obj is not None
        meta = obj["metadata"]
        if self._context_keys and f"{obj.get('apiVersion')}/{obj.get('kind')}" in self._context_keys:
            self._context_changed(f"{obj.get('apiVersion')}/{obj.get('kind')}")
            return
        owner = controller_owner(obj)
        if owner is None:
            return
        if owner.get("kind") == "Job" and owner.get("apiVersion") == "batch/v1":
            # A pod of a batch Job (a launcher run as a Job): the Job's owner is the job. We
            # never created the pod, so no expectation is involved.
            jobs = self.child_informers.get(BATCH_JOB_KEY)
            parent = jobs.store.get(meta.get("namespace"), owner.get("name", "")) if jobs else None
            grand = controller_owner(parent) if parent is not None else None
            kc = self._controller_for(grand)
            if kc is not None and grand is not None:
                self._child_changed(kc, job_key(kc.info.kind, meta.get("namespace", ""), grand["name"]))
            return
        kc = self._controller_for(owner)
        if kc is None:
            return
        key = job_key(kc.info.kind, meta.get("namespace", ""), owner["name"])
        child = child_id(obj.get("kind", ""), meta["name"])
        if change.type == "ADDED":
            self.expectations.creation_observed(key, child)
        elif change.type == "DELETED" or (change.new or {}).get("metadata", {}).get("deletionTimestamp"):
            # Like the Job controller, a deletionTimestamp already counts as the observed delete.
            self.expectations.deletion_observed(key, child)
        self._child_changed(kc, key)

    def _context_changed(self, key: str) -> None:
        """A context object changed (a runtime created late): every job of the kinds reading this
        kind is planned again (level-triggered: a planner that found nothing may now find it)."""
        for kc in self.controllers.values():
            if any(ct.key == key for ct in kc.registration.observe.context):
                for job in kc.informer.store.list():
                    meta = job["metadata"]
                    kc.queue.add(job_key(kc.info.kind, meta.get("namespace", ""), meta["name"]))

    def _child_changed(self, kc: KindController, key: str) -> None:
        """Queue the job of a changed child: at once, or batched when its plans are costly."""
        cost = self._plan_cost.get(key, 0.0)
        if cost < CHILD_BATCH_MIN_PLAN:
            kc.queue.add(key)
        else:
            kc.queue.add_after(key, min(CHILD_BATCH_MAX, CHILD_BATCH_FACTOR * cost))

    def _controller_for(self, owner: JsonDict | None) -> KindController | None:
        """The controller of the job an owner reference names (any served version of its kind)."""
        if owner is None:
            return None
        kc = self.controllers.get(owner.get("kind", ""))
        if kc is None or owner.get("apiVersion") not in kc.registration.owner_api_versions():
            return None
        return kc

    def _selective(self, api_version: str, kind: str) -> bool:
        """Whether a namesake of this kind may hide from the planner (see `Applier._namesake`).
        Not Pods and Services: their 409s are routine cache lag and adoption handles namesakes."""
        ct = self.child_types.get(f"{api_version}/{kind}")
        return ct is not None and ct.label_selector is not None and kind not in ("Pod", "Service")

    def _observable(self, obj: JsonDict) -> bool:
        ct = self.child_types.get(f"{obj.get('apiVersion')}/{obj.get('kind')}")
        if ct is None:
            return False
        return matches(ct.label_selector, (obj.get("metadata") or {}).get("labels"))

    # -- the reconcile -----------------------------------------------------------------------

    def observed_for(self, job: JsonDict, kind: str | None = None) -> Observed:
        """The job's children from the caches: pods by owner uid and job-name label, services by
        label, other kinds by controller owner uid; plus what the kind's observe hints ask for
        (module docstring)."""
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
            elif key == PRIORITY_CLASS.key or key in self._context_keys:
                others[key] = informer.store.list()
                continue
            elif key == SERVICE_KEY:
                services = informer.store.by_index(INDEX_JOB_NAME, f"{ns}/{name}")
                if self._services_by_owner:
                    others[key] = informer.store.by_index(INDEX_OWNER_UID, uid or "") if uid else []
            else:
                others[key] = informer.store.by_index(INDEX_OWNER_UID, uid or "") if uid else []
        reg = self.registrations.get(kind) if kind is not None else None
        hints = reg.observe if reg is not None else None
        if hints is not None and hints.batch_job_pods:
            pods = _merged(pods, self._batch_job_pods(others.get(BATCH_JOB_KEY, ())))
        if hints is not None and hints.namesakes:
            pods = _merged(pods, self._namesakes(POD_KEY, ns, name))
            for key in others:
                if key != PRIORITY_CLASS.key and key not in self._context_keys:
                    others[key] = _merged(others[key], self._namesakes(key, ns, name))
        return Observed(pods=pods, services=services, others=others)

    def _batch_job_pods(self, jobs: Iterable[JsonDict]) -> list[JsonDict]:
        informer = self.child_informers.get(POD_KEY)
        if informer is None:
            return []
        out: list[JsonDict] = []
        for owned in jobs:
            job_uid = (owned.get("metadata") or {}).get("uid")
            if job_uid:
                out.extend(informer.store.by_index(INDEX_OWNER_UID, job_uid))
        return out

    def _namesakes(self, key: str, namespace: str, name: str) -> list[JsonDict]:
        informer = self.child_informers.get(key)
        if informer is None or not namespace:
            return []
        return informer.store.by_index(INDEX_NAME_PREFIX, f"{namespace}/{name}")

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
            self._plan_cost.pop(key, None)
            self.expectations.delete(key)
            kc.queue.forget(key)
            return
        if not self.expectations.satisfied(key):
            # The observing event will enqueue the key; the timer only covers a lost event.
            kc.queue.add_after(key, self.expectations.remaining_ttl(key) + 0.001)
            return
        observed = self.observed_for(job, kc.info.kind)
        started = time.perf_counter()
        try:
            plan = self.planner.plan(job, observed, self._clock(), self.controller_config)
        except Exception as exc:
            log.exception("%s: planner raised", key)
            self.metrics.reconcile_errors.labels(kind=kc.info.kind).inc()
            self._report_planner_error(kc, job, exc)
            kc.queue.add_rate_limited(key)
            return
        finally:
            self._plan_cost[key] = time.perf_counter() - started

        # The job's own patches (e.g. a version annotation), then its status, then the children.
        # Status before any child delete: a plan that finishes a job (cleanPodPolicy deletes) or
        # restarts a pod (a delete, counted in status.kubetrain) must have its status stored before
        # the deletes, or an operator dying in between leaves an unfinished job without its pods
        # (recreated: kubeflow/trainer#1186) or a restart that was never counted.
        own: list[Action] = [a for a in plan.actions if isinstance(a, PatchObject) and _refers_to(a.ref, job)]
        children = [a for a in plan.actions if not (isinstance(a, PatchObject) and _refers_to(a.ref, job))]
        first = await self.applier.apply(key, ns, own)
        self._count_writes(first)
        if first.errors:
            self.metrics.reconcile_errors.labels(kind=kc.info.kind).inc()
            kc.queue.add_rate_limited(key)
            return
        # Write status over the version the job's own patch returned, not the stale cached one.
        base = next((o for o in first.patched if _same_object(o, job)), None)
        if base is not None:
            self._store_if_newer(kc, base)
        if plan.status is None:
            outcome = await self.applier.apply(key, ns, children)
        elif any(isinstance(a, DeleteObject) for a in children):
            if not await self._write_status(kc, key, base or job, plan.status):
                return
            outcome = await self.applier.apply(key, ns, children)
        else:
            # Creates and patches are safe against a crash in either order (a repeat is a 409 or a
            # no-op), so they go out alongside the status write: one round trip less per job start.
            status_written, outcome = await asyncio.gather(
                self._write_status(kc, key, base or job, plan.status),
                self.applier.apply(key, ns, children),
            )
            if not status_written:
                self._count_writes(outcome)
                return
        self._count_writes(outcome)
        source = kc.registration.controller_name_for(job)
        for event in plan.events:
            if event.involved is None:
                involved = {**involved_object(job), "apiVersion": kc.registration.event_api_version(job)}
            else:
                involved = _ref_dict(event.involved)
            self.recorder.record(source, involved, event.type, event.reason, event.message, once=event.once)
        self.metrics.events_dropped.set(self.recorder.dropped)
        self._time_pods_created(kc, job, observed, plan, outcome.errors == [])

        if plan.requeue_after is not None:
            kc.queue.add_after(key, max(0.0, plan.requeue_after))
        if outcome.errors:
            self.metrics.reconcile_errors.labels(kind=kc.info.kind).inc()
            kc.queue.add_rate_limited(key)
            return
        if plan.requeue_now:
            # A one-step-per-pass planner whose next step upstream starts from the watch event
            # of this very write, which our cache deduplicates (see `Plan.requeue_now`).
            kc.queue.add(key)
        for metric in plan.metrics:
            self.metrics.increment(metric)
        if plan.retry:
            # Something the job may not touch blocks it: upstream returns an error and retries
            # with backoff, which also notices the blocker's deletion (it has no owner to
            # enqueue us).
            self.metrics.reconcile_errors.labels(kind=kc.info.kind).inc()
            kc.queue.add_rate_limited(key)
            return
        kc.queue.forget(key)

    def _report_planner_error(self, kc: KindController, job: JsonDict, exc: Exception) -> None:
        """A Warning on the job itself, so a job the operator cannot handle says why (the other
        jobs of the kind go on); the recorder's correlator folds the retries into one event."""
        try:
            involved = {**involved_object(job), "apiVersion": kc.registration.event_api_version(job)}
            message = f"reconcile failed: {type(exc).__name__}: {exc}"[:1024]
            self.recorder.record(
                kc.registration.controller_name_for(job), involved, "Warning", "ReconcileError", message
            )
        except Exception:
            log.exception("cannot report the planner's error on the job")

    def _count_writes(self, outcome: ApplyResult) -> None:
        for (verb, result), n in outcome.writes.items():
            self.metrics.api_writes.labels(verb=verb, result=result).inc(n)

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
        desired = _desired_replicas(job, kc.info) if kc.registration.observe.replica_specs_map else None
        if desired is None or desired == 0:
            return
        created = sum(1 for a in plan.actions if isinstance(a, CreateObject) and a.obj.get("kind") == "Pod")
        live = sum(1 for p in observed.pods if not p["metadata"].get("deletionTimestamp"))
        if live + created < desired:
            return
        born = parse_time(job["metadata"].get("creationTimestamp"))
        self._pods_timed.add(uid)
        if born is not None:
            elapsed = (self._clock() - born).total_seconds()
            self.metrics.create_to_pods.labels(kind=kc.info.kind).observe(max(0.0, elapsed))


def _desired_replicas(job: JsonDict, info: KindSpec) -> int | None:
    """Pods the job's replica specs ask for; None when the field is not a map of replica specs."""
    field = getattr(info, "replica_specs_field", None)
    specs = (job.get("spec") or {}).get(field) if field else None
    if not isinstance(specs, dict):
        return None
    total = 0
    for rspec in specs.values():
        if rspec is not None and not isinstance(rspec, dict):
            return None
        replicas = (rspec or {}).get("replicas")
        if replicas is not None and not isinstance(replicas, int):
            return None
        total += 1 if replicas is None else int(replicas)
    return total


def _merged(first: Sequence[JsonDict], more: Iterable[JsonDict]) -> list[JsonDict]:
    """`first` then the objects of `more` not already in it (cache entries are shared dicts)."""
    seen = {id(o) for o in first}
    out = list(first)
    for obj in more:
        if id(obj) not in seen:
            seen.add(id(obj))
            out.append(obj)
    return out


def _refers_to(ref: ObjectRef, job: JsonDict) -> bool:
    meta = job.get("metadata") or {}
    return (
        ref.kind == job.get("kind")
        and ref.namespace == meta.get("namespace")
        and ref.name == meta.get("name")
    )


def _same_object(obj: JsonDict, job: JsonDict) -> bool:
    a, b = obj.get("metadata") or {}, job.get("metadata") or {}
    return bool(
        obj.get("kind") == job.get("kind")
        and a.get("namespace") == b.get("namespace")
        and a.get("name") == b.get("name")
        and (not a.get("uid") or not b.get("uid") or a.get("uid") == b.get("uid"))
    )


def _depth_of(queue: WorkQueue[str]) -> Callable[[], float]:
    return lambda: float(len(queue))


def _ref_dict(ref: Any) -> JsonDict:
    out = {"apiVersion": ref.api_version, "kind": ref.kind, "namespace": ref.namespace, "name": ref.name}
    if ref.uid:
        out["uid"] = ref.uid
    return out
