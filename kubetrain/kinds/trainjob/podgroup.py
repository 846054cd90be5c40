"""The gang-scheduling plugins (upstream v2.3.0 `plugins/coscheduling` and `plugins/volcano`): with
a runtime whose `podGroupPolicy` names one, a PodGroup for the TrainJob's pods and the label or
annotation that puts every pod in it.

    coscheduling   label `scheduling.x-k8s.io/pod-group: <trainjob>` on every pod template; a
                   scheduler-plugins PodGroup (`scheduling.x-k8s.io/v1alpha1`) with minMember,
                   minResources and `scheduleTimeoutSeconds` (the CRD's default, 60)
    volcano        annotation `scheduling.k8s.io/group-name: <trainjob>` on every pod template; a
                   Volcano PodGroup (`scheduling.volcano.sh/v1beta1`) with minMember,
                   minResources, the queue of the runtime's (or a runtime patch's)
                   `scheduling.volcano.sh/queue-name` annotation, the priorityClassName of the
                   last replicated job naming one, and `networkTopology` when the policy has it

minMember is the sum of the pod sets' counts (each at least 1) and minResources the sum of each
pod set's requests (`resourcehelpers.PodRequests` of its pod template, after the TrainJob's
resourcesPerNode) times its count; the PodGroup has the TrainJob's name and namespace and the
TrainJob as its controller owner. `Build` makes it only when it does not exist yet or while the
TrainJob is suspended (a running gang is never resized under its scheduler); the planner does
the "exists" half (`planner._pod_groups`). Upstream runs both plugins when a policy has both
fields (its CRD does not forbid it), and so does this one.
"""

from __future__ import annotations

from typing import Any

from kubetrain.kinds.trainjob.apply import as_dict, as_list
from kubetrain.kinds.trainjob.info import Info
from kubetrain.kube.podresources import template_requests
from kubetrain.kube.quantity import Quantity, same_resources

JsonDict = dict[str, Any]

POD_GROUP = "PodGroup"
COSCHEDULING_API_VERSION = "scheduling.x-k8s.io/v1alpha1"
VOLCANO_API_VERSION = "scheduling.volcano.sh/v1beta1"
COSCHEDULING_POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
"""scheduler-plugins' `PodGroupLabel`."""
VOLCANO_GROUP_NAME_ANNOTATION = "scheduling.k8s.io/group-name"
"""Volcano's `KubeGroupNameAnnotationKey`."""
VOLCANO_QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
"""Volcano's `QueueNameAnnotationKey`, read from the JobSet's (runtime template's) annotations."""
DEFAULT_SCHEDULE_TIMEOUT_SECONDS = 60
DEFAULT_NETWORK_TOPOLOGY_MODE = "hard"
DEFAULT_HIGHEST_TIER_ALLOWED = 1
"""The CRD's defaults, for a runtime read before any API server defaulted it."""
MANAGED_SPEC_FIELDS = (
    "minMember",
    "minResources",
    "scheduleTimeoutSeconds",
    "queue",
    "priorityClassName",
    "networkTopology",
)
"""What the plugins write into a PodGroup's spec (and take back out when they no longer would)."""


def _source(info: Info, name: str) -> JsonDict | None:
    value = as_dict(info.pod_group_policy).get(name)
    return value if isinstance(value, dict) else None


def api_versions(info: Info) -> list[str]:
    """The PodGroup API versions the runtime's policy asks for, coscheduling's first."""
    out = []
    if _source(info, "coscheduling") is not None:
        out.append(COSCHEDULING_API_VERSION)
    if _source(info, "volcano") is not None:
        out.append(VOLCANO_API_VERSION)
    return out


def enforce(info: Info, trainjob: JsonDict) -> None:
    """`EnforcePodGroupPolicy`: the pod label (coscheduling) and annotation (volcano) naming the
    TrainJob's PodGroup."""
    name = str(as_dict(trainjob.get("metadata")).get("name") or "")
    if _source(info, "coscheduling") is not None:
        info.pod_labels[COSCHEDULING_POD_GROUP_LABEL] = name
    if _source(info, "volcano") is not None:
        info.pod_annotations[VOLCANO_GROUP_NAME_ANNOTATION] = name


