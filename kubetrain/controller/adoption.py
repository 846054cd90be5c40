"""Which services belong to the job: claim, adopt and release (docs/upstream-behaviour.md#reconcile).

Upstream lists services by the job's labels and claims them like controller-runtime's
ControllerRefManager: an orphan that matches is adopted (so a service left behind by an
orphaning delete is reused instead of blocking the name), one we own that stopped matching is
released. Pods are not adopted: upstream ignores orphan pods, and so do we.
"""

from __future__ import annotations

from collections.abc import Iterable

from kubetrain.api.kinds import KindInfo
from kubetrain.api.types import TrainingJob
from kubetrain.controller.names import (
    JsonDict,
    NamedJob,
    controller_of,
    is_terminating,
    job_labels,
    labels_of,
    meta,
    name_of,
    object_ref,
    owner_reference,
)
from kubetrain.controller.plan import Action, PatchObject


def owned_pods(job: NamedJob, pods: Iterable[JsonDict]) -> tuple[list[JsonDict], frozenset[str]]:
    """The pods whose controller ownerReference is this job (orphans are ignored), and the names
    of the other observed pods that no pod of ours holds (a create under such a name would fail).

    One pass over the pods: a plan runs on every event of a job, 10,000 pods for the largest."""
    uid = job.uid
    owned: list[JsonDict] = []
    others: set[str] = set()
    for pod in pods:
        ref = controller_of(pod)
        if uid and ref is not None and ref.get("uid") == uid:
            owned.append(pod)
        else:
            others.add(name_of(pod))
    if others:
        others.difference_update(name_of(pod) for pod in owned)
    return owned, frozenset(others)


def claim_services(
    info: KindInfo, job: TrainingJob, services: Iterable[JsonDict]
) -> tuple[list[JsonDict], list[Action]]:
    """The services the job owns after claiming, and the patches that adopt or release others.

    The patches carry the service's uid in `metadata`, which the API server treats as a
    precondition: a same-named service recreated meanwhile is not touched. A service we control
    that still matches costs one label comparison and no copy (the steady state of a big job).
    """
    selector = list(job_labels(info, job).items())
    uid = job.uid
    owned: list[JsonDict] = []
    actions: list[Action] = []
    for svc in services:
        labels = labels_of(svc)
        matches = all(labels.get(key) == value for key, value in selector)
        ref = controller_of(svc)
        if ref is not None:
            if ref.get("uid") != uid or not uid:
                continue
            if matches:
                owned.append(svc)
            elif not is_terminating(svc):
                kept = [r for r in _refs(svc) if r.get("uid") != uid]
                actions.append(_refs_patch(svc, kept))
            continue
        if not matches or is_terminating(svc) or not uid:
            continue
        actions.append(_refs_patch(svc, [*_refs(svc), owner_reference(info, job)]))
        owned.append(svc)
    return owned, actions


def _refs(obj: JsonDict) -> list[JsonDict]:
    refs = meta(obj).get("ownerReferences")
    return [r for r in refs if isinstance(r, dict)] if isinstance(refs, list) else []


def _refs_patch(obj: JsonDict, refs: list[JsonDict]) -> PatchObject:
    return PatchObject(object_ref(obj), {"metadata": {"ownerReferences": refs, "uid": meta(obj).get("uid")}})
