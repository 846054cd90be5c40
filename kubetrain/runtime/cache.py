"""The informer's indexed in-memory store of (trimmed) raw dicts.

Objects are stored as given by the trim function and never mutated afterwards: readers get the
stored dicts themselves (no copies, for speed) and must treat them as read-only, exactly like
client-go listers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from kubetrain.runtime.trim import Trim

JsonDict = dict[str, Any]
JsonList = list[JsonDict]
IndexFunc = Callable[[JsonDict], list[str]]

JOB_NAME_LABEL = "training.kubeflow.org/job-name"
OPERATOR_NAME_LABEL = "training.kubeflow.org/operator-name"

INDEX_NAMESPACE = "namespace"
INDEX_OWNER_UID = "owner-uid"
INDEX_JOB_NAME = "job-name"
INDEX_NAME_PREFIX = "name-prefix"


def object_key(obj: JsonDict) -> str:
    """ "<namespace>/<name>", or "<name>" for cluster-scoped objects."""
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    return f"{ns}/{meta['name']}" if ns else str(meta["name"])


def controller_owner(obj: JsonDict) -> JsonDict | None:
    """The ownerReference with `controller: true`, if any."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller"):
            return dict(ref)
    return None


def index_by_namespace(obj: JsonDict) -> list[str]:
    ns = (obj.get("metadata") or {}).get("namespace")
    return [ns] if ns else []


def index_by_controller_uid(obj: JsonDict) -> list[str]:
    owner = controller_owner(obj)
    return [owner["uid"]] if owner and owner.get("uid") else []


def index_by_job_name(obj: JsonDict) -> list[str]:
    """ "<namespace>/<job-name label>", so equally named jobs in two namespaces never mix."""
    meta = obj.get("metadata") or {}
    job = (meta.get("labels") or {}).get(JOB_NAME_LABEL)
    return [f"{meta.get('namespace', '')}/{job}"] if job else []


def index_by_name_prefix(obj: JsonDict) -> list[str]:
    """ "<namespace>/<p>" for every dash-separated prefix p of the name ("a-b-c": a, a-b, a-b-c).

    A job's children are all named `<job>` or `<job>-<suffix>`, so looking up "<ns>/<job>" finds
    every object that could carry one of its children's names, whoever owns it: what a
    planner needs to refuse a namesake it does not control (the `namesakes` observe hint).
    """
    meta = obj.get("metadata") or {}
    name = str(meta.get("name") or "")
    if not name:
        return []
    ns = meta.get("namespace", "")
    parts = name.split("-")
    return [f"{ns}/{'-'.join(parts[: i + 1])}" for i in range(len(parts))]


DEFAULT_INDEXERS: dict[str, IndexFunc] = {
    INDEX_NAMESPACE: index_by_namespace,
    INDEX_OWNER_UID: index_by_controller_uid,
    INDEX_JOB_NAME: index_by_job_name,
}


@dataclass(frozen=True)
class Change:
    """What a store mutation did, for event handlers: old is None on add, new is None on delete."""

    type: Literal["ADDED", "MODIFIED", "DELETED"]
    old: JsonDict | None
    new: JsonDict | None


ChangeList = list[Change]


def _rv(obj: JsonDict | None) -> str | None:
    return None if obj is None else (obj.get("metadata") or {}).get("resourceVersion")


class Store:
    """Objects by key plus secondary indexes (index name -> value -> keys)."""

    def __init__(self, trim: Trim | None = None, indexers: dict[str, IndexFunc] | None = None) -> None:
        self._trim = trim
        self._items: dict[str, JsonDict] = {}
        self._indexers = dict(DEFAULT_INDEXERS if indexers is None else indexers)
        # index name -> value -> keys, a dict used as a set (half a set's size). No reverse map
        # from key to values: stored objects are never mutated, so the index functions applied
        # to the stored object give its values again when it leaves (~450 B per pod saved).
        self._indices: dict[str, dict[str, dict[str, None]]] = {name: {} for name in self._indexers}

    # -- reads -------------------------------------------------------------------------------

    def get(self, namespace: str | None, name: str) -> JsonDict | None:
        return self._items.get(f"{namespace}/{name}" if namespace else name)

    def get_by_key(self, key: str) -> JsonDict | None:
        return self._items.get(key)

    def list(self, namespace: str | None = None) -> JsonList:
        if namespace is None:
            return list(self._items.values())
        return self.by_index(INDEX_NAMESPACE, namespace)

    def by_index(self, index: str, value: str) -> JsonList:
        keys = self._indices[index].get(value)
        if not keys:
            return []
        return [self._items[k] for k in sorted(keys)]

    def keys(self) -> Iterator[str]:
        return iter(self._items)

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: str) -> bool:
        return key in self._items

    # -- writes (from the reflector) ---------------------------------------------------------

    def trimmed(self, obj: JsonDict) -> JsonDict:
        """`obj` as this store keeps it."""
        return self._trim(obj) if self._trim else obj

    def upsert(self, obj: JsonDict, *, trimmed: bool = False) -> Change | None:
        """Add or replace; None when the stored object has the same resourceVersion (no change).

        `trimmed`: `obj` already went through `trimmed()`."""
        key = object_key(obj)
        old = self._items.get(key)
        if old is not None and _rv(old) == _rv(obj) and _rv(obj) is not None:
            return None
        new = obj if trimmed or not self._trim else self._trim(obj)
        self._put(key, new)
        return Change("ADDED" if old is None else "MODIFIED", old, new)

    def remove(self, obj: JsonDict) -> Change | None:
        key = object_key(obj)
        old = self._items.pop(key, None)
        if old is None:
            return None
        self._unindex(key, old)
        return Change("DELETED", old, None)

    def replace(self, objs: JsonList, *, trimmed: bool = False) -> ChangeList:
        """Swap in a fresh list (after a relist) and report the difference as changes."""
        changes: ChangeList = []
        seen: set[str] = set()
        for obj in objs:
            seen.add(object_key(obj))
            change = self.upsert(obj, trimmed=trimmed)
            if change is not None:
                changes.append(change)
        for key in [k for k in self._items if k not in seen]:
            old = self._items.pop(key)
            self._unindex(key, old)
            changes.append(Change("DELETED", old, None))
        return changes

    def _put(self, key: str, obj: JsonDict) -> None:
        old = self._items.get(key)
        if old is not None:
            self._unindex(key, old)
        self._items[key] = obj
        for name, func in self._indexers.items():
            index = self._indices[name]
            for v in func(obj):
                bucket = index.get(v)
                if bucket is None:
                    index[v] = {key: None}
                else:
                    bucket[key] = None

    def _unindex(self, key: str, obj: JsonDict) -> None:
        """Take `key` out of the indexes, at the values of `obj`, the object stored under it."""
        for name, func in self._indexers.items():
            index = self._indices[name]
            for v in func(obj):
                bucket = index.get(v)
                if bucket is not None:
                    bucket.pop(key, None)
                    if not bucket:
                        del index[v]
