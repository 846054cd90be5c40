"""Gang scheduling for MPIJob v2beta1: mpi-operator's PodGroup rules.

Upstream's: docs/upstream-behaviour.md#mpijob-v2beta1-gang. They differ from the generic path's
(#gang-scheduling): minMember is workers + 1; Volcano's queue falls back
to the job's `scheduling.volcano.sh/queue-name` annotation (never to "default"); the priority
class falls back to the launcher's then the worker's template; minResources counts at most
`minMember` pods, trimming the lower-priority replica type (the workers on a tie); pods never
wait for the PodGroup's phase.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubetrain.api.types import ReplicaSpec
from kubetrain.controller.config import SCHEDULER_PLUGINS_PODGROUP, VOLCANO_PODGROUP
from kubetrain.controller.names import JsonDict, is_terminating, name_of, object_ref
from kubetrain.controller.owned import OwnedObjects, as_dict
from kubetrain.controller.plan import CreateObject, DeleteObject, PatchObject
from kubetrain.kinds.mpijob.types import LAUNCHER, WORKER
from kubetrain.kinds.mpijob.v2_objects import V2Job
from kubetrain.kube.quantity import Quantity, add_resources, parse_quantity, same_resources

VOLCANO_QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
PRIORITY_CLASS = ("scheduling.k8s.io/v1", "PriorityClass")


def pod_group_kind(job: V2Job) -> tuple[str, str]:
    api_version, kind, _ = VOLCANO_PODGROUP if job.config.uses_volcano else SCHEDULER_PLUGINS_PODGROUP
    return api_version, kind


def min_member(job: V2Job) -> int:
    policy = job.spec.run_policy.scheduling_policy if job.spec.run_policy else None
    if policy is not None and policy.min_available is not None:
        return policy.min_available
    return job.workers + 1


@dataclass
class _Replica:
    rtype: str
    spec: ReplicaSpec
    priority: int
    count: int


def _pod_spec(spec: ReplicaSpec | None) -> JsonDict:
    template = spec.template if spec is not None and isinstance(spec.template, dict) else {}
    pod_spec = template.get("spec")
    return pod_spec if isinstance(pod_spec, dict) else {}


def _priority(sync: OwnedObjects, spec: ReplicaSpec) -> int:
    """The PriorityClass value of the template (0 when unnamed or not observed)."""
    name = _pod_spec(spec).get("priorityClassName")
    if not name:
        return 0
    for pc in sync.observed.of(*PRIORITY_CLASS):
        if name_of(pc) == name and isinstance(pc.get("value"), int):
            return int(pc["value"])
    return 0


def min_resources(sync: OwnedObjects, job: V2Job, members: int) -> dict[str, str] | None:
    policy = job.spec.run_policy.scheduling_policy if job.spec.run_policy else None
    if policy is not None and policy.min_resources is not None:
        return {str(k): str(v) for k, v in policy.min_resources.items()}
    if members == 0:
        return None
    order = [
        _Replica(rtype, spec, _priority(sync, spec), max(spec.replicas or 0, 0))
        for rtype, spec in (job.spec.replica_specs or {}).items()
        if spec is not None and rtype in (LAUNCHER, WORKER)
    ]
    order.sort(key=lambda r: (-r.priority, r.rtype != LAUNCHER))  # stable: launcher first on a tie
    if len(order) == 2 and order[0].count + order[1].count > members:
        if order[0].priority == order[1].priority:
            trimmed = next(r for r in order if r.rtype == WORKER)
        else:
            trimmed = order[1]
        trimmed.count = members - 1
    total: dict[str, Quantity] = {}
    for replica in order:
        containers = _pod_spec(replica.spec).get("containers")
        for container in containers if isinstance(containers, list) else []:
            resources = container.get("resources") if isinstance(container, dict) else None
            resources = resources if isinstance(resources, dict) else {}
            requests = as_dict(resources.get("requests"))
            limits = as_dict(resources.get("limits"))
            merged = {**{k: v for k, v in limits.items() if k not in requests}, **requests}
            for _ in range(replica.count):
                add_resources(total, merged)
    return {name: str(total[name]) for name in sorted(total)}


def _priority_class_name(job: V2Job) -> str | None:
    policy = job.spec.run_policy.scheduling_policy if job.spec.run_policy else None
    if policy is not None and policy.priority_class:
        return policy.priority_class
    for rtype in (LAUNCHER, WORKER):
        name = _pod_spec(job.replica(rtype)).get("priorityClassName")
        if name:
            return str(name)
    return None


def desired_spec(sync: OwnedObjects, job: V2Job, annotations: dict[str, Any]) -> JsonDict:
    members = min_member(job)
    policy = job.spec.run_policy.scheduling_policy if job.spec.run_policy else None
    spec: JsonDict = {"minMember": members}
    if job.config.uses_volcano:
        queue = (policy.queue if policy is not None else None) or annotations.get(VOLCANO_QUEUE_ANNOTATION)
        if queue:
            spec["queue"] = queue
        priority_class = _priority_class_name(job)
        if priority_class:
            spec["priorityClassName"] = priority_class
        resources = min_resources(sync, job, members)
        if resources is not None:
            spec["minResources"] = resources
    else:
        resources = min_resources(sync, job, members)
        if resources:
            spec["minResources"] = resources
        timeout = policy.schedule_timeout_seconds if policy is not None else None
        spec["scheduleTimeoutSeconds"] = timeout if timeout is not None else 0
    return spec


def _managed_keys(job: V2Job) -> tuple[str, ...]:
    if job.config.uses_volcano:
        return ("minMember", "queue", "priorityClassName", "minResources")
    return ("minMember", "minResources", "scheduleTimeoutSeconds")


def _same(key: str, want: Any, have: Any) -> bool:
    if key == "minResources":
        return same_resources(want, have)
    if isinstance(want, str) and isinstance(have, str) and key != "queue":
        a, b = parse_quantity(want), parse_quantity(have)
        if a is not None and b is not None:
            return a.value == b.value
    return bool(want == have) or (not want and not have)


def sync_pod_group(sync: OwnedObjects, job: V2Job, annotations: dict[str, Any]) -> None:
    """Create the PodGroup, or patch the fields mpi-operator owns when they differ."""
    kind = pod_group_kind(job)
    desired = desired_spec(sync, job, annotations)
    current = sync.get(kind, job.name)
    if current is None:
        obj = {"apiVersion": kind[0], "kind": kind[1], "metadata": sync.new_meta(job.name), "spec": desired}
        sync.plan.actions.append(CreateObject(obj))
        return
    if not sync.controlled(current) or is_terminating(current):
        return
    have = as_dict(current.get("spec"))
    patch = {k: desired.get(k) for k in _managed_keys(job) if not _same(k, desired.get(k), have.get(k))}
    if patch:
        sync.plan.actions.append(PatchObject(object_ref(current), {"spec": patch}))


def delete_pod_group(sync: OwnedObjects, job: V2Job) -> None:
    if not job.config.gang_scheduling:
        return
    current = sync.get(pod_group_kind(job), job.name)
    if current is not None and not is_terminating(current) and sync.controlled(current):
        sync.plan.actions.append(DeleteObject(object_ref(current)))
