"""Which services belong to the job: claim, adopt and release (spec §3.5 step 1).

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
    controller_of,
    is_controlled_by,
    is_terminating,
    job_labels,
    labels_of,
    meta,
    object_ref,
    owner_reference,
)
from kubetrain.controller.plan import Action, PatchObject


def owned_pods(job: TrainingJob, pods: Iterable[JsonDict]) -> list[JsonDict]:
    """The pods whose controller ownerReference is this job (orphans are ignored)."""
    return [pod for pod in pods if is_controlled_by(pod, job.uid)]


def claim_services(
    info: KindInfo, job: TrainingJob, services: Iterable[JsonDict]
) -> tuple[list[JsonDict], list[Action]]:
    """The services the job owns after claiming, and the patches that adopt or release others.

    The patches carry the service's uid in `metadata`, which the API server treats as a
    precondition: a same-named service recreated meanwhile is not touched.
    """
    selector = job_labels(info, job)
    owned: list[JsonDict] = []
    actions: list[Action] = []
    for svc in services:
        labels = labels_of(svc)
        matches = all(labels.get(key) == value for key, value in selector.items())
        ref = controller_of(svc)
        refs = meta(svc).get("ownerReferences")
        refs = [r for r in refs if isinstance(r, dict)] if isinstance(refs, list) else []
        uid = meta(svc).get("uid")
        if ref is not None:
            if ref.get("uid") != job.uid or not job.uid:
                continue
            if matches:
                owned.append(svc)
            elif not is_terminating(svc):
                kept = [r for r in refs if r.get("uid") != job.uid]
                actions.append(
                    PatchObject(object_ref(svc), {"metadata": {"ownerReferences": kept, "uid": uid}})
                )
            continue
        if not matches or is_terminating(svc) or not job.uid:
            continue
        adopted = [*refs, owner_reference(info, job)]
        actions.append(PatchObject(object_ref(svc), {"metadata": {"ownerReferences": adopted, "uid": uid}}))
        owned.append(svc)
    return owned, actions
