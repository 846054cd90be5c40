"""The cluster as the pages show it: every job of every kind, their pods and events, kept current.

List+watch informers (`kubetrain.kube.informer`, the recorder's and the node's mirror) over the
job kinds, the pods that carry a job-name label, and events, through the client the dashboard
was given (the local plane's, or a kubeconfig's credentials: it works the same on a cluster).
A pod belongs to a job by its controller ownerReference, else by the job-name label (an MPIJob
launcher's batch Job, a JobSet's pods), as the history recorder tells it. Each change is
published (`changes`) to the pages that show it: ``jobs`` for the list, the job's key for its page.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

from kubetrain.api.kinds import KindInfo
from kubetrain.client.kinds import all_kinds
from kubetrain.dashboard.changes import Changes
from kubetrain.dashboard.views import JobKey, job_key, key_text
from kubetrain.history.recorder import JOB_NAME_LABELS
from kubetrain.kube.client import KubeAPI
from kubetrain.kube.informer import Informer
from kubetrain.kube.tasks import cancel_and_wait

JsonDict = dict[str, Any]

JOBS = "jobs"
"""The topic of the jobs page: its keys are jobs' keys."""
SYNC_SECONDS = 30.0
"""How long the first lists may take before pages are served what arrived (a kind whose CRD is
missing never lists, a forbidden one neither)."""


def job_topic(key: str) -> str:
    return f"job:{key}"


