"""Builders for MPIJob plan tests: jobs of both versions, observed children, and a tiny cluster
that applies plans the way the API server would (so scenarios read like upstream's suites)."""

from __future__ import annotations

import copy
import itertools
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from kubetrain.controller.config import ControllerConfig
from kubetrain.controller.plan import CreateObject, DeleteObject, Observed, PatchObject, Plan
from kubetrain.kinds.mpijob.planner import plan
from kubetrain.kube.timefmt import format_time

JsonDict = dict[str, Any]
T0 = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
UID = "mpi-uid-1"
KEYS = (
    b"-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n",
    b"ecdsa-sha2-nistp521 AAAA\n",
)
OPERATOR_LABEL = "training.kubeflow.org/operator-name"


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def stamp(seconds: float = 0) -> str:
    return format_time(at(seconds))


def container(name: str = "mpi", image: str = "mpioperator/mpi-pi:openmpi", **extra: Any) -> JsonDict:
    return {"name": name, "image": image, **extra}


def v2_job(
    name: str = "pi",
    workers: int | None = 2,
    *,
    spec: JsonDict | None = None,
    launcher: JsonDict | None = None,
    worker: JsonDict | None = None,
    annotations: dict[str, str] | None = None,
) -> JsonDict:
    specs: JsonDict = {"Launcher": {"replicas": 1, "template": {"spec": {"containers": [container()]}}}}
    if launcher:
        specs["Launcher"].update(launcher)
    if workers is not None:
        specs["Worker"] = {"replicas": workers, "template": {"spec": {"containers": [container()]}}}
        if worker:
            specs["Worker"].update(worker)
    metadata: JsonDict = {"name": name, "namespace": "default", "uid": UID}
    if annotations:
        metadata["annotations"] = dict(annotations)
    body: JsonDict = {
        "slotsPerWorker": 1,
        "runPolicy": {"cleanPodPolicy": "Running"},
        "mpiReplicaSpecs": specs,
    }
    body.update(spec or {})
    return {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "metadata": metadata, "spec": body}


def v1_job(
    name: str = "tf", workers: int = 2, *, spec: JsonDict | None = None, launcher: JsonDict | None = None
) -> JsonDict:
    specs: JsonDict = {
        "Launcher": {
            "replicas": 1,
            "template": {"spec": {"containers": [container("mpi", "horovod:latest")]}},
        },
        "Worker": {
            "replicas": workers,
            "template": {"spec": {"containers": [container("mpi", "horovod:latest")]}},
        },
    }
    if launcher:
        specs["Launcher"].update(launcher)
    body: JsonDict = {"slotsPerWorker": 1, "mpiReplicaSpecs": specs}
    body.update(spec or {})
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "MPIJob",
        "metadata": {"name": name, "namespace": "default", "uid": UID},
        "spec": body,
    }


def v1alpha2_job(name: str = "pi", workers: int | None = 2, *, spec: JsonDict | None = None) -> JsonDict:
    """An MPIJob as the original mpi-operator's v1alpha2 examples write it."""
    specs: JsonDict = {"Launcher": {"replicas": 1, "template": {"spec": {"containers": [container()]}}}}
    if workers is not None:
        specs["Worker"] = {"replicas": workers, "template": {"spec": {"containers": [container()]}}}
    body: JsonDict = {"slotsPerWorker": 2, "backoffLimit": 6, "mpiReplicaSpecs": specs}
    body.update(spec or {})
    return {
        "apiVersion": "kubeflow.org/v1alpha2",
        "kind": "MPIJob",
        "metadata": {"name": name, "namespace": "default", "uid": UID},
        "spec": body,
    }


def key_of(obj: JsonDict) -> str:
    api_version = str(obj.get("apiVersion", ""))
    return f"{api_version}/{obj.get('kind')}"


