"""The JobSet controller's I/O: watch JobSets and their Jobs, run `reconcile.plan`, apply it.

Like the embedded Job controller it talks to the API server only through the Kubernetes API, so
it runs against the embedded plane or any cluster. Keys are processed one at a time from a
deduplicated dirty set (`kubetrain.embedded.keyedloop`: a JobSet is never reconciled by two
tasks at once); a change to a Job or Service a JobSet controls requeues that JobSet. Writes
follow upstream: Jobs are created in parallel with a controller reference, deleted with
Foreground propagation, suspended and resumed by updates; the status is written once at the
end (to ``/status``), then the events.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

from kubetrain.embedded.keyedloop import KeyedLoop
from kubetrain.kube.client import KubeAPI, core_path, group_path
from kubetrain.kube.errors import ApiError
from kubetrain.kube.events import core_event, object_reference
from kubetrain.kube.informer import object_key

from . import constants as c
from .naming import subdomain
from .reconcile import Plan, plan

log = logging.getLogger(__name__)

JsonDict = dict[str, Any]
MAX_PARALLELISM = 50
"""Parallel Job creations/deletions (upstream's ``constants.MaxParallelism``)."""


def jobsets_path(namespace: str | None = None, name: str | None = None, sub: str | None = None) -> str:
    return group_path(c.GROUP, c.VERSION, c.PLURAL, namespace, name, sub)


def _jobs_path(namespace: str | None = None, name: str | None = None, sub: str | None = None) -> str:
    return group_path("batch", "v1", "jobs", namespace, name, sub)


def _owner(obj: JsonDict) -> tuple[str, str] | None:
    """(namespace/name key, uid) of the JobSet controlling `obj`, if one does."""
    meta = obj.get("metadata") or {}
    for ref in meta.get("ownerReferences") or []:
        if ref.get("controller") and ref.get("kind") == c.KIND and ref.get("apiVersion") == c.API_VERSION:
            return f"{meta.get('namespace') or 'default'}/{ref.get('name')}", str(ref.get("uid") or "")
    return None


class JobSetController:
    """``await controller.start()`` ... ``await controller.stop()``."""

    def __init__(self, api: KubeAPI, *, retry_delay: float = 0.5) -> None:
        self.api = api
        self.retry_delay = retry_delay
        self._queue = KeyedLoop(
            "embedded jobset controller", "jobset", self.sync, log=log, retry_delay=retry_delay
        )
        self._jobsets = self._queue.watch(
            api, jobsets_path(), self._jobset_keys, primary=True, wait=False, optional=True
        )
        self._jobs = self._queue.watch(api, _jobs_path(), self._child_keys)
        self._services = self._queue.watch(api, core_path("services"), self._child_keys)

    async def start(self) -> None:
        await self._queue.start()

    async def stop(self) -> None:
        await self._queue.stop()

    # -- watches -------------------------------------------------------------------------------------

    def _jobset_keys(self, kind: str, js: JsonDict) -> list[str]:
        key = object_key(js)
        if kind == "DELETED":
            self._queue.forget(key)
            return []
        return [key]

    def _child_keys(self, kind: str, obj: JsonDict) -> list[str]:
        owner = _owner(obj)
        return [owner[0]] if owner is not None else []

    # -- one pass ----------------------------------------------------------------------------------

    def children(self, js: JsonDict) -> list[JsonDict]:
        """The Jobs this JobSet controls, by owner uid (jobset#1167: names can be reused)."""
        uid = (js.get("metadata") or {}).get("uid")
        return [j for j in self._jobs.items.values() if (_owner(j) or ("", ""))[1] == uid]

    def _service_exists(self, js: JsonDict) -> bool:
        namespace = (js.get("metadata") or {}).get("namespace") or "default"
        return f"{namespace}/{subdomain(js)}" in self._services.items

    async def sync(self, js: JsonDict) -> None:
        result = plan(js, self.children(js), service_exists=self._service_exists(js), now=time.time())
        if result is None:
            return
        await self._apply(js, result)
        if result.requeue_after is not None:
            self._queue.enqueue_after(object_key(js), result.requeue_after + 0.05)

    async def _apply(self, js: JsonDict, result: Plan) -> None:
        meta = js.get("metadata") or {}
        namespace, name = meta.get("namespace") or "default", meta.get("name")
        if result.delete_jobset:
            body = {
                "apiVersion": "v1",
                "kind": "DeleteOptions",
                "propagationPolicy": "Foreground",
                "preconditions": {"uid": meta.get("uid")},
            }
            try:
                await self.api.delete(jobsets_path(namespace, name), body)
            except ApiError as err:
                if err.status not in (404, 409):
                    raise
            return
        await self._parallel(self._delete_job(j) for j in result.delete_jobs)
        if result.create_service is not None:
            try:
                await self.api.create(core_path("services", namespace), result.create_service)
            except ApiError as err:
                if not err.already_exists:
                    self._event(js, "Warning", c.HEADLESS_SERVICE_CREATION_FAILED_REASON, err.message)
                    raise
        errors = await self._parallel(self._create_job(j) for j in result.create_jobs)
        for job in result.suspend_jobs:
            jmeta = job.get("metadata") or {}
            await self.api.merge_patch(_jobs_path(namespace, jmeta.get("name")), {"spec": {"suspend": True}})
        for job, patch in result.resume_jobs:
            await self._resume_job(job, patch)
        if errors:
            raise errors[0]
        if result.status_changed:
            await self._write_status(js, result.status)
            for event in result.events:
                self._event(js, event.type, event.reason, event.message)

    async def _parallel(self, calls: Any) -> list[BaseException]:
        pending = list(calls)
        failures: list[BaseException] = []
        for start in range(0, len(pending), MAX_PARALLELISM):
            results = await asyncio.gather(*pending[start : start + MAX_PARALLELISM], return_exceptions=True)
            failures += [r for r in results if isinstance(r, BaseException)]
        return failures

    async def _create_job(self, job: JsonDict) -> None:
        """Upstream records no event for a failed create (``JobCreationFailed`` is declared in its
        constants but never used): the error is logged and the JobSet retried."""
        namespace = job["metadata"]["namespace"]
        try:
            await self.api.create(_jobs_path(namespace), job)
        except ApiError as err:
            if not err.already_exists:
                raise

    async def _delete_job(self, job: JsonDict) -> None:
        jmeta = job.get("metadata") or {}
        body = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Foreground"}
        try:
            await self.api.delete(_jobs_path(jmeta.get("namespace"), jmeta.get("name")), body)
        except ApiError as err:
            if err.status != 404:
                raise

    async def _resume_job(self, job: JsonDict, patch: JsonDict) -> None:
        """Clear ``startTime`` first (a started Job's template is immutable), then unsuspend."""
        jmeta = job.get("metadata") or {}
        namespace, name = jmeta.get("namespace"), jmeta.get("name")
        if (job.get("status") or {}).get("startTime"):
            await self.api.merge_patch(_jobs_path(namespace, name, "status"), {"status": {"startTime": None}})
        await self.api.merge_patch(_jobs_path(namespace, name), patch)

    async def _write_status(self, js: JsonDict, status: JsonDict) -> None:
        """Replace the status as ``Status().Update`` does, guarded by the resourceVersion read."""
        meta = js.get("metadata") or {}
        old = js.get("status") or {}
        body = {
            "metadata": {"resourceVersion": meta.get("resourceVersion")},
            "status": {**status, **{k: None for k in old if k not in status}},
        }
        await self.api.merge_patch(
            jobsets_path(meta.get("namespace") or "default", meta.get("name"), "status"), body
        )

    def _event(self, js: JsonDict, kind: str, reason: str, message: str) -> None:
        involved = object_reference(c.API_VERSION, c.KIND, js.get("metadata") or {})
        body = core_event(involved, kind, reason, message, c.EVENT_COMPONENT, time.time())
        self._queue.spawn(self._post(body))

    async def _post(self, body: JsonDict) -> None:
        with contextlib.suppress(Exception):
            await self.api.create(core_path("events", body["metadata"]["namespace"]), body)
