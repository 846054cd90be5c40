"""In-memory object storage: one global resourceVersion counter, a bounded event history.

The store plays etcd plus the watch cache. Stored dicts are never mutated after they are written
(every write stores a new dict), so events and readers can share them; everything handed to a
caller outside the package is copied first. With a `Journal` attached (`persist_to`) every write
is also kept in a SQLite file, written behind the event loop (see `persistence`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .jsonutil import clone, dumps
from .persistence import Journal

ObjKey = tuple[str, str, str]  # (storage key, namespace, name)


@dataclass(eq=False)
class Event:
    """One committed write: what watchers and controllers learn about."""

    type: str  # ADDED | MODIFIED | DELETED
    key: str
    obj: dict[str, Any]
    old: dict[str, Any] | None
    rv: int
    _wire: dict[tuple[str, str, bool], bytes] = field(default_factory=dict)

    def wire(self, type_: str, api_version: str | None, use_old: bool = False) -> bytes:
        """The watch line for this event, serialized once per (type, apiVersion) and shared."""
        cache_key = (type_, api_version or "", use_old)
        line = self._wire.get(cache_key)
        if line is None:
            obj = self.obj
            if use_old and self.old is not None:
                obj = dict(self.old)
                obj["metadata"] = {**self.old["metadata"], "resourceVersion": str(self.rv)}
            if api_version and obj.get("apiVersion") != api_version:
                obj = {**obj, "apiVersion": api_version}
            line = dumps({"type": type_, "object": obj}) + b"\n"
            self._wire[cache_key] = line
        return line


class TooOld(Exception):
    """The requested resourceVersion is older than the retained history."""

    def __init__(self, requested: int, oldest: int) -> None:
        super().__init__(f"too old resource version: {requested} ({oldest})")
        self.requested = requested
        self.oldest = oldest


def meta_of(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


class Store:
    """Objects by storage key, namespace and name; uid and ownerReference indexes for the GC."""

    def __init__(self, history_size: int = 100_000) -> None:
        self._rv = 0
        self._data: dict[str, dict[str, dict[str, dict[str, Any]]]] = {}
        self._history: deque[Event] = deque()
        self._history_size = history_size
        self._compacted = 0  # events with rv <= this are gone
        # Where each resource's watch window starts, as a watch cache starts at its initial list:
        # a watch from an older resourceVersion is Expired even if the history still has it.
        self._window_default = 0
        self._windows: dict[str, int] = {}
        self._listeners: list[Callable[[Event], None]] = []
        self._uids: dict[str, ObjKey] = {}
        self._dependents: dict[str, set[ObjKey]] = {}
        self._journal: Journal | None = None
        self._rv_covered = 0  # with a journal: resourceVersions up to here are reserved

    # --- reads ---------------------------------------------------------------------------

    @property
    def resource_version(self) -> int:
        return self._rv

    @property
    def compacted_rv(self) -> int:
        return self._compacted

    def get(self, key: str, namespace: str, name: str) -> dict[str, Any] | None:
        return self._data.get(key, {}).get(namespace, {}).get(name)

    def iter(self, key: str, namespace: str | None = None) -> Iterator[dict[str, Any]]:
        """Objects of one resource, optionally one namespace; unordered."""
        spaces = self._data.get(key, {})
        if namespace is not None:
            yield from spaces.get(namespace, {}).values()
            return
        for objs in spaces.values():
            yield from objs.values()

    def count(self, key: str, namespace: str | None = None) -> int:
        spaces = self._data.get(key, {})
        if namespace is not None:
            return len(spaces.get(namespace, {}))
        return sum(len(v) for v in spaces.values())

    def resource_keys(self) -> list[str]:
        return [k for k, v in self._data.items() if any(v.values())]

    def by_uid(self, uid: str) -> ObjKey | None:
        return self._uids.get(uid)

    def dependents_of(self, uid: str) -> list[ObjKey]:
        return sorted(self._dependents.get(uid, ()))

    def snapshot(self, key: str, namespace: str | None = None) -> list[dict[str, Any]]:
        """Deep copies, for in-process debugging and benchmarks only."""
        return [clone(o) for o in self.iter(key, namespace)]

    # --- history -------------------------------------------------------------------------

    def events_since(self, rv: int, key: str) -> list[Event]:
        """Every retained event of ``key`` after ``rv``; TooOld if some were compacted away."""
        oldest = max(self._compacted, self._windows.get(key, self._window_default))
        if rv < oldest:
            raise TooOld(rv, oldest)
        out: list[Event] = []
        for ev in reversed(self._history):
            if ev.rv <= rv:
                break
            if ev.key == key:
                out.append(ev)
        out.reverse()
        return out

    def state_at(self, rv: int, key: str, namespace: str | None = None) -> list[dict[str, Any]]:
        """The objects of ``key`` as they were at ``rv`` (etcd's MVCC read); TooOld once compacted."""
        if rv < self._compacted:
            raise TooOld(rv, self._compacted)
        objs = {(meta_of(o).get("namespace", ""), meta_of(o)["name"]): o for o in self.iter(key, namespace)}
        for ev in reversed(self._history):
            if ev.rv <= rv:
                break
            if ev.key != key:
                continue
            meta = meta_of(ev.obj)
            okey = (meta.get("namespace", ""), meta["name"])
            if namespace is not None and okey[0] != namespace:
                continue
            if ev.type == "ADDED":
                objs.pop(okey, None)
            elif ev.old is not None:
                objs[okey] = ev.old
        return list(objs.values())

    def open_window(self, key: str | None = None) -> None:
        """Start the watch window of ``key`` (or of every resource without its own) here."""
        if key is None:
            self._window_default = self._rv
        else:
            self._windows[key] = self._rv

    def compact(self) -> int:
        """Forget all history up to now, like an etcd compaction followed by a cache reset."""
        self._history.clear()
        self._compacted = self._rv
        return self._rv

    # --- persistence ---------------------------------------------------------------------

    def restore(self, objects: list[tuple[str, dict[str, Any]]], rv: int) -> None:
        """Load what a journal kept (before serving anything), continuing after ``rv``.

        The watch history starts here: a watch or exact list from an older resourceVersion is
        Expired, as after a compaction. Listeners learn every object as ADDED (not in the
        history) so that CRDs are served again and the GC sees what it must finish.
        """
        self._rv = self._compacted = self._window_default = rv
        for key, obj in objects:
            meta = obj["metadata"]
            self._data.setdefault(key, {}).setdefault(meta.get("namespace", ""), {})[meta["name"]] = obj
            self._index(key, obj, add=True)
        for key, obj in objects:
            ev = Event("ADDED", key, obj, None, int(obj["metadata"].get("resourceVersion") or rv))
            for fn in self._listeners:
                fn(ev)

    def persist_to(self, journal: Journal) -> None:
        """Keep every write from now on in ``journal`` (whose writer starts here)."""
        journal.start(self._rv)
        self._journal = journal
        self._rv_covered = journal.cover(self._rv + 1)

    def _next_rv(self) -> int:
        self._rv += 1
        if self._rv > self._rv_covered and self._journal is not None:
            self._rv_covered = self._journal.cover(self._rv)
        return self._rv

    # --- writes --------------------------------------------------------------------------

    def add_listener(self, fn: Callable[[Event], None]) -> None:
        self._listeners.append(fn)

    def _commit(self, ev: Event) -> Event:
        self._history.append(ev)
        while len(self._history) > self._history_size:
            self._compacted = self._history.popleft().rv
        for fn in self._listeners:
            fn(ev)
        return ev

    def _index(self, key: str, obj: dict[str, Any], add: bool) -> None:
        meta = meta_of(obj)
        okey: ObjKey = (key, meta.get("namespace", ""), meta["name"])
        uid = meta.get("uid")
        if uid:
            if add:
                self._uids[uid] = okey
            else:
                self._uids.pop(uid, None)
        for ref in meta.get("ownerReferences") or ():
            owner = ref.get("uid") if isinstance(ref, dict) else None
            if not owner:
                continue
            if add:
                self._dependents.setdefault(owner, set()).add(okey)
            else:
                deps = self._dependents.get(owner)
                if deps is not None:
                    deps.discard(okey)
                    if not deps:
                        del self._dependents[owner]

    def put(self, key: str, obj: dict[str, Any]) -> Event:
        """Create or replace ``obj`` (whose metadata is final except resourceVersion)."""
        rv = self._next_rv()
        meta = obj["metadata"]
        meta["resourceVersion"] = str(rv)
        ns = meta.get("namespace", "")
        bucket = self._data.setdefault(key, {}).setdefault(ns, {})
        old = bucket.get(meta["name"])
        if old is not None:
            self._index(key, old, add=False)
        bucket[meta["name"]] = obj
        self._index(key, obj, add=True)
        if self._journal is not None:
            self._journal.record((key, ns, meta["name"]), obj)
        return self._commit(Event("ADDED" if old is None else "MODIFIED", key, obj, old, rv))

    def remove(
        self, key: str, namespace: str, name: str, final: dict[str, Any] | None = None
    ) -> Event | None:
        """Delete an object; ``final`` is its last state when the delete is also an update."""
        bucket = self._data.get(key, {}).get(namespace, {})
        old = bucket.pop(name, None)
        if old is None:
            return None
        self._index(key, old, add=False)
        rv = self._next_rv()
        last = dict(final if final is not None else old)
        last["metadata"] = {**last["metadata"], "resourceVersion": str(rv)}
        if self._journal is not None:
            self._journal.record((key, namespace, name), None)
        return self._commit(Event("DELETED", key, last, old, rv))

    def rewrite_silently(self, key: str, obj: dict[str, Any]) -> None:
        """Replace an object's stored form without a new resourceVersion or event.

        Used to re-apply CRD schema defaults after a CRD update, which is what a real server's
        defaulting-on-read makes observable.
        """
        meta = obj["metadata"]
        bucket = self._data.get(key, {}).get(meta.get("namespace", ""), {})
        if meta["name"] in bucket:
            bucket[meta["name"]] = obj
            if self._journal is not None:
                self._journal.record((key, meta.get("namespace", ""), meta["name"]), obj)

    def drop_key(self, key: str) -> None:
        """Forget every object of a resource whose type is no longer served."""
        for obj in list(self.iter(key)):
            meta = obj["metadata"]
            self.remove(key, meta.get("namespace", ""), meta["name"])
        self._data.pop(key, None)
