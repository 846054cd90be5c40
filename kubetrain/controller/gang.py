"""Gang scheduling through PodGroups: Volcano or scheduler-plugins.

Upstream's: docs/upstream-behaviour.md#gang-scheduling.

The PodGroup is planned like any other child: created when absent, patched when the fields we
own differ (compared by value: quantities by amount), deleted when the job finishes, fails by a
limit or is suspended. Only the fields we manage are patched, so whatever a scheduler's admission
adds to the spec is left alone and cannot make us patch on every pass.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from kubetrain.api.types import ReplicaSpec
from kubetrain.controller import events
from kubetrain.controller.config import SCHEDULER_PLUGINS_PODGROUP, VOLCANO_PODGROUP, ControllerConfig
from kubetrain.controller.context import JobReconcile
from kubetrain.controller.names import JsonDict, is_terminating, name_of, object_ref
from kubetrain.controller.plan import CreateObject, PatchObject
from kubetrain.kube.quantity import Quantity, add_resources, same_resources

VOLCANO_SCHEDULER = "volcano"
VOLCANO_GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
VOLCANO_TASK_ANNOTATION = "volcano.sh/task-spec"
PLUGINS_POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
DEFAULT_QUEUE = "default"
_GATING_PHASES = ("", "Pending")


def pod_scheduler_names(job: JsonDict) -> list[str]:
    """The `schedulerName`s the job's replica templates set, in the spec's order (any kind:
    every `*ReplicaSpecs` map of its spec)."""
    spec = job.get("spec")
    names: list[str] = []
    for key, replicas in spec.items() if isinstance(spec, dict) else ():
        if not key.endswith("ReplicaSpecs") or not isinstance(replicas, dict):
            continue
        for replica in replicas.values():
            template = replica.get("template") if isinstance(replica, dict) else None
            pod_spec = template.get("spec") if isinstance(template, dict) else None
            name = pod_spec.get("schedulerName") if isinstance(pod_spec, dict) else None
            if isinstance(name, str) and name and name not in names:
                names.append(name)
    return names


def config_for_job(job: JsonDict, config: ControllerConfig) -> ControllerConfig:
    """`config` with the gang scheduler the job's pods name, when the operator has none of its
    own and gangs for that name (the local plane): as `--gang-scheduler-name <that>` would."""
    if config.gang_scheduling or not config.gang_schedulers_named_by_pods:
        return config
    for name in pod_scheduler_names(job):
        if name in config.gang_schedulers_named_by_pods:
            return replace(config, gang_scheduler_name=name)
    return config


def scheduler_name(ctx: JobReconcile) -> str:
    return VOLCANO_SCHEDULER if ctx.config.uses_volcano else ctx.config.gang_scheduler_name


def pod_group_type(ctx: JobReconcile) -> tuple[str, str]:
    api_version, kind, _ = VOLCANO_PODGROUP if ctx.config.uses_volcano else SCHEDULER_PLUGINS_PODGROUP
    return api_version, kind


def decorate_pod_template(
    ctx: JobReconcile, spec: JsonDict, labels: dict[str, Any], annotations: dict[str, Any], rtype: str
) -> None:
    """Point a pod at the gang scheduler and its PodGroup (a template's own scheduler is kept)."""
    if not ctx.config.gang_scheduling:
        return
    if not spec.get("schedulerName"):
        spec["schedulerName"] = scheduler_name(ctx)
    if ctx.config.uses_volcano:
        annotations[VOLCANO_GROUP_ANNOTATION] = ctx.name
        annotations[VOLCANO_TASK_ANNOTATION] = rtype.lower()
    else:
        labels[PLUGINS_POD_GROUP_LABEL] = ctx.name


def custom_scheduler_set(ctx: JobReconcile) -> bool:
    """Whether a replica template names another scheduler (warned about, never overwritten)."""
    wanted = scheduler_name(ctx)
    for spec in ctx.job.replica_specs.values():
        pod_spec = _template_spec(spec)
        name = pod_spec.get("schedulerName")
        if name and name != wanted:
            return True
    return False


def _template_spec(spec: ReplicaSpec | None) -> JsonDict:
    template = spec.template if spec is not None and isinstance(spec.template, dict) else {}
    pod_spec = template.get("spec")
    return pod_spec if isinstance(pod_spec, dict) else {}


def observed_pod_group(ctx: JobReconcile) -> JsonDict | None:
    api_version, kind = pod_group_type(ctx)
    for obj in ctx.observed.of(api_version, kind):
        if name_of(obj) == ctx.name:
            return obj
    return None


def min_member(ctx: JobReconcile) -> int:
    policy = ctx.job.run_policy.scheduling_policy
    if policy is not None and policy.min_available is not None:
        return policy.min_available
    return sum(spec.replicas or 0 for spec in ctx.job.replica_specs.values() if spec is not None)


def min_resources(ctx: JobReconcile, members: int) -> dict[str, str]:
    """schedulingPolicy.minResources, else the requests of the first `members` pods.

    Upstream orders replica types by their PriorityClass value, but its PriorityClass lister is
    never started, so every priority is 0 and the order is the spec's: we use the spec's order.
    A container without a `requests` map contributes its `limits`.
    """
    policy = ctx.job.run_policy.scheduling_policy
    if policy is not None and policy.min_resources is not None:
        return {str(k): str(v) for k, v in policy.min_resources.items()}
    total: dict[str, Quantity] = {}
    counted = 0
    for spec in ctx.job.replica_specs.values():
        if spec is None:
            continue
        containers = _template_spec(spec).get("containers")
        containers = containers if isinstance(containers, list) else []
        for _ in range(spec.replicas or 0):
            if counted >= members:
                break
            counted += 1
            for container in containers:
                resources = container.get("resources") if isinstance(container, dict) else None
                resources = resources if isinstance(resources, dict) else {}
                requests = resources.get("requests")
                add_resources(total, requests if requests is not None else resources.get("limits"))
    return {name: str(total[name]) for name in sorted(total)}


def desired_spec(ctx: JobReconcile, existing: JsonDict | None) -> JsonDict:
    members = min_member(ctx)
    policy = ctx.job.run_policy.scheduling_policy
    spec: JsonDict = {}
    if members:
        spec["minMember"] = members
    if ctx.config.uses_volcano:
        current_queue = _spec(existing).get("queue") if existing is not None else None
        queue = current_queue or (policy.queue if policy is not None else None) or DEFAULT_QUEUE
        spec["queue"] = queue
        if policy is not None and policy.priority_class:
            spec["priorityClassName"] = policy.priority_class
    resources = min_resources(ctx, members)
    if resources:
        spec["minResources"] = resources
    if not ctx.config.uses_volcano and policy is not None and policy.schedule_timeout_seconds is not None:
        spec["scheduleTimeoutSeconds"] = policy.schedule_timeout_seconds
    return spec


def _spec(obj: JsonDict | None) -> JsonDict:
    value = obj.get("spec") if obj is not None else None
    return value if isinstance(value, dict) else {}


def _managed_keys(ctx: JobReconcile) -> tuple[str, ...]:
    if ctx.config.uses_volcano:
        return ("minMember", "queue", "priorityClassName", "minResources")
    return ("minMember", "minResources", "scheduleTimeoutSeconds")


def _spec_patch(ctx: JobReconcile, current: JsonDict, desired: JsonDict) -> JsonDict:
    """The merge patch that brings the managed fields of `current` to `desired` ({} if equal)."""
    patch: JsonDict = {}
    for key in _managed_keys(ctx):
        want, have = desired.get(key), current.get(key)
        if key == "minResources":
            if not same_resources(want, have):
                patch[key] = want
        elif (want or None) != (have or None):
            patch[key] = want
    return patch


def holds_pods(ctx: JobReconcile) -> bool:
    """With gang scheduling on, sync the PodGroup; True while the pass must stop there to wait
    for it (the first such pass still stamps lastReconcileTime, as upstream does)."""
    if not (ctx.config.gang_scheduling and sync_pod_group(ctx)):
        return False
    if ctx.status.last_reconcile_time is None:
        ctx.status.last_reconcile_time = ctx.stamp
    return True


def sync_pod_group(ctx: JobReconcile) -> bool:
    """Create or update the PodGroup; returns True while pods must wait for it (Volcano only:
    until the scheduler moved the group past Pending)."""
    existing = observed_pod_group(ctx)
    desired = desired_spec(ctx, existing)
    api_version, kind = pod_group_type(ctx)
    if existing is None or is_terminating(existing):
        if existing is None:
            metadata: JsonDict = {"name": ctx.name, "namespace": ctx.namespace}
            annotations = ctx.job.metadata.get("annotations")
            if isinstance(annotations, dict) and annotations:
                metadata["annotations"] = dict(annotations)
            metadata["ownerReferences"] = [ctx.owner()]
            obj = {"apiVersion": api_version, "kind": kind, "metadata": metadata, "spec": desired}
            ctx.plan.actions.append(CreateObject(obj))
        return ctx.config.uses_volcano
    patch = _spec_patch(ctx, _spec(existing), desired)
    if patch:
        ctx.plan.actions.append(PatchObject(object_ref(existing), {"spec": patch}))
    if not ctx.config.uses_volcano:
        return False
    status = existing.get("status")
    group_phase = status.get("phase") if isinstance(status, dict) else None
    return (group_phase or "") in _GATING_PHASES


def delete_pod_group(ctx: JobReconcile) -> None:
    """Delete the job's PodGroup if gang scheduling is on and one exists."""
    if not ctx.config.gang_scheduling:
        return
    existing = observed_pod_group(ctx)
    if existing is None or is_terminating(existing):
        return
    ctx.event("Normal", events.JOB_TERMINATED, events.JOB_TERMINATED_MESSAGE)
    ctx.delete(existing, events.SUCCESSFUL_DELETE_POD_GROUP, events.deleted_pod_group(ctx.name))
