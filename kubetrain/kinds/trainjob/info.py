"""The runtime's information about one TrainJob (upstream `runtime.Info`, built by
`core/trainingruntime.go`'s `newRuntimeInfo`): the JobSet template spec with the TrainJob's
`runtimePatches` merged in, the labels and annotations the JobSet carries, the mlPolicy, and one
pod set per replicated job (its ancestor step, its pod count, its containers and volumes) that the
ML policy plugins (`torch.py`, `mpi.py`, ...) edit before the JobSet is built (`jobset.py`)."""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from typing import Any

from kubetrain.kinds.trainjob.apply import as_dict, as_list, strategic_merge
from kubetrain.kinds.trainjob.constants import ANCESTOR_TRAINER, LABEL_TRAINJOB_ANCESTOR, NODE
from kubetrain.kube.quantity import quantity_value

JsonDict = dict[str, Any]


@dataclass
class PodSet:
    name: str
    ancestor: str | None
    count: int
    containers: list[JsonDict]
    """Copies of the pod template's containers, in order; the plugins edit their env, ports and
    volume mounts."""
    volumes: list[JsonDict] = field(default_factory=list)
    """A copy of the pod template's volumes; the MPI plugin adds its Secret and ConfigMap."""
    init_containers: list[JsonDict] = field(default_factory=list)
    """Copies of the pod template's init containers (torch's envInjection may target one)."""

    def container(self, name: str) -> JsonDict | None:
        return next((c for c in self.containers if c.get("name") == name), None)

    def any_container(self, name: str) -> JsonDict | None:
        """upstream `FindContainerByPodSetName`: a container, else an init container, so named."""
        found = self.container(name)
        return (
            found
            if found is not None
            else next((c for c in self.init_containers if c.get("name") == name), None)
        )


@dataclass
class Info:
    spec: JsonDict
    """The JobSet spec: the runtime's `template.spec` with the runtime patches merged."""
    ml_policy: JsonDict | None
    labels: dict[str, str] | None
    annotations: dict[str, str] | None
    pod_group_policy: JsonDict | None = None
    """The runtime's `podGroupPolicy` (coscheduling or volcano), read by `podgroup.py`."""
    pod_sets: list[PodSet] = field(default_factory=list)
    pod_labels: dict[str, str] = field(default_factory=dict)
    pod_annotations: dict[str, str] = field(default_factory=dict)
    """upstream `Info.Scheduler`: what the pod group plugins put on every pod template."""
    trainer_command: list[str] | None = None
    """The trainer's command as a plugin rewrote it (torchtune's arguments appended); upstream
    edits the TrainJob object itself, which a planner must not."""

    def pod_set_by_ancestor(self, ancestor: str) -> PodSet | None:
        return next((ps for ps in self.pod_sets if ps.ancestor == ancestor), None)

    def pod_set_by_name(self, name: str) -> PodSet | None:
        """upstream `FindPodSetByName` (the MPI plugin finds `node` and `launcher` by name)."""
        return next((ps for ps in self.pod_sets if ps.name == name), None)

    def trainer_container(self) -> JsonDict | None:
        """upstream `FindContainerByPodSetAncestorContainerName(AncestorTrainer, Node)`."""
        ps = self.pod_set_by_ancestor(ANCESTOR_TRAINER)
        return ps.container(NODE) if ps is not None else None


def _strings(value: object) -> dict[str, str] | None:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else None


def _patch_templates(trainjob: JsonDict) -> list[JsonDict]:
    """The `trainingRuntimeSpec.template` of every runtime patch, in order."""
    out = []
    for patch in as_list(as_dict(trainjob.get("spec")).get("runtimePatches")):
        template = as_dict(as_dict(as_dict(patch).get("trainingRuntimeSpec")).get("template"))
        if template:
            out.append(template)
    return out


