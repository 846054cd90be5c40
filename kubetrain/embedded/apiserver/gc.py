"""The controllers a control plane runs beside the API server, in one task.

* Garbage collection by ownerReferences, like kube-controller-manager's GC: dependents of a
  removed owner are deleted (Background), ``foregroundDeletion`` owners wait for their blocking
  dependents, ``orphan`` owners have their references stripped from dependents first; dangling
  references (owner uid gone) are collected too.
* Namespace lifecycle: a Terminating namespace has its contents deleted, then disappears.
* CRD cleanup: a deleted CRD has its instances deleted, then its finalizer removed.
* Service accounts (kube-controller-manager's serviceaccount and root-ca-cert-publisher
  controllers, once `publish_root_ca` gave the serving CA): every namespace that is not
  terminating has a ``default`` ServiceAccount and a ``kube-root-ca.crt`` ConfigMap holding the
  CA, recreated when deleted and put back when changed.

Work is queued from store events and processed promptly on the event loop, yielding now and
then so a large cascade does not stall request handling.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from typing import Any

from .crd import CLEANUP_FINALIZER
from .errors import APIError
from .jsonutil import clone
from .resources import CRD_KEY, NAMESPACE_KEY
from .rest import FOREGROUND, ORPHAN, DeleteOptions, ObjectStorage
from .serviceaccounts import DEFAULT_ACCOUNT, ROOT_CA_CONFIGMAP, default_account, root_ca_configmap
from .store import Event, ObjKey, meta_of

log = logging.getLogger(__name__)

WorkItem = tuple[str, ...]


def _refs(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in meta_of(obj).get("ownerReferences") or () if isinstance(r, dict) and r.get("uid")]


class ControllerManager:
    """GC, namespace and CRD finalization, fed by store events."""

    def __init__(self, rest: ObjectStorage) -> None:
        self._rest = rest
        self._store = rest.store
        self._queue: deque[WorkItem] = deque()
        self._queued: set[WorkItem] = set()
        self._wake = asyncio.Event()
        self._root_ca: str | None = None
        self._store.add_listener(self.on_event)

    def publish_root_ca(self, ca_pem: str) -> None:
        """Start the service-account controllers with the CA in-cluster clients should trust."""
        self._root_ca = ca_pem
        for ns in self._store.iter(NAMESPACE_KEY):
            self._enqueue(("accounts", meta_of(ns)["name"]))

    def _enqueue(self, item: WorkItem) -> None:
        if item not in self._queued:
            self._queued.add(item)
            self._queue.append(item)
            self._wake.set()

    def on_event(self, ev: Event) -> None:
        meta = meta_of(ev.obj)
        ns = meta.get("namespace", "")
        if self._root_ca is not None:
            if ev.key == NAMESPACE_KEY and ev.type != "DELETED":
                self._enqueue(("accounts", meta["name"]))
            elif (ev.key, meta.get("name")) in (
                ("serviceaccounts", DEFAULT_ACCOUNT),
                ("configmaps", ROOT_CA_CONFIGMAP),
            ):
                self._enqueue(("accounts", ns))
        if ev.type == "DELETED":
            if meta.get("uid"):
                self._enqueue(("dependents", meta["uid"]))
            for ref in _refs(ev.obj):
                self._enqueue(("owner", ref["uid"]))
            if ns:
                ns_obj = self._store.get(NAMESPACE_KEY, "", ns)
                if ns_obj is not None and meta_of(ns_obj).get("deletionTimestamp"):
                    self._enqueue(("namespace", ns))
            rt = self._rest.catalog.storage_type(ev.key)
            if rt is not None and rt.custom is not None and self._rest.catalog.is_terminating(ev.key):
                self._enqueue(("crd", rt.custom.crd_name))
            return
        refs = _refs(ev.obj)
        old_refs = _refs(ev.old) if ev.old is not None else []
        if refs and refs != old_refs:
            self._enqueue(("object", ev.key, ns, meta["name"]))
        kept = {r["uid"] for r in refs}
        for ref in old_refs:
            if ref["uid"] not in kept:
                self._enqueue(("owner", ref["uid"]))
        if meta.get("deletionTimestamp"):
            fins = meta.get("finalizers") or ()
            if ORPHAN in fins or FOREGROUND in fins:
                self._enqueue(("owner", meta["uid"]))
            if ev.key == NAMESPACE_KEY:
                self._enqueue(("namespace", meta["name"]))
            elif ev.key == CRD_KEY:
                self._enqueue(("crd", meta["name"]))

    async def run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            done = 0
            while self._queue:
                item = self._queue.popleft()
                self._queued.discard(item)
                try:
                    self._process(item)
                except APIError as exc:
                    log.debug("controller work %s failed: %s", item, exc.message)
                except Exception:
                    log.exception("controller work %s failed", item)
                done += 1
                if done % 100 == 0:
                    await asyncio.sleep(0)

    def _process(self, item: WorkItem) -> None:
        kind = item[0]
        if kind == "object":
            self._collect((item[1], item[2], item[3]))
        elif kind == "dependents":
            for dep in self._store.dependents_of(item[1]):
                self._collect(dep)
        elif kind == "owner":
            self._finish_owner(item[1])
        elif kind == "namespace":
            self._finish_namespace(item[1])
        elif kind == "crd":
            self._finish_crd(item[1])
        elif kind == "accounts":
            self._ensure_accounts(item[1])

    # --- service accounts ----------------------------------------------------------------

    def _ensure_accounts(self, name: str) -> None:
        ns = self._store.get(NAMESPACE_KEY, "", name)
        if ns is None or meta_of(ns).get("deletionTimestamp") or self._root_ca is None:
            return
        sa_rt = self._rest.catalog.storage_type("serviceaccounts")
        cm_rt = self._rest.catalog.storage_type("configmaps")
        assert sa_rt is not None and cm_rt is not None
        if self._store.get("serviceaccounts", name, DEFAULT_ACCOUNT) is None:
            self._rest.create(sa_rt, name, default_account(name))
        current = self._store.get("configmaps", name, ROOT_CA_CONFIGMAP)
        desired = root_ca_configmap(name, self._root_ca)
        if current is None:
            self._rest.create(cm_rt, name, desired)
        elif current.get("data") != desired["data"]:
            new = clone(current)
            new["data"] = desired["data"]
            self._rest.write(cm_rt, current, new)

    # --- garbage collection --------------------------------------------------------------

    def _collect(self, okey: ObjKey) -> None:
        """attemptToDeleteItem: drop dangling references, or delete an object with no live owner."""
        obj = self._store.get(*okey)
        rt = self._rest.catalog.storage_type(okey[0])
        if obj is None or rt is None:
            return
        solid, gone, waiting = [], [], []
        for ref in _refs(obj):
            loc = self._store.by_uid(ref["uid"])
            owner = self._store.get(*loc) if loc else None
            if owner is None:
                gone.append(ref)
                continue
            om = owner["metadata"]
            if om.get("deletionTimestamp") and FOREGROUND in (om.get("finalizers") or ()):
                waiting.append(ref)
            else:
                solid.append(ref)
        if not (gone or waiting):
            return
        if solid:
            new = clone(obj)
            drop = {r["uid"] for r in gone + waiting}
            new["metadata"]["ownerReferences"] = [r for r in _refs(obj) if r["uid"] not in drop]
            self._rest.write(rt, obj, new)
            return
        if meta_of(obj).get("deletionTimestamp"):
            return
        blocking = any(r.get("blockOwnerDeletion") for r in waiting)
        policy = "Foreground" if blocking else "Background"
        self._rest.delete(rt, okey[1], okey[2], DeleteOptions(propagation_policy=policy))

    def _finish_owner(self, uid: str) -> None:
        loc = self._store.by_uid(uid)
        owner = self._store.get(*loc) if loc else None
        if loc is None or owner is None or not meta_of(owner).get("deletionTimestamp"):
            return
        rt = self._rest.catalog.storage_type(loc[0])
        if rt is None:
            return
        fins = list(meta_of(owner).get("finalizers") or ())
        if ORPHAN in fins:
            for dep in self._store.dependents_of(uid):
                obj = self._store.get(*dep)
                dep_rt = self._rest.catalog.storage_type(dep[0])
                if obj is None or dep_rt is None:
                    continue
                new = clone(obj)
                new["metadata"]["ownerReferences"] = [r for r in _refs(obj) if r["uid"] != uid]
                if not new["metadata"]["ownerReferences"]:
                    del new["metadata"]["ownerReferences"]
                self._rest.write(dep_rt, obj, new)
            self._drop_finalizer(rt, owner, ORPHAN)
        elif FOREGROUND in fins:
            for dep in self._store.dependents_of(uid):
                self._collect(dep)
            blocked = False
            for dep in self._store.dependents_of(uid):
                obj = self._store.get(*dep)
                if obj is not None and any(
                    r["uid"] == uid and r.get("blockOwnerDeletion") for r in _refs(obj)
                ):
                    blocked = True
            if not blocked:
                self._drop_finalizer(rt, owner, FOREGROUND)

    def _drop_finalizer(self, rt: Any, obj: dict[str, Any], finalizer: str) -> None:
        current = self._store.get(rt.key, meta_of(obj).get("namespace", ""), meta_of(obj)["name"])
        if current is None:
            return
        new = clone(current)
        new["metadata"]["finalizers"] = [f for f in new["metadata"].get("finalizers") or () if f != finalizer]
        if not new["metadata"]["finalizers"]:
            del new["metadata"]["finalizers"]
        self._rest.write(rt, current, new)

    # --- namespaces and CRDs -------------------------------------------------------------

    def _finish_namespace(self, name: str) -> None:
        ns = self._store.get(NAMESPACE_KEY, "", name)
        if ns is None or not meta_of(ns).get("deletionTimestamp"):
            return
        for key in self._store.resource_keys():
            rt = self._rest.catalog.storage_type(key)
            if rt is None or not rt.namespaced:
                continue
            for obj in list(self._store.iter(key, name)):
                if not meta_of(obj).get("deletionTimestamp"):
                    self._rest.delete(
                        rt, name, obj["metadata"]["name"], DeleteOptions(propagation_policy="Background")
                    )
        if not any(self._store.count(key, name) for key in self._store.resource_keys()):
            self._rest.finish_namespace(name)

    def _finish_crd(self, name: str) -> None:
        crd = self._store.get(CRD_KEY, "", name)
        if crd is None or not meta_of(crd).get("deletionTimestamp"):
            return
        spec = crd.get("spec") or {}
        key = f"{(spec.get('names') or {}).get('plural')}.{spec.get('group')}"
        rt = self._rest.catalog.storage_type(key)
        if rt is not None:
            for obj in list(self._store.iter(key)):
                meta = meta_of(obj)
                if not meta.get("deletionTimestamp"):
                    self._rest.delete(rt, meta.get("namespace", ""), meta["name"], DeleteOptions())
        if self._store.count(key) == 0:
            crd_rt = self._rest.catalog.storage_type(CRD_KEY)
            if crd_rt is not None and CLEANUP_FINALIZER in (meta_of(crd).get("finalizers") or ()):
                self._drop_finalizer(crd_rt, crd, CLEANUP_FINALIZER)
