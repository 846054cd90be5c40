"""Projections of cached objects down to the fields the reconciler reads.

A full Pod dict costs ~47 KB in Python (~24 KB without managedFields); the trimmed projection
below is a small fraction of that, which is what lets 10,000 pods fit in well under 100 MB
(docs/upstream-behaviour.md#caches). Keys and short strings are interned: every pod repeats the
same keys and label values, so sharing them is most of the remaining saving.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from sys import intern
from typing import Any

from kubetrain.kube.jsonsafe import transform
from kubetrain.runtime.share import Sharer

JsonDict = dict[str, Any]
Trim = Callable[[JsonDict], JsonDict]

_INTERN_MAX = 64
_FAST_DEPTH = 32

_META_KEYS = (
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "deletionTimestamp",
    "creationTimestamp",
)
_POD_SPEC_KEYS = ("nodeName", "restartPolicy", "schedulerName")
_POD_STATUS_KEYS = (
    "phase",
    "reason",
    "message",
    "conditions",
    "containerStatuses",
    "initContainerStatuses",
    "podIP",
    "startTime",
)
_CONDITION_KEYS = ("type", "status", "reason", "message", "lastTransitionTime")
# Unique per object: interning them would only add an intern-table entry each (~50 B). Not
# creationTimestamp: the pods of a job are mostly created in the same second, so one string serves.
_UNIQUE_META_KEYS = frozenset({"name", "uid", "resourceVersion"})
_SERVICE_SPEC_KEYS = ("clusterIP", "selector", "ports", "publishNotReadyAddresses")


def compact(value: Any, _depth: int = 0) -> Any:
    """A deep copy with interned keys and short strings, so identical strings are stored once.

    String leaves (most of a pod's metadata) are handled inline: one call per container, not per
    string, is what keeps trimming cheap on the watch path. Recursion stops at `_FAST_DEPTH`
    levels; deeper subtrees (user data a real API server accepts up to 10,000 deep) are copied
    by the iterative walker, so no object can make trimming raise.
    """
    if _depth >= _FAST_DEPTH:
        return transform(value, _intern_leaf, _intern_key)
    if type(value) is dict:
        depth = _depth + 1
        return {
            intern(k) if type(k) is str else k: (
                intern(v) if type(v) is str and len(v) <= _INTERN_MAX else compact(v, depth)
            )
            for k, v in value.items()
        }
    if type(value) is list:
        depth = _depth + 1
        return [intern(v) if type(v) is str and len(v) <= _INTERN_MAX else compact(v, depth) for v in value]
    return _intern_leaf(value)


def _intern_leaf(value: Any) -> Any:
    return intern(value) if type(value) is str and len(value) <= _INTERN_MAX else value


def _intern_key(key: Any) -> Any:
    return intern(key) if type(key) is str else key


_share = Sharer()
"""Equal ownerReferences, pod specs, pod statuses and conditions are stored once: a job's pods have
the same owners and spec, pods waiting for the same thing the same status, and pods that changed
state in the same second the same conditions."""


def _pick(src: JsonDict | None, keys: Iterable[str], as_is: frozenset[str] = frozenset()) -> JsonDict:
    if not src or type(src) is not dict:
        return {}
    return {k: src[k] if k in as_is and type(src[k]) is str else compact(src[k]) for k in keys if k in src}


def _names(items: list[JsonDict] | None) -> list[JsonDict]:
    if type(items) is not list:
        return []
    return [{"name": intern(c["name"])} for c in items if type(c) is dict and type(c.get("name")) is str]


def trim_metadata(meta: JsonDict | None) -> JsonDict:
    out = _pick(meta, _META_KEYS, _UNIQUE_META_KEYS)
    annotations = out.get("annotations")
    if type(annotations) is dict and "kubectl.kubernetes.io/last-applied-configuration" in annotations:
        out["annotations"] = {
            k: v for k, v in annotations.items() if k != "kubectl.kubernetes.io/last-applied-configuration"
        }
    return out


def trim_pod(pod: JsonDict) -> JsonDict:
    """metadata, spec{nodeName, restartPolicy, schedulerName, container names}, status essentials."""
    spec = pod.get("spec") or {}
    out_spec = _pick(spec, _POD_SPEC_KEYS)
    out_spec["containers"] = _names(spec.get("containers"))
    if spec.get("initContainers"):
        out_spec["initContainers"] = _names(spec.get("initContainers"))
    status = _pick(pod.get("status"), _POD_STATUS_KEYS)
    conditions = status.get("conditions")
    if type(conditions) is list:
        status["conditions"] = _share(
            [{k: c[k] for k in _CONDITION_KEYS if k in c} if type(c) is dict else c for c in conditions]
        )
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": _shared_owners(trim_metadata(pod.get("metadata"))),
        "spec": _share(out_spec),
        "status": _share(status),
    }


def _shared_owners(meta: JsonDict) -> JsonDict:
    if "ownerReferences" in meta:
        meta["ownerReferences"] = _share(meta["ownerReferences"])
    return meta


def trim_service(svc: JsonDict) -> JsonDict:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _shared_owners(trim_metadata(svc.get("metadata"))),
        "spec": _pick(svc.get("spec"), _SERVICE_SPEC_KEYS),
    }


def trim_generic(obj: JsonDict) -> JsonDict:
    """Everything but managedFields and the last-applied annotation (jobs, PodGroups, HPAs ...).

    The planner reads whole job specs, and these kinds number one per job, so they are only
    stripped of the two fields that are pure bookkeeping and often the largest.
    """
    out = {k: compact(v) for k, v in obj.items() if k != "metadata"}
    meta = obj.get("metadata")
    meta = meta if type(meta) is dict else {}  # an API server never serves another shape
    out["metadata"] = trim_metadata(meta)
    extra = {
        k: compact(v)
        for k, v in meta.items()
        if k not in _META_KEYS and k not in ("managedFields", "selfLink")
    }
    out["metadata"].update(extra)
    return out


def trim_for(api_version: str, kind: str) -> Trim:
    if api_version == "v1" and kind == "Pod":
        return trim_pod
    if api_version == "v1" and kind == "Service":
        return trim_service
    return trim_generic
