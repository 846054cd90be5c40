"""Apply a Plan's actions: many writes in flight, expectations raised first, idempotent outcomes.

A create answered 409 AlreadyExists and a delete answered 404 (or a failed uid precondition)
mean the desired state already holds, so they count as done. Every write that will not be
observed by the cache lowers its expectation at once, so a failure never stalls the job for the
expectation TTL.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from kubetrain.controller.plan import Action, CreateObject, DeleteObject, PatchObject
from kubetrain.kube.errors import ApiError
from kubetrain.runtime.expectations import Expectations, child_id
from kubetrain.runtime.transport import KubeClient

log = logging.getLogger(__name__)

Observable = Callable[[dict], bool]
"""Whether the caches will ever see this new object (a watched kind, and it matches the selector)."""
Watched = Callable[[str, str], bool]
"""Whether (apiVersion, kind) is cached at all, so the deletion of one of its objects will be seen."""


@dataclass
class ApplyResult:
    patched: list[dict] = field(default_factory=list)
    """The objects as the API server returned them after each successful patch."""
    errors: list[ApiError] = field(default_factory=list)
    writes: dict[tuple[str, str], int] = field(default_factory=dict)

    def count(self, verb: str, result: str) -> None:
        self.writes[(verb, result)] = self.writes.get((verb, result), 0) + 1


class Applier:
    def __init__(
        self,
        client: KubeClient,
        expectations: Expectations,
        observable: Observable,
        watched: Watched,
        max_in_flight: int = 200,
        selective: Watched | None = None,
    ) -> None:
        self.client = client
        self.expectations = expectations
        self.observable = observable
        self.watched = watched
        self.selective: Watched = selective or (lambda api_version, kind: False)
        """Whether (apiVersion, kind) is cached through a label selector (see `_namesake`)."""
        self._slots = asyncio.Semaphore(max_in_flight)

    async def apply(self, job_key: str, namespace: str, actions: list[Action]) -> ApplyResult:
        result = ApplyResult()
        if not actions:
            return result
        adds, deletes = [], []
        for action in actions:
            if isinstance(action, CreateObject) and self.observable(action.obj):
                adds.append(child_id(action.obj["kind"], action.obj["metadata"]["name"]))
            elif isinstance(action, DeleteObject) and self.watched(action.ref.api_version, action.ref.kind):
                deletes.append(child_id(action.ref.kind, action.ref.name))
        self.expectations.expect(job_key, adds, deletes)
        await asyncio.gather(*(self._one(job_key, namespace, a, result) for a in actions))
        return result

    async def _one(self, job_key: str, namespace: str, action: Action, result: ApplyResult) -> None:
        async with self._slots:
            if isinstance(action, CreateObject):
                await self._create(job_key, namespace, action, result)
            elif isinstance(action, DeleteObject):
                await self._delete(job_key, action, result)
            elif isinstance(action, PatchObject):
                await self._patch(job_key, action, result)

    async def _create(self, job_key: str, namespace: str, action: CreateObject, result: ApplyResult) -> None:
        obj = action.obj
        name = child_id(obj["kind"], obj["metadata"]["name"])
        try:
            # The answer is not read: the cache learns the new object from the watch.
            await self.client.create(
                obj, namespace=obj["metadata"].get("namespace") or namespace, read_back=False
            )
        except ApiError as err:
            # Either way the cache will not report a create caused by this call.
            self.expectations.creation_observed(job_key, name)
            if err.already_exists:
                result.count("create", "exists")
                await self._namesake(job_key, obj, obj["metadata"].get("namespace") or namespace, result)
                return
            result.count("create", "error")
            log.info("%s: create %s failed: %s", job_key, name, err)
            result.errors.append(err)
            return
        result.count("create", "ok")

    async def _namesake(self, job_key: str, obj: dict, namespace: str, result: ApplyResult) -> None:
        """A create of a kind the cache selects by label (Secrets) answered AlreadyExists: the
        namesake may lack the label and so be invisible to the planner, which would then create
        it forever. Ours (an older operator's, same controller uid): label it so the cache sees
        it. Anyone else's: an error, so the job backs off until it is gone (as upstream's
        controllers refuse a namesake). Kinds cached unfiltered are seen by the planner and never
        get here."""
        api_version, kind, name = obj["apiVersion"], obj["kind"], obj["metadata"]["name"]
        if not self.selective(api_version, kind):
            return
        try:
            existing = await self.client.get(api_version, kind, namespace, name)
        except ApiError as err:
            log.info("%s: reading namesake %s/%s: %s", job_key, kind, name, err)
            return
        if self.observable(existing):
            return  # the cache holds it (or its watch event is on the way)
        ours = _controller_uid(obj)
        if ours and ours == _controller_uid(existing):
            patch = {"metadata": {"labels": dict(obj["metadata"].get("labels") or {})}}
            try:
                await self.client.merge_patch(api_version, kind, namespace, name, patch)
            except ApiError as err:
                result.errors.append(err)
            return
        owner = next((r.get("kind") for r in obj["metadata"].get("ownerReferences") or ()), "the job")
        message = f'Resource "{name}" already exists and is not managed by {owner}'
        log.warning("%s: %s", job_key, message)
        result.errors.append(ApiError(409, "AlreadyExists", message))

    async def _delete(self, job_key: str, action: DeleteObject, result: ApplyResult) -> None:
        ref = action.ref
        name = child_id(ref.kind, ref.name)
        try:
            await self.client.delete(
                ref.api_version,
                ref.kind,
                ref.namespace,
                ref.name,
                uid=ref.uid,
                propagation_policy=action.propagation_policy,
            )
        except ApiError as err:
            self.expectations.deletion_observed(job_key, name)
            # 404: already gone; 409 on a uid precondition: the object we meant is gone.
            if err.not_found or err.conflict:
                result.count("delete", "gone")
                return
            result.count("delete", "error")
            log.info("%s: delete %s failed: %s", job_key, name, err)
            result.errors.append(err)
            return
        result.count("delete", "ok")

    async def _patch(self, job_key: str, action: PatchObject, result: ApplyResult) -> None:
        ref = action.ref
        try:
            patched = await self.client.merge_patch(
                ref.api_version, ref.kind, ref.namespace, ref.name, action.patch
            )
        except ApiError as err:
            result.count("patch", "error")
            if not err.conflict:  # a stale read, retried at once; anything else must be told
                log.warning("%s: patch %s/%s failed: %s", job_key, ref.kind, ref.name, err)
            result.errors.append(err)
            return
        result.count("patch", "ok")
        if isinstance(patched, dict):
            result.patched.append(patched)


def _controller_uid(obj: dict) -> str:
    refs = (obj.get("metadata") or {}).get("ownerReferences") or ()
    return next((str(r.get("uid") or "") for r in refs if isinstance(r, dict) and r.get("controller")), "")
