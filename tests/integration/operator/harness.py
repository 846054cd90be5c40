"""End-to-end harness: the embedded API server, the real operator over HTTP, and a test kubelet.

Everything the operator does goes through HTTP: it gets its `KubeClient` from a kubeconfig file
written by the server, exactly as it would on a cluster. The test reaches the server over HTTP too
(its own `KubeClient`), and plays the kubelet through pods/status with `KubeletSim`.

    async with Cluster.start() as c:
        await c.create(job("PyTorchJob", "demo").replicas("Master", 1).replicas("Worker", 2))
        await c.wait_pods("demo", 3)
        await c.kubelet.run_all("demo")
        await c.wait_conditions("PyTorchJob", "demo", [...])

The operator can be stopped gracefully (`Operator.stop`) or killed (`Operator.kill`: every task of
that incarnation is cancelled where it stands, its connections dropped, nothing drained), then
started again on the same server. Tasks are attributed to an incarnation with a context variable
and a task factory, so the killer never touches the test's own tasks or the server's.

The module lives at a path without `__init__.py` files (a package named `operator` would shadow
the standard library), so it is imported as `tests.integration.operator.harness`.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import tempfile
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml
from prometheus_client import CollectorRegistry

from kubetrain.api import crds
from kubetrain.embedded.apiserver import EmbeddedAPIServer
from kubetrain.embedded.apiserver.store import Event as StoreEvent
from kubetrain.kinds.registry import REPLICA_SPEC_KINDS as KINDS
from kubetrain.runtime import ApiError, KubeClient, Manager, RuntimeConfig
from kubetrain.runtime.crds import install_crds
from tests.builders import JobBuilder, job
from tests.kubelet_sim import KubeletError, KubeletSim

log = logging.getLogger(__name__)

JsonDict = dict[str, Any]
Condition = tuple[str, str, str, str]
"""(type, status, reason, message): what upstream's tests compare, in order."""
T = TypeVar("T")

NAMESPACE = "default"
API_VERSION = "kubeflow.org/v1"
JOB_NAME_LABEL = "training.kubeflow.org/job-name"
REPLICA_TYPE_LABEL = "training.kubeflow.org/replica-type"
REPLICA_INDEX_LABEL = "training.kubeflow.org/replica-index"

DEFAULT_TIMEOUT = 10.0


# ---- waiting ------------------------------------------------------------------------------------


