"""Builder-style wrappers for controller tests (jobset style): jobs, pods, services, a fake cluster.

    job("PyTorchJob").replicas("Master", 1).replicas("Worker", 2).clean_pod_policy("All").build()
    pod(j, "Worker", 0).running().restarts(2).build()

Jobs come from the builder every tier shares (`tests.builders`), here with a fixed uid.

`Cluster` applies a plan the way the API server would (creates get a uid, deletes honour the uid
precondition, patches are JSON merge patches, the status is replaced) so tests can drive a job
through its life one plan at a time.
"""

from __future__ import annotations

import copy
import itertools
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from kubetrain.api.kinds import (
    API_VERSION,
    LABEL_JOB_NAME,
    LABEL_OPERATOR_NAME,
    LABEL_REPLICA_INDEX,
    LABEL_REPLICA_TYPE,
)
from kubetrain.controller.config import ControllerConfig
from kubetrain.controller.plan import CreateObject, DeleteObject, Observed, PatchObject, Plan
from kubetrain.kinds.registry import REPLICA_SPEC_KINDS as KINDS
from kubetrain.kinds.registry import plan
from kubetrain.kube.timefmt import format_time
from tests.builders import JobBuilder

JsonDict = dict[str, Any]
T0 = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
JOB_UID = "job-uid-1"


def at(seconds: float) -> datetime:
    """`T0` plus some seconds: tests speak in offsets from one fixed instant."""
    return T0 + timedelta(seconds=seconds)


def stamp(seconds: float = 0) -> str:
    return format_time(at(seconds))


def job(kind: str, name: str = "test-job", namespace: str = "default", uid: str = JOB_UID) -> JobBuilder:
    """The shared builder (`tests.builders`) with a fixed uid, as if the API server had stored the job."""
    return JobBuilder(kind, name, namespace, uid)


_uids = itertools.count(1)


def _job_fields(j: JobBuilder | JsonDict) -> tuple[str, str, str, str]:
    raw = j.obj if isinstance(j, JobBuilder) else j
    meta = raw["metadata"]
    return raw["kind"], meta["name"], meta.get("namespace", "default"), meta.get("uid", "")


