"""Watches an API server and writes what its jobs do into the history store.

Jobs of every kind the registry serves, their pods and events are mirrored by list+watch
informers (`kubetrain.kube.informer`), so the recorder works the same against the local plane
and a cluster. A pod belongs to a job by its controller ownerReference, else by the job-name
label (pods of an MPIJob launcher's batch Job, of a TrainJob's JobSet). Logs are read through
the API (`pods/log`), not from the node's disk: when a container instance ends (its state is
`terminated`, or a restart moved it to `lastState`), that instance's log is fetched once.

Every write goes through one queue to one writer task, in order; SQLite's calls run in a
worker thread so the event loop never waits on the disk.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any

from kubetrain.api.kinds import KindInfo
from kubetrain.history.store import HistoryStore
from kubetrain.kube.client import KubeAPI
from kubetrain.kube.errors import ApiError
from kubetrain.kube.informer import Informer

log = logging.getLogger(__name__)

JsonDict = dict[str, Any]

JOB_NAME_LABELS = ("training.kubeflow.org/job-name", "jobset.sigs.k8s.io/jobset-name")
"""Labels that name a pod's job when its owner is an intermediate object (a batch Job, a JobSet)."""

SYNC_SECONDS = 30.0
"""How long `start` waits for a first list (a kind whose CRD is missing never lists): past it,
the recorder goes on and records what arrives."""
FLUSH_SECONDS = 10.0
"""How long `stop` waits for log reads in flight and queued writes before it gives up on them."""


def job_paths(kinds: Iterable[KindInfo]) -> list[str]:
    """One collection URL per group and plural: a kind served in two versions is one set of objects."""
    paths: dict[tuple[str, str], str] = {}
    for info in kinds:
        paths.setdefault((info.group, info.plural), f"/apis/{info.group}/{info.version}/{info.plural}")
    return list(paths.values())