def new_info(trainjob: JsonDict, runtime: JsonDict) -> Info:
    rspec = as_dict(runtime.get("spec"))
    template = as_dict(rspec.get("template"))
    tmeta = as_dict(template.get("metadata"))
    labels, annotations = _strings(tmeta.get("labels")), _strings(tmeta.get("annotations"))
    spec = copy.deepcopy(as_dict(template.get("spec")))
    for patch in _patch_templates(trainjob):
        pmeta = as_dict(patch.get("metadata"))
        if as_dict(pmeta.get("labels")):
            labels = {**(labels or {}), **(_strings(pmeta["labels"]) or {})}
        if as_dict(pmeta.get("annotations")):
            annotations = {**(annotations or {}), **(_strings(pmeta["annotations"]) or {})}
        for rpatch in as_list(as_dict(patch.get("spec")).get("replicatedJobs")):
            rpatch = as_dict(rpatch)
            if not isinstance(rpatch.get("template"), dict):
                continue
            for rjob in as_list(spec.get("replicatedJobs")):
                if isinstance(rjob, dict) and rjob.get("name") == rpatch.get("name"):
                    rjob["template"] = strategic_merge(as_dict(rjob.get("template")), rpatch["template"])
    ml_policy = rspec.get("mlPolicy") if isinstance(rspec.get("mlPolicy"), dict) else None
    pod_group_policy = rspec.get("podGroupPolicy") if isinstance(rspec.get("podGroupPolicy"), dict) else None
    info = Info(spec, ml_policy, labels, annotations, pod_group_policy)
    for rjob in as_list(spec.get("replicatedJobs")):
        rjob = as_dict(rjob)
        jtemplate = as_dict(rjob.get("template"))
        jspec = as_dict(jtemplate.get("spec"))
        parallelism = jspec.get("parallelism")
        count = parallelism if isinstance(parallelism, int) else 1
        ancestor = (_strings(as_dict(jtemplate.get("metadata")).get("labels")) or {}).get(
            LABEL_TRAINJOB_ANCESTOR
        )
        if ancestor == ANCESTOR_TRAINER and ml_policy is not None:
            nodes = ml_policy.get("numNodes")
            count = nodes if isinstance(nodes, int) else 1
        pod_spec = as_dict(as_dict(jspec.get("template")).get("spec"))
        containers = [copy.deepcopy(as_dict(c)) for c in as_list(pod_spec.get("containers"))]
        volumes = [copy.deepcopy(as_dict(v)) for v in as_list(pod_spec.get("volumes"))]
        inits = [copy.deepcopy(as_dict(c)) for c in as_list(pod_spec.get("initContainers"))]
        count = max(count, 1)  # upstream `WithPodSet`: a pod set has at least one pod
        info.pod_sets.append(PodSet(str(rjob.get("name") or ""), ancestor, count, containers, volumes, inits))
    return info


def runtime_resources_per_node(info: Info) -> JsonDict | None:
    """upstream `ExtractResourcePerNodeFromRuntime`: the resources of the `node` container of the
    first replicated job named `node` or labelled the trainer's that has them."""
    for rjob in as_list(info.spec.get("replicatedJobs")):
        rjob = as_dict(rjob)
        template = as_dict(rjob.get("template"))
        labels = as_dict(as_dict(template.get("metadata")).get("labels"))
        if rjob.get("name") != NODE and labels.get(LABEL_TRAINJOB_ANCESTOR) != ANCESTOR_TRAINER:
            continue
        pod = as_dict(as_dict(as_dict(template.get("spec")).get("template")).get("spec"))
        for container in as_list(pod.get("containers")):
            container = as_dict(container)
            if container.get("name") == NODE and isinstance(container.get("resources"), dict):
                resources = container["resources"]
                return {k: as_dict(resources.get(k)) for k in ("limits", "requests")}
    return None


def _num_gpu(resources: object) -> int:
    """upstream `numGPU`: the first resource whose name has "gpu", its Value() (rounded up)."""
    for name, raw in as_dict(resources).items():
        if "gpu" in str(name).lower():
            try:
                return math.ceil(quantity_value(raw))
            except (ValueError, TypeError):
                return 0
    return 0


def gpus_per_node(resources: JsonDict | None) -> int:
    """upstream `GetNumGPUPerNode`: the requests' GPU count, else the limits'."""
    if resources is None:
        return 0
    count = _num_gpu(resources.get("requests"))
    limits = _num_gpu(resources.get("limits"))
    return limits if count == 0 and limits > 0 else count
