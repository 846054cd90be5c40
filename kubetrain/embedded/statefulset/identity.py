"""A StatefulSet pod's identity: its ordinal name, labels, hostname/subdomain and owner.

Kubernetes' pkg/controller/statefulset/stateful_set_utils.go (``getParentNameAndOrdinal``,
``newStatefulSetPod``, ``initIdentity``, ``updateIdentity``, ``identityMatches``) and
controller.GetPodFromTemplate: the pod is the template's labels, annotations, finalizers and spec,
``generateName: <set>-`` (as GetPodFromTemplate sets it, although the name is always given),
name ``<set>-<ordinal>``, labels ``statefulset.kubernetes.io/pod-name`` and
``apps.kubernetes.io/pod-index``, ``hostname`` = the pod's name and ``subdomain`` =
``spec.serviceName``, so that each pod resolves as ``<set>-<i>.<serviceName>`` through the
headless Service. Pure functions: no I/O.
"""

from __future__ import annotations

import copy
import re
from typing import Any

JsonDict = dict[str, Any]

POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
REVISION_LABEL = "controller-revision-hash"
"""On a pod: the name of the ControllerRevision it was made from."""
HASH_LABEL = "controller.kubernetes.io/hash"
"""On a ControllerRevision: its bare hash (Kubernetes 1.36; older releases wrote REVISION_LABEL)."""
API_VERSION = "apps/v1"
KIND = "StatefulSet"

_ORDINAL = re.compile(r"^(.*)-([0-9]+)$")
_INT32_MAX = 2**31 - 1


def parent_and_ordinal(name: str) -> tuple[str, int]:
    """(parent set name, ordinal) from a pod name; ("", -1) for a name that is not ``<set>-<i>``."""
    match = _ORDINAL.match(name)
    if match is None:
        return "", -1
    ordinal = int(match.group(2))
    return (match.group(1), ordinal) if ordinal <= _INT32_MAX else (match.group(1), -1)


def ordinal(pod: JsonDict) -> int:
    return parent_and_ordinal(str((pod.get("metadata") or {}).get("name") or ""))[1]


def is_member(set_: JsonDict, pod: JsonDict) -> bool:
    """Whether the pod's name makes it a member of the set (the controller's ``isMemberOf``)."""
    name = str((pod.get("metadata") or {}).get("name") or "")
    return parent_and_ordinal(name)[0] == (set_.get("metadata") or {}).get("name")


def pod_name(set_: JsonDict, index: int) -> str:
    return f"{(set_.get('metadata') or {}).get('name')}-{index}"


def controller_ref(set_: JsonDict) -> JsonDict:
    meta = set_.get("metadata") or {}
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "name": meta.get("name"),
        "uid": meta.get("uid"),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def owned_by(obj: JsonDict, uid: str) -> bool:
    refs = (obj.get("metadata") or {}).get("ownerReferences") or []
    return any(r.get("controller") and r.get("uid") == uid for r in refs)


def identity_labels(pod_name_: str, index: int) -> dict[str, str]:
    return {POD_NAME_LABEL: pod_name_, POD_INDEX_LABEL: str(index)}


def identity_matches(set_: JsonDict, pod: JsonDict) -> bool:
    """The pod has the name, namespace and identity labels of its ordinal in the set."""
    meta = pod.get("metadata") or {}
    parent, index = parent_and_ordinal(str(meta.get("name") or ""))
    smeta = set_.get("metadata") or {}
    labels = meta.get("labels") or {}
    return (
        index >= 0
        and parent == smeta.get("name")
        and meta.get("namespace") == smeta.get("namespace")
        and all(labels.get(k) == v for k, v in identity_labels(str(meta.get("name")), index).items())
    )


def new_pod(set_: JsonDict, template: JsonDict, index: int, revision: str) -> JsonDict:
    """The pod of ordinal `index`, made from `template` (the template of `revision`)."""
    smeta = set_.get("metadata") or {}
    tmeta = template.get("metadata") or {}
    name = pod_name(set_, index)
    spec = copy.deepcopy(template.get("spec") or {})
    spec["hostname"] = name
    spec["subdomain"] = (set_.get("spec") or {}).get("serviceName") or ""
    if not spec["subdomain"]:
        del spec["subdomain"]
    meta: JsonDict = {
        "name": name,
        "generateName": f"{smeta.get('name')}-",
        "namespace": smeta.get("namespace") or "default",
        "labels": {**(tmeta.get("labels") or {}), **identity_labels(name, index), REVISION_LABEL: revision},
        "ownerReferences": [controller_ref(set_)],
    }
    if tmeta.get("annotations"):
        meta["annotations"] = dict(tmeta["annotations"])
    if tmeta.get("finalizers"):
        meta["finalizers"] = list(tmeta["finalizers"])
    _claims_as_empty_dirs(set_, spec)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def _claims_as_empty_dirs(set_: JsonDict, spec: JsonDict) -> None:
    """volumeClaimTemplates: the local plane provisions no volumes, so each claim is an emptyDir
    of the same name (its mounts work; its data lives as long as the pod). The controller says so
    in a Warning event; Kubernetes would mount ``<claim>-<set>-<i>`` PersistentVolumeClaims."""
    claims = [str((c.get("metadata") or {}).get("name") or "") for c in claim_templates(set_)]
    if not claims:
        return
    volumes = [v for v in spec.get("volumes") or [] if v.get("name") not in claims]
    spec["volumes"] = [{"name": c, "emptyDir": {}} for c in claims if c] + volumes


def claim_templates(set_: JsonDict) -> list[JsonDict]:
    return list((set_.get("spec") or {}).get("volumeClaimTemplates") or [])
