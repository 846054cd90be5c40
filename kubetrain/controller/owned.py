"""Children a planner owns outright: owner references, object lookup, and the "get, else
create; not ours, refuse; differs, update" step every such child goes through.

The planners of MPIJob and of the historical kinds (ChainerJob, Caffe2Job) treat a same-named
object they do not control as an error (`ErrResourceExists`) instead of adopting it, so a
user's ConfigMap or Role is never hijacked; the refusal sets `Plan.retry`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Literal

from kubetrain.api.conditions import TRUE
from kubetrain.controller.names import JsonDict, is_controlled_by, meta, name_of, object_ref
from kubetrain.controller.plan import CreateObject, Event, MetricIncrement, Observed, PatchObject, Plan

ERR_RESOURCE_EXISTS = "ErrResourceExists"
LABEL_APP = "app"

CONFIG_MAP = ("v1", "ConfigMap")
SECRET = ("v1", "Secret")
SERVICE = ("v1", "Service")
SERVICE_ACCOUNT = ("v1", "ServiceAccount")
ROLE = ("rbac.authorization.k8s.io/v1", "Role")
ROLE_BINDING = ("rbac.authorization.k8s.io/v1", "RoleBinding")
BATCH_JOB = ("batch/v1", "Job")
STATEFUL_SET = ("apps/v1", "StatefulSet")
POD = ("v1", "Pod")

EventType = Literal["Normal", "Warning"]
Differ = Callable[[JsonDict, JsonDict], JsonDict | None]
"""(observed, desired) -> the merge patch that brings observed in line, or None when it is."""


def not_managed(name: str, kind: str) -> str:
    """The message of a refused same-named object, for a kind without a message of its own."""
    return f'Resource "{name}" already exists and is not managed by the job'


def controller_ref(api_version: str, kind: str, name: str, uid: str) -> JsonDict:
    """`metav1.NewControllerRef`: the single controller reference of every child."""
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": name,
        "uid": uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def find(objs: Iterable[JsonDict], name: str) -> JsonDict | None:
    for obj in objs:
        if name_of(obj) == name:
            return obj
    return None


@dataclass
class OwnedObjects:
    """The owned children of one job, written into the plan being built."""

    observed: Observed
    uid: str
    namespace: str
    owner: JsonDict
    exists_message: Callable[[str, str], str]
    """(name, kind) -> the ErrResourceExists message of this kind's controller."""
    plan: Plan = field(default_factory=Plan)
    blocked: bool = False
    """An ErrResourceExists stopped this pass (upstream returns the error and requeues)."""

    def event(self, etype: EventType, reason: str, message: str) -> None:
        self.plan.events.append(Event(etype, reason, message))

    def metric(self, name: str, **labels: str) -> None:
        self.plan.metrics.append(MetricIncrement(name, labels))

    def objects(self, kind: tuple[str, str]) -> list[JsonDict]:
        found = list(self.observed.of(*kind))
        if kind == POD:
            found.extend(self.observed.pods)
        elif kind == SERVICE:
            found.extend(self.observed.services)
        return found

    def get(self, kind: tuple[str, str], name: str) -> JsonDict | None:
        return find(self.objects(kind), name)

    def controlled(self, obj: JsonDict) -> bool:
        if is_controlled_by(obj, self.uid):
            return True
        message = self.exists_message(name_of(obj), str(obj.get("kind", "")))
        self.event("Warning", ERR_RESOURCE_EXISTS, message)
        self.blocked = True
        self.plan.retry = True
        return False

    def ensure(self, desired: JsonDict, differ: Differ | None = None) -> JsonDict | None:
        """Create `desired` when absent; when present and ours, patch it if `differ` says so.

        Returns the observed object (None when it is being created); sets `blocked` and returns
        None when a same-named object belongs to someone else.
        """
        kind = (str(desired["apiVersion"]), str(desired["kind"]))
        current = self.get(kind, name_of(desired))
        if current is None:
            self.plan.actions.append(CreateObject(desired))
            return None
        if not self.controlled(current):
            return None
        if differ is not None:
            patch = differ(current, desired)
            if patch:
                self.plan.actions.append(PatchObject(object_ref(current), patch))
        return current

    def new_meta(self, name: str, labels: dict[str, str] | None = None) -> JsonDict:
        metadata: JsonDict = {"name": name, "namespace": self.namespace}
        if labels:
            metadata["labels"] = dict(labels)
        metadata["ownerReferences"] = [dict(self.owner)]
        return metadata


def data_differ(current: JsonDict, desired: JsonDict) -> JsonDict | None:
    """ConfigMaps: `data` replaced when it differs (keys we no longer want are removed)."""
    have = as_dict(current.get("data"))
    want = desired.get("data") or {}
    if have == want:
        return None
    patch = dict(want)
    for key in have:
        if key not in want:
            patch[key] = None
    return {"data": patch}


def rules_differ(current: JsonDict, desired: JsonDict) -> JsonDict | None:
    """Roles: `rules` replaced when they differ."""
    return None if current.get("rules") == desired.get("rules") else {"rules": desired.get("rules")}


def labels_of_meta(obj: JsonDict) -> dict[str, str]:
    labels = meta(obj).get("labels")
    return {str(k): str(v) for k, v in labels.items()} if isinstance(labels, dict) else {}


def as_dict(value: object) -> JsonDict:
    """`value` when it is an object, else {} (malformed input never raises in a planner)."""
    return value if isinstance(value, dict) else {}


def exit_detail(pod: JsonDict) -> str:
    """ "container <c> exited with code <n>" for the first container that failed, else "": what a
    failed launcher's condition message adds so a malformed `mpirun` says how it failed."""
    for item in as_dict(pod.get("status")).get("containerStatuses") or ():
        state = item.get("state") if isinstance(item, dict) else None
        terminated = state.get("terminated") if isinstance(state, dict) else None
        if isinstance(terminated, dict) and terminated.get("exitCode"):
            return f"container {item.get('name')} exited with code {terminated['exitCode']}"
    return ""


def job_condition(job: JsonDict, cond_type: str) -> JsonDict | None:
    """A batch/v1 Job's condition of this type when it is True."""
    status = as_dict(job.get("status"))
    for cond in status.get("conditions") or ():
        if isinstance(cond, dict) and cond.get("type") == cond_type and cond.get("status") == TRUE:
            return cond
    return None


def job_finished(job: JsonDict) -> bool:
    """Whether a batch/v1 Job completed or failed."""
    return job_condition(job, "Complete") is not None or job_condition(job, "Failed") is not None
