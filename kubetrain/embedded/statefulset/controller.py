"""The apps/v1 StatefulSet controller of the embedded plane (kube-controller-manager's, in small).

On a cluster kube-controller-manager turns a StatefulSet into ordinal pods; the embedded plane
has no controller manager, so this does, through the Kubernetes API only (like the Job controller
and the binder, it could run against any API server). Each sync, level-triggered: find the
set's ControllerRevisions (create the one of the current template, bump a rolled-back one),
plan (``plan.py``: which pods to create, delete, relabel, and the status), carry the plan out
with Kubernetes' events (``SuccessfulCreate`` "Create Pod web-0 in StatefulSet web successful"),
write the status through the status subresource when it changed, and trim the revision history
to ``revisionHistoryLimit``. Pods and revisions carry a controller ownerReference with
``blockOwnerDeletion``, so deleting the set deletes them through the garbage collector.

Not covered (documented in the README): PersistentVolumeClaims (``volumeClaimTemplates`` become
emptyDir volumes, with a Warning event) and their retention policy, adoption of orphan pods,
``maxUnavailable``, StatefulSet conditions.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

from kubetrain.embedded.keyedloop import KeyedLoop, controller_keys
from kubetrain.embedded.statefulset import revisions as rev
from kubetrain.embedded.statefulset.identity import (
    API_VERSION,
    KIND,
    REVISION_LABEL,
    claim_templates,
    is_member,
    owned_by,
)
from kubetrain.embedded.statefulset.plan import Plan, Revisions, plan
from kubetrain.kube.client import KubeAPI, core_path, group_path
from kubetrain.kube.errors import ApiError
from kubetrain.kube.events import core_event, object_reference
from kubetrain.kube.informer import object_key

log = logging.getLogger(__name__)

JsonDict = dict[str, Any]

COMPONENT = "statefulset-controller"
DEFAULT_REVISION_HISTORY_LIMIT = 10
MAX_BATCH = 500
_OMIT_WHEN_ZERO = (
    "observedGeneration",
    "readyReplicas",
    "currentReplicas",
    "updatedReplicas",
    "currentRevision",
    "updateRevision",
)
"""StatefulSetStatus fields Go's ``omitempty`` drops when zero (``replicas`` and
``availableReplicas`` are always written)."""


def _is_statefulset(ref: JsonDict) -> bool:
    return ref.get("kind") == KIND and ref.get("apiVersion") == API_VERSION


def _sets_path(namespace: str | None = None, name: str | None = None, sub: str | None = None) -> str:
    return group_path("apps", "v1", "statefulsets", namespace, name, sub)


def _revisions_path(namespace: str | None = None, name: str | None = None) -> str:
    return group_path("apps", "v1", "controllerrevisions", namespace, name)


class StatefulSetController:
    """``await controller.start()``; it then keeps apps/v1 StatefulSets and their pods in step."""

    def __init__(self, api: KubeAPI) -> None:
        self.api = api
        self._queue = KeyedLoop("embedded statefulset controller", "statefulset", self._sync, log=log)
        self._sets = self._queue.watch(api, _sets_path(), self._set_keys, primary=True)
        self._pods = self._queue.watch(api, core_path("pods"), self._owner_keys)
        self._revisions = self._queue.watch(api, _revisions_path(), self._owner_keys)
        self._warned: set[tuple[str, int]] = set()

    async def start(self) -> None:
        await self._queue.start()

    async def stop(self) -> None:
        await self._queue.stop()

    # -- watches -------------------------------------------------------------------------------------

    @staticmethod
    def _set_keys(kind: str, set_: JsonDict) -> list[str]:
        return [object_key(set_)] if kind != "DELETED" else []

    @staticmethod
    def _owner_keys(kind: str, obj: JsonDict) -> list[str]:
        return controller_keys(obj, _is_statefulset)

    # -- sync ----------------------------------------------------------------------------------------

    async def _sync(self, set_: JsonDict) -> None:
        meta = set_.get("metadata") or {}
        uid, namespace = str(meta.get("uid") or ""), meta.get("namespace") or "default"
        pods = [
            p
            for p in self._pods.items.values()
            if (p.get("metadata") or {}).get("namespace") == namespace
            and owned_by(p, uid)
            and is_member(set_, p)
        ]
        history = sorted(
            (r for r in self._revisions.items.values() if owned_by(r, uid)),
            key=rev.sort_key,
        )
        self._warn_unsupported(set_)
        revisions, history = await self._revisions_of(set_, history)
        result = plan(set_, pods, revisions, time.time())
        await self._carry_out(set_, result)
        await self._write_status(set_, result.status)
        await self._truncate(set_, pods, history, revisions)
        if result.requeue_after is not None:
            self._queue.enqueue_after(object_key(set_), result.requeue_after + 0.05)

    async def _revisions_of(
        self, set_: JsonDict, history: list[JsonDict]
    ) -> tuple[Revisions, list[JsonDict]]:
        """getStatefulSetRevisions: the current and update revisions, creating or bumping one."""
        status = set_.get("status") or {}
        collisions = int(status.get("collisionCount") or 0)
        candidate = rev.new_revision(set_, rev.next_number(history), collisions)
        same = [r for r in history if rev.equal(r, candidate)]
        if same and history[-1] is same[-1]:
            update = history[-1]
        elif same:
            meta = same[-1]["metadata"]
            update = await self.api.merge_patch(
                _revisions_path(meta["namespace"], meta["name"]), {"revision": candidate["revision"]}
            )
            history = sorted([*(r for r in history if r is not same[-1]), update], key=rev.sort_key)
        else:
            update, collisions = await self._create_revision(set_, candidate, collisions)
            history = sorted([*history, update], key=rev.sort_key)
        current = next((r for r in history if r["metadata"]["name"] == status.get("currentRevision")), update)
        return (
            Revisions(
                current=current["metadata"]["name"],
                update=update["metadata"]["name"],
                current_template=rev.template_of(current),
                update_template=rev.template_of(update),
                collision_count=collisions,
            ),
            history,
        )

    async def _create_revision(
        self, set_: JsonDict, candidate: JsonDict, collisions: int
    ) -> tuple[JsonDict, int]:
        """history.CreateControllerRevision: on a name taken by other data, count a collision."""
        uid = str((set_.get("metadata") or {}).get("uid") or "")
        while True:
            namespace = candidate["metadata"]["namespace"]
            try:
                return await self.api.create(_revisions_path(namespace), candidate), collisions
            except ApiError as err:
                if err.status != 409:
                    raise
            existing = await self.api.get(_revisions_path(namespace, candidate["metadata"]["name"]))
            if owned_by(existing, uid) and rev.equal(existing, candidate):
                return existing, collisions
            collisions += 1
            candidate = rev.new_revision(set_, int(candidate["revision"]), collisions)

    async def _carry_out(self, set_: JsonDict, result: Plan) -> None:
        """Creates in slow-start batches (1, 2, 4... as upstream's slowStartBatch), then the rest."""
        pending = list(result.creates)
        batch = 1
        while pending:
            now, pending = pending[:batch], pending[batch:]
            outcomes = await asyncio.gather(*(self._create_pod(set_, p) for p in now), return_exceptions=True)
            if any(isinstance(o, BaseException) for o in outcomes):
                return
            batch = min(2 * batch, MAX_BATCH)
        for pod in result.deletes:
            await self._delete_pod(set_, pod)
        for pod, labels in result.relabels:
            pmeta = pod.get("metadata") or {}
            with contextlib.suppress(ApiError):
                await self.api.merge_patch(
                    core_path("pods", pmeta.get("namespace"), pmeta.get("name")),
                    {"metadata": {"labels": labels}},
                )

    async def _create_pod(self, set_: JsonDict, pod: JsonDict) -> None:
        name = pod["metadata"]["name"]
        try:
            await self.api.create(core_path("pods", pod["metadata"]["namespace"]), pod)
        except ApiError as err:
            if err.status == 409:  # our cache has not seen it yet: a later sync will
                return
            self._pod_event(set_, "create", name, err)
            raise
        self._pod_event(set_, "create", name, None)

    async def _delete_pod(self, set_: JsonDict, pod: JsonDict) -> None:
        pmeta = pod.get("metadata") or {}
        body = {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"uid": pmeta.get("uid")}}
        try:
            await self.api.delete(core_path("pods", pmeta.get("namespace"), pmeta.get("name")), body)
        except ApiError as err:
            if err.status in (404, 409):
                return
            self._pod_event(set_, "delete", str(pmeta.get("name")), err)
            raise
        self._pod_event(set_, "delete", str(pmeta.get("name")), None)

    async def _write_status(self, set_: JsonDict, status: JsonDict) -> None:
        before = set_.get("status") or {}
        wanted = {k: v for k, v in status.items() if v or k not in _OMIT_WHEN_ZERO}
        changed = {k: v for k, v in wanted.items() if before.get(k) != v}
        changed |= {k: None for k in _OMIT_WHEN_ZERO if k in before and k not in wanted}
        if not changed:
            return
        meta = set_.get("metadata") or {}
        await self.api.merge_patch(
            _sets_path(meta.get("namespace"), meta.get("name"), "status"), {"status": changed}
        )

    async def _truncate(
        self, set_: JsonDict, pods: list[JsonDict], history: list[JsonDict], revisions: Revisions
    ) -> None:
        """truncateHistory: delete the oldest revisions no pod and no status field names."""
        live = {revisions.current, revisions.update}
        live |= {str(((p.get("metadata") or {}).get("labels") or {}).get(REVISION_LABEL)) for p in pods}
        old = [r for r in history if r["metadata"]["name"] not in live]
        raw_limit = (set_.get("spec") or {}).get("revisionHistoryLimit")
        limit = DEFAULT_REVISION_HISTORY_LIMIT if raw_limit is None else int(raw_limit)
        if limit < 0 or len(old) <= limit:
            return
        for revision in old[: len(old) - limit]:
            meta = revision["metadata"]
            with contextlib.suppress(ApiError):
                await self.api.delete(_revisions_path(meta["namespace"], meta["name"]))

    # -- events --------------------------------------------------------------------------------------

    def _warn_unsupported(self, set_: JsonDict) -> None:
        meta = set_.get("metadata") or {}
        claims = [str((c.get("metadata") or {}).get("name")) for c in claim_templates(set_)]
        key = (str(meta.get("uid")), int(meta.get("generation") or 0))
        if not claims or key in self._warned:
            return
        self._warned.add(key)
        self._event(
            set_,
            "Warning",
            "VolumeClaimTemplatesNotSupported",
            "the local plane provisions no PersistentVolumeClaims: volumeClaimTemplates "
            f"{', '.join(claims)} are emptyDir volumes of each pod (their data does not outlive the pod)",
        )

    def _pod_event(self, set_: JsonDict, verb: str, pod_name: str, err: ApiError | None) -> None:
        """recordPodEvent's reasons and messages, word for word (Kubernetes 1.36 writes the verb
        capitalised in both: ``SuccessfulCreate``, "Create Pod web-0 in StatefulSet web successful")."""
        set_name = (set_.get("metadata") or {}).get("name")
        verb = verb.title()
        if err is None:
            message = f"{verb} Pod {pod_name} in StatefulSet {set_name} successful"
            self._event(set_, "Normal", f"Successful{verb}", message)
        else:
            message = f"{verb} Pod {pod_name} in StatefulSet {set_name} failed error: {err.message}"
            self._event(set_, "Warning", f"Failed{verb}", message)

    def _event(self, set_: JsonDict, kind: str, reason: str, message: str) -> None:
        involved = object_reference(API_VERSION, KIND, set_.get("metadata") or {})
        body = core_event(involved, kind, reason, message, COMPONENT, time.time())
        self._queue.spawn(self._post(body))

    async def _post(self, body: JsonDict) -> None:
        with contextlib.suppress(Exception):
            await self.api.create(core_path("events", body["metadata"]["namespace"]), body)
