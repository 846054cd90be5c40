"""`AsyncClient`: the job verbs over the Kubernetes API, for asyncio code and the CLI.

Talks only the Kubernetes REST API (through `kubetrain.runtime.transport.KubeClient`), so the
same client works against `kubetrain up`, the plane `kubetrain run` starts in-process, and any
real cluster running the operator. Every API failure leaves as a `KubetrainError` subclass with a
message a user can act on; no `ApiError` or aiohttp exception escapes.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

import aiohttp

from kubetrain.api.kinds import KindInfo
from kubetrain.client import jobstate
from kubetrain.client.describe import render_describe
from kubetrain.client.diagnosis import pod_findings
from kubetrain.client.errors import (
    AlreadyExists,
    ApiFailure,
    ConfigError,
    JobStuck,
    KubetrainError,
    NotFound,
    Unreachable,
    WaitTimeout,
)
from kubetrain.client.kinds import all_kinds, pod_selector, resolve_kind
from kubetrain.client.kubeconfig import resolve
from kubetrain.client.logstream import stream_pod_log
from kubetrain.client.source import JobSource, load_one
from kubetrain.kube.errors import ApiError
from kubetrain.kube.tasks import cancel_and_wait
from kubetrain.runtime.transport import KubeClient

JsonDict = dict[str, Any]
JsonList = list[JsonDict]
FOREGROUND = "Foreground"
BACKGROUND = "Background"
APPLY_PATCH = "application/apply-patch+yaml"
LISTED, SYNCED = "LISTED", "SYNCED"
"""`watch_jobs`' events before the changes: a job of the first list, then the end of that list."""
APPLY_MANAGER = "kubetrain"
"""The field manager of `kubetrain apply` (kubectl's is `kubectl`)."""


def api_failure(err: ApiError, what: str = "", namespace: str = "") -> KubetrainError:
    """Map a transport error to a client error; `what` is e.g. `pytorchjob "x"`."""
    if err.connection_error:
        return Unreachable(
            f"cannot reach the API server: {err.message or err.reason} "
            "(is `kubetrain up` running, and is KUBECONFIG/--kubeconfig right?)"
        )
    if err.not_found and what:
        where = f' in namespace "{namespace}"' if namespace else ""
        return NotFound(f"{what} not found{where}", err.status, err.reason)
    if err.already_exists:
        return AlreadyExists(err.message or f"{what} already exists", err.status, err.reason)
    if err.status in (401, 403):
        # An admission webhook's denial is a 403 too; it is about the object, not who sent it.
        hint = (
            ""
            if err.message.startswith("admission webhook")
            else " (check the credentials of your kubeconfig context)"
        )
        return ApiFailure(
            f"the API server refused the request ({err.status} {err.reason}): {err.message}{hint}",
            err.status,
            err.reason,
        )
    text = err.message or err.reason or f"HTTP {err.status}"
    return ApiFailure(f"API error {err.status} {err.reason}: {text}".rstrip(": "), err.status, err.reason)


def _what_apply_sets(job: JsonDict) -> tuple[object, ...]:
    """What an apply of a job can change: its spec (generation counts the changes), labels and
    annotations; not its status, which the operator writes all the time."""
    meta = job.get("metadata") or {}
    return meta.get("generation"), meta.get("labels"), meta.get("annotations")


