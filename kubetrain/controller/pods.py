"""Building the pod and the headless Service of one replica.

Upstream's: docs/upstream-behaviour.md#pod-template, #services.

A 1,000-replica job creates 1,000 pods in one plan, so the template is deep-copied once per
replica type and each pod copies only what it changes: metadata, the container list and each
container's env (the frameworks append env and init containers). The rest of the spec (volumes,
resources, ...) is shared between the pods of one plan: plan objects are read-only, the runtime
only serialises them.
"""

from __future__ import annotations

from typing import Any

from kubetrain.api.codec import json_clone
from kubetrain.api.kinds import (
    JOB_ROLE_MASTER,
    LABEL_JOB_ROLE,
    LABEL_REPLICA_INDEX,
    LABEL_REPLICA_TYPE,
    RESTART_EXIT_CODE,
    RESTART_NEVER,
)
from kubetrain.api.types import ReplicaSpec
from kubetrain.controller import gang
from kubetrain.controller.context import JobReconcile
from kubetrain.controller.names import JsonDict, job_labels, replica_labels, replica_name

EXIT_CODE_UNKNOWN = 0xBEEF
"""Upstream's sentinel when the default container has no terminated state (counts as retryable)."""


def pod_restart_policy(replica_policy: str | None) -> str:
    """The pod's restartPolicy: the replica's, except ExitCode which the operator implements
    itself on top of a pod that never restarts in place."""
    if not replica_policy or replica_policy == RESTART_EXIT_CODE:
        return RESTART_NEVER
    return replica_policy


def _dict(value: Any) -> JsonDict:
    return value if isinstance(value, dict) else {}


def _copy_container(container: Any) -> Any:
    if not isinstance(container, dict):
        return container
    copied = dict(container)
    env = copied.get("env")
    if isinstance(env, list):
        copied["env"] = list(env)
    return copied


class PodFactory:
    """Builds the pods of one replica type from a single copy of its template."""

    def __init__(self, ctx: JobReconcile, rtype: str, spec: ReplicaSpec) -> None:
        self.ctx = ctx
        self.rtype = rtype
        template = _dict(spec.template)
        tmeta = _dict(template.get("metadata"))
        tspec = _dict(template.get("spec"))
        self.template_sets_restart_policy = bool(tspec.get("restartPolicy"))
        self.spec: JsonDict = json_clone(tspec)
        self.spec["restartPolicy"] = pod_restart_policy(spec.restart_policy)
        labels = dict(_dict(tmeta.get("labels")))
        labels.update(job_labels(ctx.info, ctx.job))
        labels[LABEL_REPLICA_TYPE] = rtype.lower()
        self.labels = labels
        self.annotations: JsonDict = dict(_dict(tmeta.get("annotations")))
        finalizers = tmeta.get("finalizers")
        self.finalizers = list(finalizers) if isinstance(finalizers, list) else None
        gang.decorate_pod_template(ctx, self.spec, self.labels, self.annotations, rtype)

    def build(self, index: int) -> JsonDict:
        """The complete pod manifest of replica `index`; raises TopologyError from the framework."""
        ctx = self.ctx
        spec = dict(self.spec)
        for key in ("containers", "initContainers"):
            items = spec.get(key)
            if isinstance(items, list):
                spec[key] = [_copy_container(c) for c in items]
        labels = dict(self.labels)
        labels[LABEL_REPLICA_INDEX] = str(index)
        if ctx.plugin.is_master_role(ctx.job, self.rtype, index):
            labels[LABEL_JOB_ROLE] = JOB_ROLE_MASTER
        metadata: JsonDict = {
            "name": replica_name(ctx.name, self.rtype, index),
            "namespace": ctx.namespace,
            "labels": labels,
        }
        if self.annotations:
            metadata["annotations"] = dict(self.annotations)
        if self.finalizers is not None:
            metadata["finalizers"] = list(self.finalizers)
        metadata["ownerReferences"] = [ctx.owner()]
        pod: JsonDict = {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}
        ctx.plugin.set_cluster_spec(ctx.job, pod, self.rtype, index, ctx.settings)
        return pod


def service_ports(ctx: JobReconcile, spec: ReplicaSpec) -> list[JsonDict] | None:
    """One ServicePort per port of the default container; None when no container has that name."""
    pod_spec = _dict(_dict(spec.template).get("spec"))
    containers = pod_spec.get("containers")
    for container in containers if isinstance(containers, list) else []:
        if not isinstance(container, dict) or container.get("name") != ctx.info.default_container:
            continue
        ports: list[JsonDict] = []
        for port in container.get("ports") or []:
            if not isinstance(port, dict):
                continue
            entry: JsonDict = {}
            if port.get("name"):
                entry["name"] = port["name"]
            entry["port"] = port.get("containerPort")
            ports.append(entry)
        return ports
    return None


def build_service(ctx: JobReconcile, rtype: str, index: int, ports: list[JsonDict]) -> JsonDict:
    """The headless Service selecting exactly the pod of (rtype, index)."""
    labels = replica_labels(ctx.info, ctx.job, rtype, index)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": replica_name(ctx.name, rtype, index),
            "namespace": ctx.namespace,
            "labels": labels,
            "ownerReferences": [ctx.owner()],
        },
        "spec": {"clusterIP": "None", "selector": dict(labels), "ports": [dict(p) for p in ports]},
    }


def container_status(pod: JsonDict, container: str) -> JsonDict | None:
    statuses = _dict(pod.get("status")).get("containerStatuses")
    for status in statuses if isinstance(statuses, list) else []:
        if isinstance(status, dict) and status.get("name") == container:
            return status
    return None


def terminated_exit_code(pod: JsonDict, container: str) -> int | None:
    """The exit code of the terminated `container`, None when it has not terminated."""
    status = container_status(pod, container)
    if status is None:
        return None
    terminated = _dict(status.get("state")).get("terminated")
    if not isinstance(terminated, dict):
        return None
    code = terminated.get("exitCode")
    return code if isinstance(code, int) and not isinstance(code, bool) else 0


def termination_key(pod: JsonDict, container: str) -> str:
    """One termination of `container`: the pod's uid, the container's restart count, id and
    finish time (a restarted container terminates again under another key)."""
    status = container_status(pod, container) or {}
    terminated = _dict(_dict(status.get("state")).get("terminated"))
    uid = _dict(pod.get("metadata")).get("uid", "")
    parts = (
        uid,
        container,
        status.get("restartCount", 0),
        terminated.get("containerID"),
        terminated.get("finishedAt"),
    )
    return "/".join(str(part or "") for part in parts)


def phase(pod: JsonDict) -> str:
    value = _dict(pod.get("status")).get("phase")
    return value if isinstance(value, str) else ""


def restart_count(pod: JsonDict) -> int:
    """Sum of restartCount over the pod's init and regular containers."""
    status = _dict(pod.get("status"))
    total = 0
    for key in ("initContainerStatuses", "containerStatuses"):
        items = status.get(key)
        for item in items if isinstance(items, list) else []:
            count = item.get("restartCount") if isinstance(item, dict) else None
            if isinstance(count, int) and not isinstance(count, bool) and count > 0:
                total += count
    return total