class PodBuilder:
    def __init__(self, j: JobBuilder | JsonDict, rtype: str, index: int):
        kind, name, namespace, uid = _job_fields(j)
        info = KINDS[kind]
        self.container = info.default_container
        pod_name = f"{name}-{rtype.lower()}-{index}"
        self.obj: JsonDict = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": pod_name,
                "namespace": namespace,
                "uid": f"pod-{pod_name}-{next(_uids)}",
                "labels": {
                    LABEL_OPERATOR_NAME: info.controller_name,
                    LABEL_JOB_NAME: name,
                    LABEL_REPLICA_TYPE: rtype.lower(),
                    LABEL_REPLICA_INDEX: str(index),
                },
                "ownerReferences": [
                    {
                        "apiVersion": API_VERSION,
                        "kind": kind,
                        "name": name,
                        "uid": uid,
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": {"containers": [{"name": self.container, "image": "busybox:1"}]},
            "status": {"phase": "Pending"},
        }

    def phase(self, value: str) -> PodBuilder:
        self.obj["status"]["phase"] = value
        return self

    def pending(self) -> PodBuilder:
        return self.phase("Pending")

    def running(self) -> PodBuilder:
        self.obj["status"]["containerStatuses"] = [
            {"name": self.container, "restartCount": 0, "state": {"running": {"startedAt": stamp()}}}
        ]
        return self.phase("Running")

    def _terminated(self, code: int, reason: str) -> None:
        self.obj["status"]["containerStatuses"] = [
            {
                "name": self.container,
                "restartCount": 0,
                "state": {"terminated": {"exitCode": code, "reason": reason}},
            }
        ]

    def succeeded(self) -> PodBuilder:
        self._terminated(0, "Completed")
        return self.phase("Succeeded")

    def failed(self, exit_code: int | None = 1) -> PodBuilder:
        """Phase Failed; `exit_code` None leaves no terminated state (the 0xbeef sentinel case)."""
        if exit_code is None:
            self.obj["status"].pop("containerStatuses", None)
        else:
            self._terminated(exit_code, "Error")
        return self.phase("Failed")

    def restarts(self, count: int) -> PodBuilder:
        statuses = self.obj["status"].setdefault(
            "containerStatuses", [{"name": self.container, "state": {"running": {}}}]
        )
        statuses[0]["restartCount"] = count
        return self

    def terminating(self) -> PodBuilder:
        self.obj["metadata"]["deletionTimestamp"] = stamp()
        return self

    def orphan(self) -> PodBuilder:
        del self.obj["metadata"]["ownerReferences"]
        return self

    def uid(self, value: str) -> PodBuilder:
        self.obj["metadata"]["uid"] = value
        return self

    def build(self) -> JsonDict:
        return copy.deepcopy(self.obj)


def pod(j: JobBuilder | JsonDict, rtype: str, index: int) -> PodBuilder:
    return PodBuilder(j, rtype, index)


def service(j: JobBuilder | JsonDict, rtype: str, index: int, *, owned: bool = True) -> JsonDict:
    kind, name, namespace, uid = _job_fields(j)
    info = KINDS[kind]
    svc_name = f"{name}-{rtype.lower()}-{index}"
    labels = {
        LABEL_OPERATOR_NAME: info.controller_name,
        LABEL_JOB_NAME: name,
        LABEL_REPLICA_TYPE: rtype.lower(),
        LABEL_REPLICA_INDEX: str(index),
    }
    obj: JsonDict = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": svc_name,
            "namespace": namespace,
            "uid": f"svc-{svc_name}-{next(_uids)}",
            "labels": labels,
        },
        "spec": {"clusterIP": "None", "selector": dict(labels), "ports": []},
    }
    if owned:
        obj["metadata"]["ownerReferences"] = [
            {
                "apiVersion": API_VERSION,
                "kind": kind,
                "name": name,
                "uid": uid,
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
    return obj


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


@dataclass
class Cluster:
    """A tiny API server for one job: applies plans, lets tests play the kubelet."""

    job: JsonDict
    config: ControllerConfig = field(default_factory=ControllerConfig)
    pods: dict[str, JsonDict] = field(default_factory=dict)
    services: dict[str, JsonDict] = field(default_factory=dict)
    others: dict[str, dict[str, JsonDict]] = field(default_factory=dict)
    job_deleted: bool = False

    def observed(self) -> Observed:
        return Observed(
            pods=list(self.pods.values()),
            services=list(self.services.values()),
            others={key: list(objs.values()) for key, objs in self.others.items()},
        )

    def plan(self, now: datetime = T0) -> Plan:
        return plan(copy.deepcopy(self.job), self.observed(), now, self.config)

    def step(self, now: datetime = T0) -> Plan:
        """Plan and apply."""
        result = self.plan(now)
        self.apply(result)
        return result

    def _store(self, api_version: str, kind: str) -> dict[str, JsonDict]:
        if kind == "Pod":
            return self.pods
        if kind == "Service":
            return self.services
        return self.others.setdefault(f"{api_version}/{kind}", {})

    def apply(self, result: Plan) -> None:
        for action in result.actions:
            if isinstance(action, CreateObject):
                obj = copy.deepcopy(action.obj)
                obj["metadata"]["uid"] = f"uid-{next(_uids)}"
                if obj["kind"] == "Pod":
                    obj["status"] = {"phase": "Pending"}
                store = self._store(obj["apiVersion"], obj["kind"])
                assert obj["metadata"]["name"] not in store, f"duplicate create {obj['metadata']['name']}"
                store[obj["metadata"]["name"]] = obj
            elif isinstance(action, DeleteObject):
                ref = action.ref
                if ref.kind == self.job["kind"] and ref.name == self.job["metadata"]["name"]:
                    self.job_deleted = True
                    continue
                store = self._store(ref.api_version, ref.kind)
                current = store.get(ref.name)
                if current is not None and (ref.uid is None or current["metadata"].get("uid") == ref.uid):
                    del store[ref.name]
            elif isinstance(action, PatchObject):
                store = self._store(action.ref.api_version, action.ref.kind)
                store[action.ref.name] = merge_patch(store[action.ref.name], action.patch)
        if result.status is not None:
            self.job["status"] = copy.deepcopy(result.status)

    def set_pods(self, rtype: str | None, fn: Any) -> None:
        """Replace matching pods by `fn(pod_builder)` applied to a builder over a copy."""
        for name, obj in list(self.pods.items()):
            if rtype is not None and obj["metadata"]["labels"][LABEL_REPLICA_TYPE] != rtype.lower():
                continue
            builder = PodBuilder.__new__(PodBuilder)
            builder.obj = copy.deepcopy(obj)
            builder.container = KINDS[self.job["kind"]].default_container
            self.pods[name] = fn(builder).build()


def conditions(status: JsonDict | None) -> list[tuple[str, str, str, str]]:
    """(type, status, reason, message) of each condition, in order."""
    return [
        (c["type"], c["status"], c.get("reason", ""), c.get("message", ""))
        for c in (status or {}).get("conditions", [])
    ]


def actions_summary(result: Plan) -> list[tuple[str, str, str]]:
    """(verb, kind, name) of each action, in order."""
    out = []
    for action in result.actions:
        if isinstance(action, CreateObject):
            out.append(("create", action.obj["kind"], action.obj["metadata"]["name"]))
        elif isinstance(action, DeleteObject):
            out.append(("delete", action.ref.kind, action.ref.name))
        else:
            out.append(("patch", action.ref.kind, action.ref.name))
    return out


def created(result: Plan, kind: str = "Pod") -> dict[str, JsonDict]:
    return {
        a.obj["metadata"]["name"]: a.obj
        for a in result.actions
        if isinstance(a, CreateObject) and a.obj["kind"] == kind
    }


def deleted(result: Plan, kind: str = "Pod") -> list[str]:
    return [a.ref.name for a in result.actions if isinstance(a, DeleteObject) and a.ref.kind == kind]


def env_of(obj: JsonDict, container: int = 0) -> list[tuple[str, Any]]:
    out = []
    for var in obj["spec"]["containers"][container].get("env", []):
        out.append((var["name"], var["value"] if "value" in var else var.get("valueFrom")))
    return out


def event_list(result: Plan) -> list[tuple[str, str, str]]:
    return [(e.type, e.reason, e.message) for e in result.events]