@dataclass
class Cluster:
    """Objects by (apiVersion/Kind, name); `apply` lands a plan like the API server would."""

    job: JsonDict
    config: ControllerConfig = field(default_factory=ControllerConfig)
    objects: dict[tuple[str, str], JsonDict] = field(default_factory=dict)
    uids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def observed(self) -> Observed:
        pods = [o for (k, _), o in self.objects.items() if k == "v1/Pod"]
        others: dict[str, list[JsonDict]] = {}
        for (kind, _), obj in self.objects.items():
            if kind != "v1/Pod":
                others.setdefault(kind, []).append(obj)
        return Observed(pods=pods, services=[], others=others)

    def plan(self, seconds: float = 0) -> Plan:
        return plan(self.job, self.observed(), at(seconds), self.config, keygen=lambda: KEYS)

    def apply(self, result: Plan) -> None:
        for action in result.actions:
            if isinstance(action, CreateObject):
                obj = copy.deepcopy(action.obj)
                obj["metadata"]["uid"] = f"uid-{next(self.uids)}"
                self.objects[(key_of(obj), obj["metadata"]["name"])] = obj
            elif isinstance(action, DeleteObject):
                key = (f"{action.ref.api_version}/{action.ref.kind}", action.ref.name)
                if action.ref.kind == "MPIJob":
                    continue
                self.objects.pop(key, None)
            elif isinstance(action, PatchObject):
                if action.ref.kind == "MPIJob":
                    merge(self.job, action.patch)
                    continue
                merge(
                    self.objects[(f"{action.ref.api_version}/{action.ref.kind}", action.ref.name)],
                    action.patch,
                )
        if result.status is not None:
            self.job["status"] = copy.deepcopy(result.status)

    def step(self, seconds: float = 0) -> Plan:
        result = self.plan(seconds)
        self.apply(result)
        return result

    def get(self, kind: str, name: str) -> JsonDict:
        return self.objects[(kind, name)]

    def names(self, kind: str) -> list[str]:
        return sorted(name for (k, name) in self.objects if k == kind)

    def set_phase(self, name: str, phase: str, ready: bool = False, **status: Any) -> None:
        pod = self.objects[("v1/Pod", name)]
        pod["status"] = {"phase": phase, **status}
        if ready:
            pod["status"]["conditions"] = [{"type": "Ready", "status": "True"}]

    def add_launcher_pod(self, phase: str, name: str | None = None, **status: Any) -> JsonDict:
        job = self.objects[("batch/v1/Job", f"{self.job['metadata']['name']}-launcher")]
        template = job["spec"]["template"]
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name or f"{job['metadata']['name']}-abcde",
                "namespace": "default",
                "uid": f"uid-{next(self.uids)}",
                "labels": dict(template["metadata"]["labels"]),
                "ownerReferences": [
                    {
                        "apiVersion": "batch/v1",
                        "kind": "Job",
                        "name": job["metadata"]["name"],
                        "uid": job["metadata"]["uid"],
                        "controller": True,
                    }
                ],
            },
            "spec": copy.deepcopy(template["spec"]),
            "status": {"phase": phase, **status},
        }
        self.objects[("v1/Pod", pod["metadata"]["name"])] = pod
        return pod

    def finish_launcher(self, condition: str, seconds: float = 0, **fields: Any) -> None:
        job = self.objects[("batch/v1/Job", f"{self.job['metadata']['name']}-launcher")]
        cond = {"type": condition, "status": "True", **fields}
        job["status"] = {"conditions": [cond]}
        if condition == "Complete":
            job["status"]["completionTime"] = stamp(seconds)
            job["status"]["succeeded"] = 1


def merge(target: JsonDict, patch: JsonDict) -> None:
    """RFC 7386 JSON merge patch, in place."""
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, dict) and isinstance(target.get(key), dict):
            merge(target[key], value)
        else:
            target[key] = copy.deepcopy(value)


def created(result: Plan, kind: str | None = None) -> dict[str, JsonDict]:
    return {
        a.obj["metadata"]["name"]: a.obj
        for a in result.actions
        if isinstance(a, CreateObject) and (kind is None or a.obj["kind"] == kind)
    }


def deleted(result: Plan) -> list[str]:
    return sorted(a.ref.name for a in result.actions if isinstance(a, DeleteObject))


def events(result: Plan) -> list[tuple[str, str, str]]:
    return [(e.type, e.reason, e.message) for e in result.events]


def conditions(status: JsonDict | None) -> list[tuple[str, str, str]]:
    return [(c["type"], c["status"], c.get("reason", "")) for c in (status or {}).get("conditions", [])]


def env(container: JsonDict) -> dict[str, str]:
    return {e["name"]: e.get("value", "") for e in container.get("env", [])}