class AsyncClient:
    """Job verbs for one namespace. Use `await AsyncClient.connect(...)` or wrap a KubeClient.

    `delete` uses Foreground propagation by default: the job stays visible (with a
    deletionTimestamp) until the garbage collector has removed its pods, so "the job is gone"
    means "its processes are gone" — what Ctrl-C in `kubetrain run` and scripts that delete and
    re-create a job of the same name need. Pass `propagation="Background"` for kubectl's default.
    """

    def __init__(self, kube: KubeClient, namespace: str = "default") -> None:
        self.kube = kube
        self.namespace = namespace

    @classmethod
    async def connect(
        cls,
        kubeconfig: str | os.PathLike[str] | None = None,
        context: str | None = None,
        namespace: str | None = None,
    ) -> AsyncClient:
        """From a kubeconfig (default $KUBECONFIG, then ~/.kube/config) and its current context."""
        target = resolve(kubeconfig, context, namespace)
        try:
            kube = await KubeClient.from_kubeconfig(target.path, target.context, max_attempts=3)
        except Exception as exc:  # kubernetes_asyncio raises ConfigException, ValueError, OSError...
            raise ConfigError(
                f"cannot load context {target.context!r} of kubeconfig {target.path}: {exc}"
            ) from None
        return cls(kube, target.namespace)

    @classmethod
    def for_url(
        cls, url: str, namespace: str = "default", token: str | None = None, ca_file: str | None = None
    ) -> AsyncClient:
        """A client for `url` with a bearer token and the CA to trust (the in-process embedded plane)."""
        return cls(KubeClient.for_url(url, token, ca_file, qps=0, max_attempts=3), namespace)

    def in_namespace(self, namespace: str) -> AsyncClient:
        """The same connection, for another namespace (closing either closes both)."""
        return AsyncClient(self.kube, namespace)

    async def close(self) -> None:
        await self.kube.close()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- jobs --------------------------------------------------------------------------------

    async def create(self, job: JobSource, namespace: str | None = None) -> JsonDict:
        """Validate locally (raises `ValidationError`), then create; returns the stored job."""
        loaded = load_one(job)
        raw = loaded.raw
        info = resolve_kind(loaded.kind)
        ns = (raw.get("metadata") or {}).get("namespace") or namespace or self.namespace
        what = f'{info.singular} "{loaded.name}"'
        try:
            return await self.kube.create(raw, namespace=ns)
        except ApiError as err:
            if err.already_exists:
                raise AlreadyExists(
                    f'{what} already exists in namespace "{ns}" (delete it first: '
                    f"kubetrain delete {info.singular} {loaded.name})",
                    err.status,
                ) from None
            raise api_failure(err, what, ns) from None

    async def apply(
        self, job: JobSource, namespace: str | None = None, *, force_conflicts: bool = False
    ) -> tuple[JsonDict, str]:
        """Validate locally, then server-side apply (field manager `kubetrain`, as `kubectl apply
        --server-side`): creates the job or updates the fields this manager set. Returns the stored
        job and what happened: `created`, `configured` or `unchanged`, in kubectl's words."""
        loaded = load_one(job)
        raw = loaded.raw
        info = resolve_kind(loaded.kind)
        ns = (raw.get("metadata") or {}).get("namespace") or namespace or self.namespace
        what = f'{info.singular} "{loaded.name}"'
        path = self.kube.resource(info.api_version, info.plural).path(ns, loaded.name)
        try:
            before = await self.kube.request("GET", path)
        except ApiError as err:
            if not err.not_found:
                raise api_failure(err, what, ns) from None
            before = None
        query = [("fieldManager", APPLY_MANAGER), ("fieldValidation", "Strict")]
        if force_conflicts:
            query.append(("force", "true"))
        try:
            stored = await self.kube.request("PATCH", path, query=query, body=raw, content_type=APPLY_PATCH)
        except ApiError as err:
            if err.status == 409 and not force_conflicts:
                raise ApiFailure(
                    f"{what}: {err.message} (another field manager owns these fields; "
                    "--force-conflicts takes them over)",
                    err.status,
                    err.reason,
                ) from None
            raise api_failure(err, what, ns) from None
        if before is None:
            return stored, "created"
        return stored, "unchanged" if _what_apply_sets(before) == _what_apply_sets(stored) else "configured"

    async def get(self, kind: str, name: str) -> JsonDict:
        info = resolve_kind(kind)
        try:
            return await self.kube.get(info.api_version, info.plural, self.namespace, name)
        except ApiError as err:
            raise api_failure(err, f'{info.singular} "{name}"', self.namespace) from None

    async def list(
        self, kind: str | None = None, *, all_namespaces: bool = False, selector: str | None = None
    ) -> JsonList:
        """Jobs of one kind, or of every kubeflow kind (kinds whose CRD is missing are skipped);
        in this namespace or all (`all_namespaces`), matching a label `selector` if given."""
        infos = [resolve_kind(kind)] if kind else all_kinds()
        namespace = None if all_namespaces else self.namespace
        results = await asyncio.gather(
            *(self._list_kind(i, kind is None, namespace, selector) for i in infos)
        )
        return [job for jobs, _ in results for job in jobs]

    async def watch_jobs(
        self, kind: str | None = None, *, all_namespaces: bool = False, selector: str | None = None
    ) -> AsyncIterator[tuple[str, JsonDict]]:
        """`(event, job)`: first `LISTED` for each job `list` returns, then one `SYNCED` (job `{}`),
        then `ADDED`/`MODIFIED`/`DELETED` for every change, until cancelled.

        One watch per kind from its list's resourceVersion, resumed after a dropped connection and
        relisted after `410 Gone` (the relisted jobs come as `MODIFIED`), so a long `kubetrain get
        -w` misses no change.
        """
        infos = [resolve_kind(kind)] if kind else all_kinds()
        namespace = None if all_namespaces else self.namespace
        queue: asyncio.Queue[tuple[str, JsonDict] | BaseException] = asyncio.Queue()

        async def feed(info: KindInfo) -> None:
            try:
                await self._watch_kind(info, kind is None, namespace, selector, queue)
            except BaseException as exc:  # the consumer re-raises it
                queue.put_nowait(exc)

        tasks = [asyncio.create_task(feed(info)) for info in infos]
        unsynced = len(infos)
        try:
            while True:
                item = await queue.get()
                if isinstance(item, BaseException):
                    raise item
                if item[0] == SYNCED:
                    unsynced -= 1
                    if unsynced:
                        continue
                yield item
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _watch_kind(
        self,
        info: KindInfo,
        tolerate_missing: bool,
        namespace: str | None,
        selector: str | None,
        queue: asyncio.Queue[tuple[str, JsonDict] | BaseException],
    ) -> None:
        items, rv = await self._list_kind(info, tolerate_missing, namespace, selector)
        for item in items:
            queue.put_nowait((LISTED, item))
        queue.put_nowait((SYNCED, {}))
        while rv is not None:
            try:
                async for event in self.kube.watch(
                    info.api_version,
                    info.plural,
                    namespace,
                    resource_version=rv,
                    label_selector=selector,
                    timeout_seconds=300,
                ):
                    etype, obj = str(event.get("type")), event.get("object") or {}
                    if etype == "ERROR":  # 410 Gone: what we missed is in a new list
                        items, rv = await self._list_kind(info, tolerate_missing, namespace, selector)
                        for item in items:
                            queue.put_nowait(("MODIFIED", item))
                        break
                    rv = (obj.get("metadata") or {}).get("resourceVersion") or rv
                    if etype in ("ADDED", "MODIFIED", "DELETED"):
                        obj.setdefault("kind", info.kind)
                        obj.setdefault("apiVersion", info.api_version)
                        queue.put_nowait((etype, obj))
            except ApiError as err:
                if not err.connection_error:
                    raise api_failure(err) from None
                await asyncio.sleep(0.5)

    async def _list_kind(
        self, info: KindInfo, tolerate_missing: bool, namespace: str | None, selector: str | None = None
    ) -> tuple[JsonList, str | None]:
        """The jobs and the list's resourceVersion (None when the kind is not served)."""
        try:
            items, rv = await self.kube.list(
                info.api_version, info.plural, namespace, label_selector=selector
            )
        except ApiError as err:
            if err.not_found and tolerate_missing:
                return [], None
            if err.not_found:
                raise NotFound(
                    f"the server does not serve {info.plural}.{info.group} (is the CRD "
                    "installed? `kubetrain crds --print | kubectl apply -f -`)",
                    404,
                ) from None
            raise api_failure(err) from None
        for item in items:  # list items carry no kind/apiVersion on the wire
            item.setdefault("kind", info.kind)
            item.setdefault("apiVersion", info.api_version)
        key = lambda j: (str(j["metadata"].get("namespace", "")), str(j["metadata"].get("name", "")))  # noqa: E731
        return sorted(items, key=key), rv

    async def delete(self, kind: str, name: str, propagation: str = FOREGROUND) -> JsonDict:
        info = resolve_kind(kind)
        try:
            return await self.kube.delete(
                info.api_version, info.plural, self.namespace, name, propagation_policy=propagation
            )
        except ApiError as err:
            raise api_failure(err, f'{info.singular} "{name}"', self.namespace) from None

    async def wait_deleted(self, kind: str, name: str, timeout: float | None = None) -> None:
        """Until the job object is gone (with Foreground deletion: until its pods are gone too)."""

        async def gone() -> None:
            while True:
                try:
                    await self.get(kind, name)
                except NotFound:
                    return
                await asyncio.sleep(0.1)

        try:
            await asyncio.wait_for(gone(), timeout)
        except TimeoutError:
            singular = resolve_kind(kind).singular
            raise WaitTimeout(f'{singular} "{name}" still exists after {timeout:g}s') from None

    async def watch_job(self, kind: str, name: str) -> AsyncIterator[JsonDict]:
        """The job now, then every new version of it; ends with NotFound when it is deleted."""
        info = resolve_kind(kind)
        while True:
            job = await self.get(kind, name)
            yield job
            rv = job["metadata"].get("resourceVersion")
            try:
                async for event in self.kube.watch(
                    info.api_version,
                    info.plural,
                    self.namespace,
                    resource_version=rv,
                    field_selector=f"metadata.name={name}",
                    timeout_seconds=300,
                ):
                    etype, obj = event.get("type"), event.get("object") or {}
                    if etype == "DELETED":
                        raise NotFound(f'{info.singular} "{name}" was deleted', 404)
                    if etype in ("ADDED", "MODIFIED"):
                        yield obj
                    elif etype == "ERROR":
                        break  # 410 Gone and friends: re-get and watch again
            except ApiError as err:
                if not err.connection_error:
                    raise api_failure(err, f'{info.singular} "{name}"', self.namespace) from None
                await asyncio.sleep(0.5)

    async def wait(
        self,
        kind: str,
        name: str,
        for_: Sequence[str] = jobstate.FINISHED,
        timeout: float | None = None,
        *,
        fail_when_stuck: bool = True,
    ) -> JsonDict:
        """Block until one of the conditions in `for_` is True; returns the job at that moment.

        Raises `JobStuck` as soon as a pod of the job shows it cannot make progress (see
        `client.diagnosis`), unless `fail_when_stuck` is False: then only `timeout` ends a wait.
        """
        wanted = tuple(for_)
        info = resolve_kind(kind)

        async def until() -> JsonDict:
            async for job in self.watch_job(kind, name):
                if jobstate.reached(job, wanted):
                    return job
            raise AssertionError("watch_job never ends without raising")

        async def until_stuck_or(goal: Awaitable[JsonDict]) -> JsonDict:
            reached = asyncio.ensure_future(goal)
            stuck = asyncio.ensure_future(self._stuck(name, info.kind))
            try:
                done, _ = await asyncio.wait({reached, stuck}, return_when=asyncio.FIRST_COMPLETED)
                finished = reached if reached in done else stuck
                message = finished.result()
                if isinstance(message, str):
                    raise JobStuck(f'{info.singular} "{name}" cannot make progress: {message}')
                return message
            finally:
                await cancel_and_wait([reached, stuck])

        goal = until_stuck_or(until()) if fail_when_stuck else until()
        try:
            return await asyncio.wait_for(goal, timeout)
        except TimeoutError:
            raise WaitTimeout(
                f'{info.singular} "{name}" did not reach {" or ".join(wanted)} within {timeout:g}s'
            ) from None

    async def _stuck(self, name: str, kind: str | None = None) -> str:
        """Returns the first fatal finding about the job's pods (never returns otherwise)."""
        nodes: list[JsonDict] | None = None
        async for etype, pod in self.watch_pods(name, kind=kind):
            if etype == "DELETED":
                continue
            unschedulable = any(
                c.get("reason") == "Unschedulable" for c in (pod.get("status") or {}).get("conditions") or ()
            )
            if unschedulable and nodes is None:
                try:
                    nodes = await self.nodes()
                except KubetrainError:  # no right to list nodes: "never fits" cannot be told
                    nodes = []
            for finding in pod_findings(pod, name, nodes or ()):
                if finding.fatal:
                    return finding.message
        raise AssertionError("watch_pods never ends without raising")

    # -- pods, logs, events ------------------------------------------------------------------

    async def pods(self, kind: str, name: str) -> JsonList:
        """The job's pods (label `training.kubeflow.org/job-name=<name>`, or the one its kind's
        registration names), by replica type and index."""
        info = resolve_kind(kind)
        try:
            items, _ = await self.kube.list(
                "v1", "pods", self.namespace, label_selector=pod_selector(info.kind, name)
            )
        except ApiError as err:
            raise api_failure(err) from None
        return sorted(items, key=jobstate.replica_sort_key)

    async def watch_pods(
        self, name: str, on_listed: Callable[[], None] | None = None, *, kind: str | None = None
    ) -> AsyncIterator[tuple[str, JsonDict]]:
        """`(type, pod)` for the job's pods: ADDED for each existing one, then every change.

        Reconnects (and relists, reporting every pod again as ADDED) when the watch drops, so a
        consumer must treat events as "the pod now looks like this" -- level-triggered.
        """
        selector = pod_selector(kind, name)
        while True:
            try:
                items, rv = await self.kube.list("v1", "pods", self.namespace, label_selector=selector)
                for pod in items:
                    yield "ADDED", pod
                if on_listed is not None:
                    on_listed()
                async for event in self.kube.watch(
                    "v1",
                    "pods",
                    self.namespace,
                    resource_version=rv,
                    label_selector=selector,
                    timeout_seconds=300,
                ):
                    etype, obj = str(event.get("type")), event.get("object") or {}
                    if etype in ("ADDED", "MODIFIED", "DELETED"):
                        yield etype, obj
                    elif etype == "ERROR":
                        break
            except ApiError as err:
                if not err.connection_error:
                    raise api_failure(err) from None
                await asyncio.sleep(0.5)

    async def nodes(self) -> JsonList:
        """The cluster's nodes (their allocatable tells "waits for room" from "never fits")."""
        try:
            items, _ = await self.kube.list("v1", "nodes")
        except ApiError as err:
            raise api_failure(err) from None
        return items

    async def get_pod(self, name: str) -> JsonDict:
        try:
            return await self.kube.get("v1", "pods", self.namespace, name)
        except ApiError as err:
            raise api_failure(err, f'pod "{name}"', self.namespace) from None

    async def logs(
        self,
        pod: str,
        container: str | None = None,
        *,
        follow: bool = False,
        tail: int | None = None,
        timestamps: bool = False,
        previous: bool = False,
    ) -> AsyncIterator[str]:
        """The pod's log lines (without the trailing newline); `follow` streams until it ends."""
        try:
            async for line in stream_pod_log(
                self.kube.api,
                self.namespace,
                pod,
                container,
                follow=follow,
                tail=tail,
                timestamps=timestamps,
                previous=previous,
            ):
                yield line
        except ApiError as err:
            raise api_failure(err, f'pod "{pod}"', self.namespace) from None
        except (aiohttp.ClientError, OSError) as exc:
            raise Unreachable(f"the log stream of pod {pod!r} broke: {exc}") from None

    async def events(self, kind: str, name: str) -> JsonList:
        """Events about the job, oldest first (what `describe` shows at the bottom)."""
        info = resolve_kind(kind)
        selector = f"involvedObject.kind={info.kind},involvedObject.name={name}"
        try:
            items, _ = await self.kube.list("v1", "events", self.namespace, field_selector=selector)
        except ApiError as err:
            raise api_failure(err) from None
        return sorted(items, key=_event_time)

    async def describe(self, kind: str, name: str) -> str:
        info = resolve_kind(kind)
        job = await self.get(kind, name)
        pods, events = await asyncio.gather(self.pods(kind, name), self.events(kind, name))
        return render_describe(info, job, pods, events)


def _event_time(event: JsonDict) -> str:
    return str(
        event.get("lastTimestamp")
        or event.get("eventTime")
        or event.get("firstTimestamp")
        or (event.get("metadata") or {}).get("creationTimestamp")
        or ""
    )