def ended_attempts(pod: JsonDict) -> list[tuple[str, int, int | None, bool]]:
    """(container, attempt, exit code, previous?) of each container instance the pod shows ended."""
    status = pod.get("status") or {}
    found = []
    for cs in [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]:
        restarts = int(cs.get("restartCount") or 0)
        terminated = (cs.get("state") or {}).get("terminated")
        if terminated is not None:
            found.append((str(cs["name"]), restarts, terminated.get("exitCode"), False))
        last = (cs.get("lastState") or {}).get("terminated")
        if last is not None and restarts > 0:
            found.append((str(cs["name"]), restarts - 1, last.get("exitCode"), True))
    return found


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class HistoryRecorder:
    """`await recorder.start()` ... `await recorder.stop()` (which flushes what is pending)."""

    def __init__(self, api: KubeAPI, store: HistoryStore, kinds: Iterable[KindInfo]) -> None:
        self.api = api
        self.store = store
        self._job_paths = job_paths(kinds)
        self._jobs_by_name: dict[tuple[str, str], str] = {}
        self._job_uids: set[str] = set()
        self._pod_jobs: dict[str, str] = {}
        self._fetched: set[tuple[str, str, int]] = set()
        self._fetches: set[asyncio.Task[None]] = set()
        self._writes: asyncio.Queue[Callable[[], None] | None] = asyncio.Queue()
        self._informers: list[Informer] = []
        self._writer: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._writer = asyncio.create_task(self._write_loop(), name="history writer")
        # Jobs first, then pods, then events: each finds what it belongs to already recorded.
        await self._mirror(
            [Informer(self.api, path, self._on_job, optional=True) for path in self._job_paths]
        )
        await self._mirror([Informer(self.api, "/api/v1/pods", self._on_pod)])
        await self._mirror([Informer(self.api, "/api/v1/events", self._on_event)])

    async def _mirror(self, informers: list[Informer]) -> None:
        for informer in informers:
            informer.start()
            self._informers.append(informer)  # `stop` stops it even if `start` is cancelled now
        await asyncio.wait([asyncio.ensure_future(i.synced.wait()) for i in informers], timeout=SYNC_SECONDS)

    async def stop(self) -> None:
        for informer in self._informers:
            await informer.stop()
        self._informers = []
        if self._fetches:
            await asyncio.wait(self._fetches, timeout=FLUSH_SECONDS)
        if self._writer is not None:
            self._writes.put_nowait(None)
            try:
                await asyncio.wait_for(self._writer, FLUSH_SECONDS)
            except TimeoutError:
                log.warning("the job history did not finish writing in %gs", FLUSH_SECONDS)
            self._writer = None

    # -- what the informers see ------------------------------------------------------------------

    def _on_job(self, change: str, job: JsonDict) -> None:
        meta = job.get("metadata") or {}
        uid = str(meta.get("uid") or "")
        self._job_uids.add(uid)
        self._jobs_by_name[(str(meta.get("namespace") or ""), str(meta.get("name") or ""))] = uid
        self._write(self.store.record_job, job)
        if change == "DELETED":
            self._write(self.store.mark_deleted, uid, _now())

    def _on_pod(self, change: str, pod: JsonDict) -> None:
        meta = pod.get("metadata") or {}
        pod_uid = str(meta.get("uid") or "")
        job_uid = self._pod_jobs.get(pod_uid) or self._job_of(meta)
        if job_uid is None:
            return
        self._pod_jobs[pod_uid] = job_uid
        self._write(self.store.record_pod, job_uid, pod)
        for container, attempt, exit_code, previous in ended_attempts(pod):
            key = (pod_uid, container, attempt)
            if key in self._fetched:
                continue
            self._fetched.add(key)
            task = asyncio.create_task(
                self._fetch_log(job_uid, pod, container, attempt, exit_code, previous),
                name=f"history log {meta.get('name')}/{container}",
            )
            self._fetches.add(task)
            task.add_done_callback(self._fetches.discard)

    def _on_event(self, change: str, event: JsonDict) -> None:
        if change == "DELETED":
            return
        involved = event.get("involvedObject") or event.get("regarding") or {}
        uid = str(involved.get("uid") or "")
        job_uid = uid if uid in self._job_uids else self._pod_jobs.get(uid)
        if job_uid is None and str(involved.get("kind") or "") != "Pod":
            job_uid = self._jobs_by_name.get(
                (str(involved.get("namespace") or ""), str(involved.get("name") or ""))
            )
        if job_uid is not None:
            self._write(self.store.record_event, job_uid, event)

    def _job_of(self, meta: JsonDict) -> str | None:
        for owner in meta.get("ownerReferences") or []:
            if owner.get("controller") and owner.get("uid") in self._job_uids:
                return str(owner["uid"])
        labels = meta.get("labels") or {}
        for label in JOB_NAME_LABELS:
            if label in labels:
                return self._jobs_by_name.get((str(meta.get("namespace") or ""), str(labels[label])))
        return None

    async def _fetch_log(
        self, job_uid: str, pod: JsonDict, container: str, attempt: int, exit_code: int | None, previous: bool
    ) -> None:
        meta = pod["metadata"]
        path = f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}/log"
        query = {"container": container, **({"previous": "true"} if previous else {})}
        try:
            resp = await self.api.send("GET", path, query=query)
        except ApiError as exc:
            log.debug("cannot read the log of %s/%s: %s", meta["name"], container, exc)
            return
        if resp.status != 200:
            log.debug("no log for %s/%s (attempt %d): HTTP %d", meta["name"], container, attempt, resp.status)
            return
        text = resp.body.decode(errors="replace")
        self._write(
            self.store.record_log,
            job_uid,
            str(meta["uid"]),
            str(meta["name"]),
            container,
            attempt,
            exit_code,
            text,
        )

    # -- the one writer --------------------------------------------------------------------------

    def _write(self, call: Callable[..., None], *args: Any) -> None:
        self._writes.put_nowait(lambda: call(*args))

    async def _write_loop(self) -> None:
        while (write := await self._writes.get()) is not None:
            try:
                await asyncio.to_thread(write)
            except Exception:
                log.exception("the job history could not record a change")
        with contextlib.suppress(Exception):
            await asyncio.to_thread(self.store.close)
