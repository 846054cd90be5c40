"""What one sync of a StatefulSet does, as data: the pods to create, delete or relabel, and the status.

A pure function of the set, its pods, its current and update revisions and the time, transcribed
from kube-controller-manager's pkg/controller/statefulset/stateful_set_control.go
(``updateStatefulSet``, ``processReplica``, ``processCondemned``, ``computeReplicaStatus``,
``completeRollingUpdate``) so that the embedded plane orders pods exactly as Kubernetes does:

* ``OrderedReady`` (the default, "monotonic"): at most one action per sync. Ordinals are visited
  from the lowest; a missing pod is created, a Failed or Succeeded pod is deleted (and recreated
  on a later sync, once it is gone), and the visit stops at the first pod that is terminating or
  not Running and Ready (and available for ``minReadySeconds``). Only when every wanted pod is
  healthy is a pod beyond ``replicas`` deleted, the highest ordinal first, one at a time.
* ``Parallel``: every missing pod is created and every condemned pod deleted in the same sync.
* ``RollingUpdate``: after that, the highest-ordinal pod (at or above ``partition``) whose
  revision is not the update revision is deleted, one at a time, waiting for unavailable pods;
  ``OnDelete`` leaves pods alone. Pods below ``partition`` are (re)created at the current revision.

The status is counted from the pods as observed, before the actions land, as upstream does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubetrain.embedded.statefulset.identity import (
    REVISION_LABEL,
    identity_labels,
    identity_matches,
    new_pod,
    ordinal,
)
from kubetrain.kube.timefmt import parse_epoch

JsonDict = dict[str, Any]


@dataclass
class Plan:
    creates: list[JsonDict] = field(default_factory=list)
    deletes: list[JsonDict] = field(default_factory=list)
    relabels: list[tuple[JsonDict, dict[str, str]]] = field(default_factory=list)
    status: JsonDict = field(default_factory=dict)
    requeue_after: float | None = None
    """A pod becomes available ``minReadySeconds`` after it is Ready: look again then."""


@dataclass(frozen=True)
class Revisions:
    current: str
    update: str
    current_template: JsonDict
    update_template: JsonDict
    collision_count: int


def _phase(pod: JsonDict) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


def is_created(pod: JsonDict) -> bool:
    return _phase(pod) != ""


def is_terminating(pod: JsonDict) -> bool:
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def _ready_condition(pod: JsonDict) -> JsonDict | None:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c.get("type") == "Ready"), None)


def is_running_and_ready(pod: JsonDict) -> bool:
    cond = _ready_condition(pod)
    return _phase(pod) == "Running" and cond is not None and cond.get("status") == "True"


def _available_in(pod: JsonDict, min_ready: int, now: float) -> float:
    """Seconds until a Running and Ready pod counts as available (0: it is; inf: not ready)."""
    if not is_running_and_ready(pod):
        return float("inf")
    if min_ready <= 0:
        return 0.0
    since = parse_epoch((_ready_condition(pod) or {}).get("lastTransitionTime"))
    if since is None:
        return float(min_ready)
    return max(since + min_ready - now, 0.0)


def _available(pod: JsonDict, min_ready: int, now: float) -> bool:
    return _available_in(pod, min_ready, now) == 0.0


def _unavailable(pod: JsonDict, min_ready: int, now: float) -> bool:
    return not is_created(pod) or is_terminating(pod) or not _available(pod, min_ready, now)


def _revision(pod: JsonDict) -> str:
    return str(((pod.get("metadata") or {}).get("labels") or {}).get(REVISION_LABEL) or "")


def replica_status(pods: list[JsonDict], min_ready: int, revisions: Revisions, now: float) -> JsonDict:
    """computeReplicaStatus: the counts Kubernetes writes into ``status``."""
    counts = {
        "replicas": 0,
        "readyReplicas": 0,
        "availableReplicas": 0,
        "currentReplicas": 0,
        "updatedReplicas": 0,
    }
    for pod in pods:
        if is_created(pod):
            counts["replicas"] += 1
        if is_running_and_ready(pod):
            counts["readyReplicas"] += 1
            if _available(pod, min_ready, now):
                counts["availableReplicas"] += 1
        if is_created(pod) and not is_terminating(pod):
            if _revision(pod) == revisions.current:
                counts["currentReplicas"] += 1
            if _revision(pod) == revisions.update:
                counts["updatedReplicas"] += 1
    return counts


def _int(value: Any, default: int) -> int:
    return default if value is None else int(value)


def plan(set_: JsonDict, pods: list[JsonDict], revisions: Revisions, now: float) -> Plan:
    """One sync's actions and status. `pods` are the set's own (controller ref and name match)."""
    out = _plan(set_, pods, revisions, now)
    strategy_type = ((set_.get("spec") or {}).get("updateStrategy") or {}).get("type") or "RollingUpdate"
    status = out.status
    if (  # completeRollingUpdate: once every pod is updated and ready, the update is the current
        strategy_type == "RollingUpdate"
        and status["updatedReplicas"] == status["replicas"]
        and status["readyReplicas"] == status["replicas"]
    ):
        status["currentReplicas"] = status["updatedReplicas"]
        status["currentRevision"] = status["updateRevision"]
    return out


def _plan(set_: JsonDict, pods: list[JsonDict], revisions: Revisions, now: float) -> Plan:
    spec = set_.get("spec") or {}
    meta = set_.get("metadata") or {}
    replicas = _int(spec.get("replicas"), 1)
    min_ready = _int(spec.get("minReadySeconds"), 0)
    start = _int((spec.get("ordinals") or {}).get("start"), 0)
    strategy = spec.get("updateStrategy") or {}
    strategy_type = strategy.get("type") or "RollingUpdate"
    partition = _int((strategy.get("rollingUpdate") or {}).get("partition"), 0)
    monotonic = (spec.get("podManagementPolicy") or "OrderedReady") != "Parallel"

    slots: list[JsonDict | None] = [None] * replicas
    condemned: list[JsonDict] = []
    for pod in pods:
        index = ordinal(pod)
        if start <= index < start + replicas:
            slots[index - start] = pod
        elif index >= 0:
            condemned.append(pod)
    condemned.sort(key=ordinal, reverse=True)

    out = Plan()
    out.status = {
        "observedGeneration": meta.get("generation"),
        "currentRevision": revisions.current,
        "updateRevision": revisions.update,
        "collisionCount": revisions.collision_count,
        **replica_status([*[p for p in slots if p], *condemned], min_ready, revisions, now),
    }
    waits = [_available_in(p, min_ready, now) for p in pods if is_running_and_ready(p)]
    pending = [w for w in waits if 0.0 < w < float("inf")]
    out.requeue_after = min(pending) if pending else None
    if meta.get("deletionTimestamp"):
        return out

    wanted: list[JsonDict] = []
    for i, slot in enumerate(slots):
        index = start + i
        if slot is None:
            at_current = strategy_type == "RollingUpdate" and index < partition
            template = revisions.current_template if at_current else revisions.update_template
            revision = revisions.current if at_current else revisions.update
            wanted.append(new_pod(set_, template, index, revision))
        else:
            wanted.append(slot)

    first_unavailable = next((p for p in wanted if _unavailable(p, min_ready, now)), None)
    if first_unavailable is None:
        first_unavailable = next((p for p in reversed(condemned) if _unavailable(p, min_ready, now)), None)

    for i, pod in enumerate(wanted):
        if slots[i] is None:
            out.creates.append(pod)
            if monotonic:
                return out
            continue
        if _phase(pod) in ("Failed", "Succeeded"):
            if not is_terminating(pod):
                out.deletes.append(pod)
            if monotonic:
                return out
            continue
        if monotonic and (is_terminating(pod) or not _available(pod, min_ready, now)):
            return out
        if not identity_matches(set_, pod):
            name = str((pod.get("metadata") or {}).get("name"))
            out.relabels.append((pod, identity_labels(name, start + i)))

    for pod in condemned:
        if is_terminating(pod):
            if monotonic:
                return out
            continue
        if monotonic and pod is not first_unavailable and not _available(pod, min_ready, now):
            return out
        out.deletes.append(pod)
        if monotonic:
            return out

    if strategy_type == "OnDelete":
        return out
    for index in range(len(wanted) - 1, partition - 1, -1):
        pod = wanted[index]
        if _revision(pod) != revisions.update and not is_terminating(pod):
            if all(pod is not d for d in out.deletes):
                out.deletes.append(pod)
            out.status["currentReplicas"] -= 1
            return out
        if _unavailable(pod, min_ready, now):
            return out
    return out
