"""Names, labels and owner references of the objects a job owns.

Upstream's: docs/upstream-behaviour.md#names, #labels, #owner-references.

Deterministic names (`<job>-<rt>-<i>`) are what make creates idempotent: a create that already
landed answers AlreadyExists instead of producing a duplicate.
"""

from __future__ import annotations

from typing import Any, Protocol

from kubetrain.api.kinds import (
    API_VERSION,
    LABEL_JOB_NAME,
    LABEL_OPERATOR_NAME,
    LABEL_REPLICA_INDEX,
    LABEL_REPLICA_TYPE,
    KindInfo,
)
from kubetrain.api.types import TrainingJob
from kubetrain.controller.plan import ObjectRef

JsonDict = dict[str, Any]


class NamedJob(Protocol):
    """What every job envelope (TrainingJob, ChainerJob, Caffe2Job) answers."""

    metadata: JsonDict
    status: Any

    @property
    def name(self) -> str: ...
    @property
    def namespace(self) -> str: ...
    @property
    def uid(self) -> str: ...


def replica_name(job_name: str, rtype: str, index: int) -> str:
    """Pod and Service name `<job>-<rt>-<i>`, `rt` lower-cased, `/` replaced by `-`."""
    return f"{job_name}-{rtype.lower()}-{index}".replace("/", "-")


def job_labels(info: KindInfo, job: TrainingJob) -> dict[str, str]:
    """The two labels every child carries; also the selector the runtime lists children with."""
    return {LABEL_OPERATOR_NAME: info.controller_name, LABEL_JOB_NAME: job.name.replace("/", "-")}


def replica_labels(info: KindInfo, job: TrainingJob, rtype: str, index: int) -> dict[str, str]:
    """The four operator labels of one replica: a Service's labels and its selector."""
    labels = job_labels(info, job)
    labels[LABEL_REPLICA_TYPE] = rtype.lower()
    labels[LABEL_REPLICA_INDEX] = str(index)
    return labels


def owner_reference(info: KindInfo, job: TrainingJob) -> JsonDict:
    """The single controller reference every child gets; GC deletes children with the job."""
    return {
        "apiVersion": API_VERSION,
        "kind": info.kind,
        "name": job.name,
        "uid": job.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def job_ref(info: KindInfo, job: NamedJob) -> ObjectRef:
    return ObjectRef(info.api_version, info.kind, job.namespace, job.name, job.uid or None)


def object_ref(obj: JsonDict) -> ObjectRef:
    """A reference to an observed object, with its uid so a delete cannot hit a newer namesake."""
    meta = obj.get("metadata") or {}
    return ObjectRef(
        str(obj.get("apiVersion", "")),
        str(obj.get("kind", "")),
        str(meta.get("namespace", "")),
        str(meta.get("name", "")),
        meta.get("uid") or None,
    )


def meta(obj: JsonDict) -> JsonDict:
    value = obj.get("metadata")
    return value if isinstance(value, dict) else {}


def name_of(obj: JsonDict) -> str:
    return str(meta(obj).get("name", ""))


def labels_of(obj: JsonDict) -> dict[str, Any]:
    value = meta(obj).get("labels")
    return value if isinstance(value, dict) else {}


def is_terminating(obj: JsonDict) -> bool:
    return bool(meta(obj).get("deletionTimestamp"))


def controller_of(obj: JsonDict) -> JsonDict | None:
    """The ownerReference with `controller: true`, if any."""
    refs = meta(obj).get("ownerReferences")
    if not isinstance(refs, list):
        return None
    for ref in refs:
        if isinstance(ref, dict) and ref.get("controller") is True:
            return ref
    return None


def is_controlled_by(obj: JsonDict, uid: str) -> bool:
    ref = controller_of(obj)
    return ref is not None and bool(uid) and ref.get("uid") == uid


def replica_type(obj: JsonDict) -> str | None:
    value = labels_of(obj).get(LABEL_REPLICA_TYPE)
    return value if isinstance(value, str) else None