class LiveState:
    """`await state.start()` ... `await state.stop()`; read `jobs`, `pods_of`, `events_of`."""

    def __init__(self, api: KubeAPI, kinds: Iterable[KindInfo] | None = None, namespace: str = "") -> None:
        self.api = api
        self.namespace = namespace
        self.kinds = {info.kind: info for info in (all_kinds() if kinds is None else kinds)}
        self.changes = Changes()
        self.jobs: dict[JobKey, JsonDict] = {}
        self._by_uid: dict[str, JobKey] = {}
        self._by_name: dict[tuple[str, str], JobKey] = {}
        self.pods: dict[str, JsonDict] = {}
        self._pod_job: dict[str, JobKey] = {}
        self._job_pods: dict[JobKey, set[str]] = {}
        self._events: dict[str, dict[str, JsonDict]] = {}
        """Events by the uid of the object they are about."""
        self._informers: list[Informer] = []
        self._task: asyncio.Task[None] | None = None
        self.synced = asyncio.Event()

    # -- lifecycle -------------------------------------------------------------------------------

    def _path(self, prefix: str, plural: str) -> str:
        where = f"/namespaces/{self.namespace}" if self.namespace else ""
        return f"{prefix}{where}/{plural}"

    async def start(self) -> None:
        """Start mirroring, in the background: pages wait for `synced` (a cluster that is slow to
        list, or forbids a list, must not keep the dashboard from serving)."""
        self._task = asyncio.create_task(self._run(), name="dashboard live state")

    async def _run(self) -> None:
        jobs = [
            Informer(
                self.api,
                self._path(f"/apis/{info.group}/{info.version}", info.plural),
                self._job_handler(info),
                optional=True,
            )
            for info in self.kinds.values()
        ]
        # Jobs first: each pod then finds its job already known (and orphans are matched later).
        await self._mirror(jobs)
        pods = [
            Informer(self.api, self._path("/api/v1", "pods"), self._on_pod, label_selector=label)
            for label in JOB_NAME_LABELS
        ]
        await self._mirror([*pods, Informer(self.api, self._path("/api/v1", "events"), self._on_event)])
        self.synced.set()

    async def _mirror(self, informers: list[Informer]) -> None:
        for informer in informers:
            informer.start()
            self._informers.append(informer)
        waiters = [asyncio.ensure_future(i.synced.wait()) for i in informers]
        try:
            await asyncio.wait(waiters, timeout=SYNC_SECONDS)
        finally:
            for waiter in waiters:
                waiter.cancel()

    async def stop(self) -> None:
        if self._task is not None:
            await cancel_and_wait([self._task])
            self._task = None
        for informer in self._informers:
            await informer.stop()
        self._informers = []

    # -- reading ---------------------------------------------------------------------------------

    def info(self, kind: str) -> KindInfo | None:
        return self.kinds.get(kind)

    def job(self, key: JobKey) -> JsonDict | None:
        return self.jobs.get(key)

    def pods_of(self, key: JobKey) -> list[JsonDict]:
        return [self.pods[uid] for uid in self._job_pods.get(key, ()) if uid in self.pods]

    def events_of(self, key: JobKey) -> list[JsonDict]:
        job = self.jobs.get(key)
        uids = [*self._job_pods.get(key, ())]
        if job is not None:
            uids.append(str((job.get("metadata") or {}).get("uid") or ""))
        return [e for uid in uids for e in self._events.get(uid, {}).values()]

    # -- what the informers see ------------------------------------------------------------------

    def _job_handler(self, info: KindInfo) -> Any:
        def handle(change: str, job: JsonDict) -> None:
            job.setdefault("kind", info.kind)  # list items carry no kind on the wire
            job.setdefault("apiVersion", info.api_version)
            key = job_key(job, info.kind)
            uid = str((job.get("metadata") or {}).get("uid") or "")
            if change == "DELETED":
                if self.jobs.get(key, {}).get("metadata", {}).get("uid") == uid:
                    self.jobs.pop(key, None)
                    self._by_uid.pop(uid, None)
                    self._by_name.pop((key[0], key[2]), None)
                    self._events.pop(uid, None)
            else:
                self.jobs[key] = job
                self._by_uid[uid] = key
                self._by_name[(key[0], key[2])] = key
                if change == "ADDED":
                    self._adopt_orphans(key)
            self._publish(key, "job")

        return handle

    def _publish(self, key: JobKey, what: str) -> None:
        text = key_text(key)
        if what == "job":
            self.changes.publish(JOBS, text)
        self.changes.publish(job_topic(text), what)

    def _job_of(self, pod: JsonDict) -> JobKey | None:
        meta = pod.get("metadata") or {}
        for owner in meta.get("ownerReferences") or ():
            if owner.get("controller") and owner.get("uid") in self._by_uid:
                return self._by_uid[str(owner["uid"])]
        labels = meta.get("labels") or {}
        for label in JOB_NAME_LABELS:
            if label in labels:
                return self._by_name.get((str(meta.get("namespace") or ""), str(labels[label])))
        return None

    def _on_pod(self, change: str, pod: JsonDict) -> None:
        uid = str((pod.get("metadata") or {}).get("uid") or "")
        if change == "DELETED":
            self.pods.pop(uid, None)
            self._events.pop(uid, None)
            key = self._pod_job.pop(uid, None)
            if key is not None:
                self._job_pods.get(key, set()).discard(uid)
                self._publish(key, "pods")
            return
        self.pods[uid] = pod
        found = self._pod_job.get(uid) or self._job_of(pod)
        if found is not None:
            self._pod_job[uid] = found
            self._job_pods.setdefault(found, set()).add(uid)
            self._publish(found, "pods")

    def _adopt_orphans(self, key: JobKey) -> None:
        """Pods seen before their job (a relist orders kinds apart) join it when it appears."""
        for uid, pod in self.pods.items():
            if uid not in self._pod_job and self._job_of(pod) == key:
                self._pod_job[uid] = key
                self._job_pods.setdefault(key, set()).add(uid)

    def _on_event(self, change: str, event: JsonDict) -> None:
        involved = event.get("involvedObject") or event.get("regarding") or {}
        about = str(involved.get("uid") or "")
        uid = str((event.get("metadata") or {}).get("uid") or "")
        key = self._by_uid.get(about) or self._pod_job.get(about)
        if key is None:  # about no job of ours (or a pod not seen yet): nothing shows it
            return
        if change == "DELETED":
            self._events.get(about, {}).pop(uid, None)
        else:
            self._events.setdefault(about, {})[uid] = event
        self._publish(key, "events")