def _totals(info: Info, jobset: JsonDict) -> tuple[int, dict[str, str]]:
    """minMember and minResources: every pod set's count, and its pod template's requests times
    that count (the built JobSet's templates carry the merged resourcesPerNode)."""
    rjobs = as_list(as_dict(jobset.get("spec")).get("replicatedJobs"))
    members = 0
    total: dict[str, Quantity] = {}
    for index, ps in enumerate(info.pod_sets):
        members += ps.count
        rjob = as_dict(rjobs[index]) if index < len(rjobs) else {}
        pod_spec = as_dict(
            as_dict(as_dict(as_dict(rjob.get("template")).get("spec")).get("template")).get("spec")
        )
        for key, quantity in template_requests(pod_spec).items():
            scaled = Quantity(quantity.value * ps.count, quantity.binary)
            total[key] = total[key] + scaled if key in total else scaled
    return members, {key: str(total[key]) for key in sorted(total)}


def _priority_class_name(info: Info) -> str | None:
    """The priorityClassName of the last replicated job whose pod template names one."""
    found = None
    for rjob in as_list(info.spec.get("replicatedJobs")):
        template = as_dict(as_dict(as_dict(rjob).get("template")).get("spec")).get("template")
        name = as_dict(as_dict(template).get("spec")).get("priorityClassName")
        if isinstance(name, str):
            found = name
    return found


def _timeout(source: JsonDict) -> int:
    value = source.get("scheduleTimeoutSeconds")
    return (
        value if isinstance(value, int) and not isinstance(value, bool) else DEFAULT_SCHEDULE_TIMEOUT_SECONDS
    )


def _network_topology(source: JsonDict) -> JsonDict | None:
    topology = source.get("networkTopology")
    if not isinstance(topology, dict):
        return None
    tier = topology.get("highestTierAllowed")
    return {
        "mode": topology.get("mode") or DEFAULT_NETWORK_TOPOLOGY_MODE,
        "highestTierAllowed": tier if isinstance(tier, int) else DEFAULT_HIGHEST_TIER_ALLOWED,
    }


def build(info: Info, trainjob: JsonDict, jobset: JsonDict, owner: JsonDict) -> list[JsonDict]:
    """The PodGroups the runtime's policy asks for (`Build` of both plugins), from the JobSet
    being built for `trainjob`."""
    metadata = as_dict(trainjob.get("metadata"))
    members, resources = _totals(info, jobset)
    out = []
    for api_version in api_versions(info):
        spec: JsonDict = {"minMember": members, "minResources": resources}
        if api_version == COSCHEDULING_API_VERSION:
            spec["scheduleTimeoutSeconds"] = _timeout(_source(info, "coscheduling") or {})
        else:
            volcano = _source(info, "volcano") or {}
            queue = (info.annotations or {}).get(VOLCANO_QUEUE_ANNOTATION)
            if queue is not None:
                spec["queue"] = queue
            priority_class = _priority_class_name(info)
            if priority_class is not None:
                spec["priorityClassName"] = priority_class
            topology = _network_topology(volcano)
            if topology is not None:
                spec["networkTopology"] = topology
        pod_group_meta = {
            "name": metadata.get("name"),
            "namespace": metadata.get("namespace") or "default",
            "ownerReferences": [dict(owner)],
        }
        out.append({"apiVersion": api_version, "kind": POD_GROUP, "metadata": pod_group_meta, "spec": spec})
    return out


def spec_differ(current: JsonDict, desired: JsonDict) -> JsonDict | None:
    """A suspended TrainJob's PodGroup brought in line (upstream re-applies it): the fields the
    plugins own set to the desired values, those they no longer set removed; the scheduler's own
    fields (status, a queue Volcano defaulted) kept. minResources are compared by value."""
    have, want = as_dict(current.get("spec")), as_dict(desired.get("spec"))
    patch: JsonDict = {}
    for key in MANAGED_SPEC_FIELDS:
        if key == "minResources":
            if not same_resources(have.get(key), want.get(key)) or (key in want) != (key in have):
                old = as_dict(have.get(key))
                patch[key] = {**{name: None for name in old}, **as_dict(want.get(key))}
        elif key in want and have.get(key) != want[key]:
            patch[key] = want[key]
        elif key not in want and key in have and key != "queue":
            patch[key] = None
    return {"spec": patch} if patch else None
