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
from kubetrain.runtime.errors import ApiError
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
    ) -> None:
        self.client = client
        self.expectations = expectations
        self.observable = observable
        self.watched = watched
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
                await self._patch(action, result)

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
                return
            result.count("create", "error")
            log.info("%s: create %s failed: %s", job_key, name, err)
            result.errors.append(err)
            return
        result.count("create", "ok")

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

    async def _patch(self, action: PatchObject, result: ApplyResult) -> None:
        ref = action.ref
        try:
            patched = await self.client.merge_patch(
                ref.api_version, ref.kind, ref.namespace, ref.name, action.patch
            )
        except ApiError as err:
            result.count("patch", "error")
            result.errors.append(err)
            return
        result.count("patch", "ok")
        if isinstance(patched, dict):
            result.patched.append(patched)