async def wait_for(
    predicate: Callable[[], Any],
    timeout: float = DEFAULT_TIMEOUT,
    *,
    interval: float = 0.02,
    message: str | Callable[[], str] = "condition not reached",
) -> Any:
    """Poll `predicate` (sync or async) until it returns something truthy; return that value.

    On timeout the assertion names what was awaited and, if `message` is callable, what was seen.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = predicate()
        if asyncio.iscoroutine(value) or isinstance(value, asyncio.Future):
            value = await value
        if value:
            return value
        if loop.time() >= deadline:
            text = message() if callable(message) else message
            raise AssertionError(f"timed out after {timeout:.1f}s: {text}")
        await asyncio.sleep(interval)


# ---- jobs (jobset-style builders) ---------------------------------------------------------------


@dataclass(frozen=True)
class KindCase:
    """A kind's smallest interesting job and the texts its status rule writes
    (docs/upstream-behaviour.md#status-rules)."""

    kind: str
    replica_types: tuple[str, ...]
    running_message: str
    succeeded_message: str

    def running(self, name: str, namespace: str = NAMESPACE) -> str:
        return self.running_message.format(kind=self.kind, name=name, key=f"{namespace}/{name}")

    def succeeded(self, name: str, namespace: str = NAMESPACE) -> str:
        return self.succeeded_message.format(kind=self.kind, name=name, key=f"{namespace}/{name}")


_MASTER_RULE = ("{kind} {name} is running.", "{kind} {name} is successfully completed.")
_KEYED_RULE = ("{kind} {key} is running.", "{kind} {key} successfully completed.")

KIND_CASES: dict[str, KindCase] = {
    c.kind: c
    for c in (
        KindCase("TFJob", ("PS", "Worker"), *_KEYED_RULE),
        KindCase("PyTorchJob", ("Master", "Worker"), *_MASTER_RULE),
        KindCase("XGBoostJob", ("Master", "Worker"), *_MASTER_RULE),
        KindCase("PaddleJob", ("Master", "Worker"), *_MASTER_RULE),
        KindCase("JAXJob", ("Worker",), *_KEYED_RULE),
        KindCase("MXJob", ("Scheduler", "Server", "Worker"), *_MASTER_RULE),
    )
}


def default_job(kind: str, name: str, replicas: int = 1, **kw: Any) -> JobBuilder:
    """The kind's usual replica types, `replicas` each (singleton roles stay at 1)."""
    builder = job(kind, name)
    for rtype in KIND_CASES[kind].replica_types:
        builder.replicas(rtype, replicas if rtype == "Worker" else 1, **kw)
    return builder


def conditions(obj: JsonDict | None) -> list[Condition]:
    status = (obj or {}).get("status") or {}
    return [
        (c.get("type", ""), c.get("status", ""), c.get("reason", ""), c.get("message", ""))
        for c in status.get("conditions") or ()
    ]


def condition_types(obj: JsonDict | None) -> list[tuple[str, str]]:
    return [(t, s) for t, s, _, _ in conditions(obj)]


def last_condition(obj: JsonDict | None) -> Condition | None:
    found = conditions(obj)
    return found[-1] if found else None


def is_finished(obj: JsonDict | None) -> bool:
    return any(t in ("Succeeded", "Failed") and s == "True" for t, s, _, _ in conditions(obj))


def crd_manifests() -> list[JsonDict]:
    return [yaml.safe_load(text) for text in crds.generate(KINDS.values()).values()]


# ---- the operator, killable ---------------------------------------------------------------------


_INCARNATION: contextvars.ContextVar[weakref.WeakSet[asyncio.Task[Any]] | None] = contextvars.ContextVar(
    "kubetrain_test_incarnation", default=None
)


def _tracking_task_factory(
    loop: asyncio.AbstractEventLoop,
    coro: Coroutine[Any, Any, Any] | Generator[Any, None, Any],
    context: contextvars.Context | None = None,
) -> asyncio.Task[Any]:
    """Every task remembers which operator incarnation (if any) created it, transitively."""
    task: asyncio.Task[Any] = asyncio.Task(coro, loop=loop, context=context)
    tasks = context.get(_INCARNATION) if context is not None else _INCARNATION.get()
    if tasks is not None:
        tasks.add(task)
    return task


@contextlib.contextmanager
def task_tracking() -> Generator[None, None, None]:
    loop = asyncio.get_running_loop()
    previous = loop.get_task_factory()
    loop.set_task_factory(_tracking_task_factory)
    try:
        yield
    finally:
        loop.set_task_factory(previous)


class Operator:
    """The real Manager, reaching the server only through a kubeconfig; restartable and killable."""

    def __init__(self, kubeconfig: Path, config: RuntimeConfig | None = None) -> None:
        self.kubeconfig = kubeconfig
        self.config = config or RuntimeConfig(workers=4)
        self.manager: Manager | None = None
        self.client: KubeClient | None = None
        self.incarnations = 0
        self.kills = 0
        self._tasks: weakref.WeakSet[asyncio.Task[Any]] = weakref.WeakSet()

    @property
    def running(self) -> bool:
        return self.manager is not None

    async def start(self) -> Manager:
        assert self.manager is None, "already running"
        self.incarnations += 1
        self._tasks = weakref.WeakSet()
        ctx = contextvars.copy_context()
        ctx.run(_INCARNATION.set, self._tasks)
        boot = asyncio.get_running_loop().create_task(self._boot(), context=ctx)
        self._tasks.add(boot)
        self.manager = await boot
        return self.manager

    async def _boot(self) -> Manager:
        # qps=0: the server under test is local; throttling only slows the tests.
        self.client = await KubeClient.from_kubeconfig(str(self.kubeconfig), qps=0, backoff_base=0.02)
        mgr = Manager(
            self.client,
            self.config,
            registry=CollectorRegistry(),
            crd_manifests=crd_manifests() if self.config.install_crds else None,
        )
        await mgr.start()
        return mgr

    async def stop(self) -> None:
        """Graceful: drain in-flight reconciles, stop informers and the event recorder."""
        if self.manager is not None:
            await self.manager.stop(drain_timeout=5.0)
        await self._close()

    def cancel_now(self) -> list[asyncio.Task[Any]]:
        """Cancel every task of this incarnation where it stands (safe to call from a callback:
        none of them runs another step). `kill()` then reaps them."""
        tasks = [t for t in list(self._tasks) if not t.done()]
        for task in tasks:
            task.cancel()
        return tasks

    async def kill(self) -> None:
        """Hard: cancel every task of this incarnation wherever it is, drop its connections."""
        tasks = self.cancel_now()
        if tasks:
            await asyncio.wait(tasks, timeout=5.0)
        self.kills += 1
        await self._close()

    async def _close(self) -> None:
        if self.client is not None:
            await self.client.close()
        self.client = None
        self.manager = None

    @property
    def requests(self) -> int:
        """API requests made by the current incarnation (a progress clock for random kills)."""
        return self.client.requests_total if self.client is not None else 0


# ---- the kubelet --------------------------------------------------------------------------------


class Kubelet:
    """Plays the kubelet through pods/status; pod names are `<job>-<type>-<index>`."""

    def __init__(self, sim: KubeletSim, cluster: Cluster, namespace: str = NAMESPACE) -> None:
        self.sim = sim
        self.cluster = cluster
        self.namespace = namespace

    async def running(self, name: str, restart_count: int = 0) -> JsonDict:
        return await self.sim.running(self.namespace, name, restart_count=restart_count)

    async def succeeded(self, name: str) -> JsonDict:
        return await self.sim.succeeded(self.namespace, name)

    async def failed(self, name: str, exit_code: int = 1, reason: str = "Error") -> JsonDict:
        return await self.sim.failed(self.namespace, name, exit_code=exit_code, reason=reason)

    async def run_all(self, job_name: str) -> list[str]:
        names = sorted(await self.cluster.pod_names(job_name))
        await asyncio.gather(*(self.running(n) for n in names))
        return names

    async def succeed_all(self, job_name: str) -> list[str]:
        names = sorted(await self.cluster.pod_names(job_name))
        await asyncio.gather(*(self.succeeded(n) for n in names))
        return names


# ---- an audit of pod creations ------------------------------------------------------------------


@dataclass
class PodAudit:
    """Every pod ADDED, by name: the uids in creation order."""

    created: dict[str, list[str]] = field(default_factory=dict)

    def added(self, pod: JsonDict) -> None:
        meta = pod.get("metadata") or {}
        uids = self.created.setdefault(meta.get("name", ""), [])
        uid = meta.get("uid", "")
        if uid not in uids:
            uids.append(uid)

    def on_store_event(self, ev: StoreEvent) -> None:
        """Ground truth from inside the server (for tests that break every watch on purpose)."""
        if ev.type == "ADDED" and ev.obj.get("kind") == "Pod":
            self.added(ev.obj)

    def count(self, name: str) -> int:
        return len(self.created.get(name, ()))

    def of_job(self, job_name: str) -> dict[str, int]:
        prefix = f"{job_name}-"
        return {n: len(u) for n, u in self.created.items() if n.startswith(prefix)}

    async def follow(self, cluster: Cluster, namespace: str | None = None) -> None:
        """Start following pod ADDED events over HTTP; every pod created after this returns is seen.

        The list is awaited here, not in the background task: a listing that lands after the
        first creates (its request met an injected fault and was retried) would miss them.
        """
        _, rv = await cluster.client.list("v1", "Pod", namespace, limit=1)
        cluster.spawn(self._watch(cluster.client, namespace, rv))

    async def _watch(self, client: KubeClient, namespace: str | None, rv: str) -> None:
        """Watch from `rv`, resuming on breaks."""
        while True:
            try:
                async for event in client.watch("v1", "pods", namespace, resource_version=rv):
                    obj = event.get("object") or {}
                    if event.get("type") == "ERROR":
                        raise AssertionError(f"audit watch failed: {obj}")
                    rv = (obj.get("metadata") or {}).get("resourceVersion") or rv
                    if event.get("type") == "ADDED":
                        self.added(obj)
            except ApiError as err:
                if err.gone:
                    raise AssertionError("audit watch lost history; use on_store_event instead") from err
                await asyncio.sleep(0.05)


# ---- condition history ---------------------------------------------------------------------------


@dataclass
class ConditionHistory:
    """Every distinct condition list a kind's jobs went through, as a watch saw them.

    Some states are transient by design (Restarting is replaced by Running as soon as another
    replica still runs), so a poll can miss them; a watch sees every status write.
    """

    seen: dict[str, list[list[Condition]]] = field(default_factory=dict)

    def record(self, obj: JsonDict) -> None:
        name = (obj.get("metadata") or {}).get("name", "")
        lists = self.seen.setdefault(name, [])
        current = conditions(obj)
        if not lists or lists[-1] != current:
            lists.append(current)

    def of(self, name: str) -> list[list[Condition]]:
        return list(self.seen.get(name, ()))

    async def follow(self, client: KubeClient, kind: str, rv: str, namespace: str = NAMESPACE) -> None:
        """Watch from `rv` (taken before the jobs of interest were created: nothing is missed)."""
        plural = KINDS[kind].plural
        while True:
            try:
                async for event in client.watch(API_VERSION, plural, namespace, resource_version=rv):
                    obj = event.get("object") or {}
                    rv = (obj.get("metadata") or {}).get("resourceVersion") or rv
                    if event.get("type") in ("ADDED", "MODIFIED"):
                        self.record(obj)
            except ApiError as err:
                if err.gone:
                    _, rv = await client.list(API_VERSION, plural, namespace, limit=1)
                await asyncio.sleep(0.05)


# ---- the cluster --------------------------------------------------------------------------------


class Cluster:
    """One embedded API server, one (restartable) operator, one kubelet, one test client."""

    def __init__(self, server: EmbeddedAPIServer, client: KubeClient, operator: Operator, workdir: Path):
        self.server = server
        self.client = client
        self.operator = operator
        self.workdir = workdir
        self.kubelet = Kubelet(
            KubeletSim(server.url, token=server.token, ssl_context=server.client_ssl_context()), self
        )
        self._background: list[asyncio.Task[None]] = []

    def spawn(self, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """A helper task (watchers, drivers) cancelled when the cluster shuts down."""
        task = asyncio.get_running_loop().create_task(coro)
        self._background.append(task)
        return task

    async def history(self, kind: str) -> ConditionHistory:
        """Start recording the condition lists of `kind`'s jobs (call before creating them)."""
        hist = ConditionHistory()
        plural = KINDS[kind].plural
        _, rv = await self.client.list(API_VERSION, plural, NAMESPACE, limit=1)
        self.spawn(hist.follow(self.client, kind, rv))
        return hist

    @classmethod
    @contextlib.asynccontextmanager
    async def start(
        cls,
        config: RuntimeConfig | None = None,
        *,
        bookmark_interval: float = 0.5,
        start_operator: bool = True,
    ) -> AsyncIterator[Cluster]:
        with task_tracking(), tempfile.TemporaryDirectory(prefix="kubetrain-op-") as tmp:
            server = EmbeddedAPIServer(bookmark_interval=bookmark_interval)
            await server.start()
            workdir = Path(tmp)
            kubeconfig = server.write_kubeconfig(workdir / "kubeconfig")
            client = KubeClient.for_url(server.url, server.token, server.ca_file, qps=0, backoff_base=0.02)
            cfg = config or RuntimeConfig(workers=4)
            operator = Operator(kubeconfig, cfg)
            cluster = cls(server, client, operator, workdir)
            try:
                if not cfg.install_crds:
                    # Installed once, as a cluster admin would; each incarnation finds them.
                    await install_crds(client, crd_manifests())
                if start_operator:
                    await operator.start()
                yield cluster
            finally:
                for task in cluster._background:
                    task.cancel()
                await asyncio.gather(*cluster._background, return_exceptions=True)
                if operator.running:
                    await operator.stop()
                await cluster.kubelet.sim.close()
                await client.close()
                await server.stop()

    # -- jobs ------------------------------------------------------------------------------------

    async def create(self, builder: JobBuilder | JsonDict) -> JsonDict:
        obj = builder.build() if isinstance(builder, JobBuilder) else builder
        return await self.client.create(obj)

    async def get_job(self, kind: str, name: str) -> JsonDict | None:
        try:
            return await self.client.get(API_VERSION, kind, NAMESPACE, name)
        except ApiError as err:
            if err.not_found:
                return None
            raise

    async def patch_job(
        self, kind: str, name: str, patch: JsonDict, subresource: str | None = None
    ) -> JsonDict:
        return await self.client.merge_patch(
            API_VERSION, kind, NAMESPACE, name, patch, subresource=subresource
        )

    async def set_replicas(self, kind: str, name: str, rtype: str, replicas: int) -> JsonDict:
        field_name = KINDS[kind].replica_specs_field
        return await self.patch_job(kind, name, {"spec": {field_name: {rtype: {"replicas": replicas}}}})

    async def wait_job(
        self, kind: str, name: str, predicate: Callable[[JsonDict], bool], timeout: float = DEFAULT_TIMEOUT
    ) -> JsonDict:
        seen: list[JsonDict | None] = [None]

        async def check() -> JsonDict | None:
            seen[0] = await self.get_job(kind, name)
            return seen[0] if seen[0] is not None and predicate(seen[0]) else None

        return await wait_for(check, timeout, message=lambda: f"{kind} {name}: {conditions(seen[0])}")

    async def wait_conditions(
        self, kind: str, name: str, expected: list[Condition], timeout: float = DEFAULT_TIMEOUT
    ) -> JsonDict:
        """Wait until the job's condition list is exactly `expected` (types, statuses, reasons, texts)."""
        return await self.wait_job(kind, name, lambda j: conditions(j) == expected, timeout)

    async def wait_last_condition(
        self, kind: str, name: str, ctype: str, status: str = "True", timeout: float = DEFAULT_TIMEOUT
    ) -> JsonDict:
        def last_is(j: JsonDict) -> bool:
            last = last_condition(j)
            return last is not None and last[0:2] == (ctype, status)

        return await self.wait_job(kind, name, last_is, timeout)

    async def wait_gone(self, kind: str, name: str, timeout: float = DEFAULT_TIMEOUT) -> None:
        async def gone() -> bool:
            return await self.get_job(kind, name) is None

        await wait_for(gone, timeout, message=f"{kind} {name} still exists")

    # -- children --------------------------------------------------------------------------------

    async def pods(self, job_name: str) -> dict[str, JsonDict]:
        items, _ = await self.client.list(
            "v1", "Pod", NAMESPACE, label_selector=f"{JOB_NAME_LABEL}={job_name}"
        )
        return {p["metadata"]["name"]: p for p in items}

    async def pod_names(self, job_name: str, *, live_only: bool = True) -> set[str]:
        return {
            n
            for n, p in (await self.pods(job_name)).items()
            if not (live_only and p["metadata"].get("deletionTimestamp"))
        }

    async def services(self, job_name: str) -> set[str]:
        items, _ = await self.client.list(
            "v1", "Service", NAMESPACE, label_selector=f"{JOB_NAME_LABEL}={job_name}"
        )
        return {s["metadata"]["name"] for s in items}

    async def wait_children(self, job_name: str, names: set[str], timeout: float = DEFAULT_TIMEOUT) -> None:
        """Wait until the job's live pods and its services are exactly `names`."""
        seen: list[tuple[set[str], set[str]]] = [(set(), set())]

        async def check() -> bool:
            seen[0] = (await self.pod_names(job_name), await self.services(job_name))
            return seen[0] == (names, names)

        await wait_for(
            check, timeout, message=lambda: f"pods/services of {job_name}: {seen[0]}, want {names}"
        )

    async def wait_pod_replaced(self, name: str, old_uid: str, timeout: float = DEFAULT_TIMEOUT) -> JsonDict:
        """Wait until a pod of that name exists with another uid (deleted and recreated)."""

        async def check() -> JsonDict | None:
            try:
                pod = await self.client.get("v1", "Pod", NAMESPACE, name)
            except ApiError as err:
                if err.not_found:
                    return None
                raise
            return pod if pod["metadata"]["uid"] != old_uid else None

        return await wait_for(check, timeout, message=f"pod {name} not recreated")

    async def pod_uid(self, name: str) -> str:
        return str((await self.client.get("v1", "Pod", NAMESPACE, name))["metadata"]["uid"])

    # -- events ----------------------------------------------------------------------------------

    async def events(self, involved_name: str | None = None) -> list[tuple[str, str, str]]:
        items, _ = await self.client.list("v1", "Event", NAMESPACE)
        return [
            (e.get("type", ""), e.get("reason", ""), e.get("message", ""))
            for e in items
            if involved_name is None or (e.get("involvedObject") or {}).get("name") == involved_name
        ]

    async def wait_events(
        self, involved_name: str, wanted: list[tuple[str, str, str]], timeout: float = DEFAULT_TIMEOUT
    ) -> list[tuple[str, str, str]]:
        """Wait until every (type, reason, message) in `wanted` was recorded for the object."""
        seen: list[list[tuple[str, str, str]]] = [[]]

        async def check() -> bool:
            seen[0] = await self.events(involved_name)
            return all(w in seen[0] for w in wanted)

        await wait_for(check, timeout, message=lambda: f"missing {[w for w in wanted if w not in seen[0]]}")
        return seen[0]


async def drive_safely(coro: Awaitable[T]) -> T | None:
    """Run a kubelet write whose pod may legitimately be gone already (deleted by the operator)."""
    try:
        return await coro
    except KubeletError as err:
        if "404" in str(err):
            return None
        raise
