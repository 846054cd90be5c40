"""The JobSet plugin (upstream `plugins/jobset/jobset.go` and `builder.go`): the JobSet a TrainJob
runs as, and the TrainJob status read back from it.

The JobSet has the TrainJob's name and namespace, the runtime template's labels and annotations,
its replicated jobs with each pod set's count as parallelism and completions, the pod sets' edits
(volumes; containers' image, command, env, ports, volume mounts), the initializers' storage env,
the trainer's image, command and args on the trainer job's `node` container, its env and
resourcesPerNode there and (MPI's `runLauncherAsNode`) on the `node` job's, the pod group
plugins' label or annotation on every pod template, `suspend` from the TrainJob, and the TrainJob
as its controller owner. `endpoints` is the plugin's pod network: the
pods' DNS names, which the MPI hostfile lists.
"""

from __future__ import annotations

import copy
from typing import Any

from kubetrain.controller.children import contains
from kubetrain.kinds.trainjob.apply import as_dict, as_list, strategic_merge, upsert_all
from kubetrain.kinds.trainjob.conditions import find, set_status_condition
from kubetrain.kinds.trainjob.constants import (
    ANCESTOR_TRAINER,
    COND_COMPLETE,
    COND_FAILED,
    DATASET_INITIALIZER,
    DEFAULT_JOB_REPLICAS,
    INITIALIZER_ENV_STORAGE_URI,
    JOBSET_API_VERSION,
    JOBSET_COMPLETED,
    JOBSET_FAILED,
    JOBSET_KIND,
    LABEL_TRAINJOB_ANCESTOR,
    MODEL_INITIALIZER,
    NODE,
)
from kubetrain.kinds.trainjob.info import Info
from kubetrain.kube.annotations import WORKDIR

JsonDict = dict[str, Any]


def _child(obj: JsonDict, key: str) -> JsonDict:
    """`obj[key]`, an object (made one when absent or malformed: a planner never raises)."""
    value = obj.get(key)
    if not isinstance(value, dict):
        value = obj[key] = {}
    return value


def _job_spec(rjob: JsonDict) -> JsonDict:
    return _child(_child(rjob, "template"), "spec")


def _pod_spec(rjob: JsonDict) -> JsonDict:
    return _child(_child(_job_spec(rjob), "template"), "spec")


def _ancestor(rjob: JsonDict) -> str | None:
    labels = as_dict(as_dict(as_dict(rjob.get("template")).get("metadata")).get("labels"))
    value = labels.get(LABEL_TRAINJOB_ANCESTOR)
    return str(value) if value is not None else None


def endpoints(info: Info, trainjob: JsonDict) -> list[list[str]]:
    """upstream `IdentifyPodNetwork`: per pod set, the DNS names of its pods,
    `<trainjob>-<job>-<replica>-<pod>.<subdomain>` (the JobSet's pod hostnames in its headless
    Service's subdomain: `network.subdomain`, else the TrainJob's name), over the replicated job's
    `replicas` (the runtime's, default 1) and the pod set's count."""
    name = str(as_dict(trainjob.get("metadata")).get("name") or "")
    subdomain = as_dict(info.spec.get("network")).get("subdomain") or name
    rjobs = as_list(info.spec.get("replicatedJobs"))
    out: list[list[str]] = []
    for index, ps in enumerate(info.pod_sets):
        rjob = as_dict(rjobs[index]) if index < len(rjobs) else {}
        replicas = rjob.get("replicas", DEFAULT_JOB_REPLICAS)
        replicas = replicas if isinstance(replicas, int) else DEFAULT_JOB_REPLICAS
        rname = rjob.get("name") or ps.name
        out.append(
            [
                f"{name}-{rname}-{replica}-{pod}.{subdomain}"
                for replica in range(replicas)
                for pod in range(ps.count)
            ]
        )
    return out


def _apply_containers(targets: list[Any], edits: list[JsonDict]) -> None:
    """Each edited container's command and image (when set), env, ports and volume mounts onto
    the template's container at the same index."""
    for cindex, container in enumerate(edits):
        if cindex >= len(targets) or not isinstance(targets[cindex], dict):
            continue
        target = targets[cindex]
        if as_list(container.get("command")):
            target["command"] = copy.deepcopy(container["command"])
        if container.get("image"):
            target["image"] = container["image"]
        upsert_all(target, "env", as_list(container.get("env")), "name")
        upsert_all(target, "ports", as_list(container.get("ports")), "containerPort")
        upsert_all(target, "volumeMounts", as_list(container.get("volumeMounts")), "mountPath")


def _apply_pod_sets(info: Info, spec: JsonDict) -> None:
    """`Build`'s loop: counts, the pod set's volumes, then each pod set container's and init
    container's command, image, env, ports and volume mounts."""
    rjobs = as_list(spec.get("replicatedJobs"))
    for index, ps in enumerate(info.pod_sets):
        if index >= len(rjobs) or not isinstance(rjobs[index], dict):
            continue
        job_spec = _job_spec(rjobs[index])
        job_spec["parallelism"] = ps.count
        job_spec["completions"] = ps.count
        pod_spec = _pod_spec(rjobs[index])
        upsert_all(pod_spec, "volumes", ps.volumes, "name")
        _apply_containers(as_list(pod_spec.get("containers")), ps.containers)
        _apply_containers(as_list(pod_spec.get("initContainers")), ps.init_containers)


def _initializers(spec: JsonDict, trainjob: JsonDict) -> None:
    """`Builder.Initializer`: one replica each; the storage URI, env and secret of its config."""
    initializer = as_dict(as_dict(trainjob.get("spec")).get("initializer"))
    for rjob in as_list(spec.get("replicatedJobs")):
        if not isinstance(rjob, dict):
            continue
        step = _ancestor(rjob)
        if step not in (DATASET_INITIALIZER, MODEL_INITIALIZER):
            continue
        rjob["replicas"] = 1
        config = initializer.get("dataset" if step == DATASET_INITIALIZER else "model")
        if not isinstance(config, dict):
            continue
        for container in as_list(_pod_spec(rjob).get("containers")):
            if not isinstance(container, dict) or container.get("name") != step:
                continue
            if config.get("storageUri") is not None:
                upsert_all(
                    container,
                    "env",
                    [{"name": INITIALIZER_ENV_STORAGE_URI, "value": config["storageUri"]}],
                    "name",
                )
            upsert_all(container, "env", as_list(config.get("env")), "name")
            secret = as_dict(config.get("secretRef"))
            if secret:
                env_from = container.get("envFrom")
                container["envFrom"] = [
                    *(env_from if isinstance(env_from, list) else []),
                    {"secretRef": {"name": secret.get("name")}},
                ]


def _run_launcher_as_node(info: Info) -> bool:
    return as_dict(as_dict(info.ml_policy).get("mpi")).get("runLauncherAsNode") is True


def _merged_resources(container: JsonDict, resources: JsonDict) -> JsonDict:
    """`MergeResourceRequirements`: the TrainJob's resourcesPerNode strategic-merged into the
    runtime container's (limits and requests merged by resource name)."""
    base = as_dict(container.get("resources"))
    base = {k: copy.deepcopy(base[k]) for k in ("limits", "requests") if base.get(k) is not None}
    merged = strategic_merge(base, {k: v for k, v in resources.items() if v is not None})
    return merged if isinstance(merged, dict) else {}


def _trainer(info: Info, spec: JsonDict, trainjob: JsonDict) -> None:
    """`Builder.Trainer` (and `newRuntimeInfo`'s resources): the trainer job gets one replica,
    its pod set's count, and on its `node` container the trainer's image, command and args; the
    trainer's env and resourcesPerNode go to that container and, with the MPI policy's
    `runLauncherAsNode`, to the `node` container of the replicated job named `node` too (which
    keeps its own command: the sshd the launcher's mpirun reaches)."""
    trainer = as_dict(trainjob.get("spec")).get("trainer")
    trainer_ps = info.pod_set_by_ancestor(ANCESTOR_TRAINER)
    launcher_as_node = _run_launcher_as_node(info)
    for rjob in as_list(spec.get("replicatedJobs")):
        if not isinstance(rjob, dict):
            continue
        is_trainer = _ancestor(rjob) == ANCESTOR_TRAINER
        if is_trainer and trainer_ps is not None:
            rjob["replicas"] = DEFAULT_JOB_REPLICAS
            job_spec = _job_spec(rjob)
            job_spec["parallelism"] = trainer_ps.count
            job_spec["completions"] = trainer_ps.count
        if not isinstance(trainer, dict):
            continue
        mpi_node = launcher_as_node and rjob.get("name") == NODE
        gets_resources = (is_trainer and info.ml_policy is not None) or mpi_node
        resources = trainer.get("resourcesPerNode")
        for container in as_list(_pod_spec(rjob).get("containers")):
            if not isinstance(container, dict) or container.get("name") != NODE:
                continue
            if is_trainer:
                for key in ("image", "command", "args"):
                    if trainer.get(key) is not None:
                        container[key] = copy.deepcopy(trainer[key])
                if info.trainer_command is not None:
                    container["command"] = list(info.trainer_command)
            if gets_resources and isinstance(resources, dict):
                container["resources"] = _merged_resources(container, resources)
            if is_trainer or mpi_node:
                upsert_all(container, "env", as_list(trainer.get("env")), "name")


def build(info: Info, trainjob: JsonDict, owner: JsonDict) -> JsonDict:
    """The JobSet of `trainjob` (upstream `JobSet.Build`)."""
    metadata = as_dict(trainjob.get("metadata"))
    spec = copy.deepcopy(info.spec)
    _apply_pod_sets(info, spec)
    _initializers(spec, trainjob)
    _trainer(info, spec, trainjob)
    _scheduler_metadata(info, spec)
    _carry_workdir(spec, metadata)
    suspend = as_dict(trainjob.get("spec")).get("suspend")
    if suspend is not None:
        spec["suspend"] = suspend
    else:
        spec.pop("suspend", None)
    jmeta: JsonDict = {"name": metadata.get("name"), "namespace": metadata.get("namespace") or "default"}
    if info.labels is not None:
        jmeta["labels"] = dict(info.labels)
    if info.annotations is not None:
        jmeta["annotations"] = dict(info.annotations)
    jmeta["ownerReferences"] = [dict(owner)]
    return {"apiVersion": JOBSET_API_VERSION, "kind": JOBSET_KIND, "metadata": jmeta, "spec": spec}


def _scheduler_metadata(info: Info, spec: JsonDict) -> None:
    """`Builder.PodLabels`/`PodAnnotations`: the pod group plugins' label and annotation on every
    replicated job's pod template, over any the template has under the same key."""
    if not info.pod_labels and not info.pod_annotations:
        return
    for rjob in as_list(spec.get("replicatedJobs")):
        if not isinstance(rjob, dict):
            continue
        pod_meta = _child(_child(_job_spec(rjob), "template"), "metadata")
        for key, values in (("labels", info.pod_labels), ("annotations", info.pod_annotations)):
            if values:
                _child(pod_meta, key).update(values)


def _carry_workdir(spec: JsonDict, metadata: JsonDict) -> None:
    """The TrainJob's `kubetrain.io/workdir` (its file's directory, set by `kubetrain apply/create
    -f` and `Client.create(path)`) on every pod template that names none: a TrainJob has no pod
    template of its own for the client to stamp, and a local node runs a pod in that directory.
    A cluster's kubelet ignores the annotation."""
    directory = as_dict(metadata.get("annotations")).get(WORKDIR)
    if not isinstance(directory, str):
        return
    for rjob in as_list(spec.get("replicatedJobs")):
        if isinstance(rjob, dict):
            pod_meta = _child(_child(_job_spec(rjob), "template"), "metadata")
            _child(pod_meta, "annotations").setdefault(WORKDIR, directory)


SCHEDULING_MAPS = (("metadata", "labels"), ("metadata", "annotations"), ("spec", "nodeSelector"))
SCHEDULING_LISTS = ("tolerations", "schedulingGates")
"""What JobSet's webhook lets change in a suspended JobSet's pod templates (Kueue's fields)."""


def _scheduling_fields(have: JsonDict, want: JsonDict) -> JsonDict:
    """`have` (a pod template) with the desired labels, annotations and node selector merged in
    and the desired tolerations and scheduling gates, where `want` has them."""
    out = copy.deepcopy(have)
    for part, key in SCHEDULING_MAPS:
        wanted = as_dict(as_dict(want.get(part)).get(key))
        if wanted:
            merged = {**as_dict(as_dict(out.get(part)).get(key)), **wanted}
            _child(out, part)[key] = merged
    for key in SCHEDULING_LISTS:
        wanted_list = as_dict(want.get("spec")).get(key)
        if isinstance(wanted_list, list):
            _child(out, "spec")[key] = copy.deepcopy(wanted_list)
    return out


def _reapplied_replicated_jobs(current: JsonDict, desired: JsonDict) -> list[Any] | None:
    """The current replicated jobs with the scheduling fields of the desired pod templates
    (a runtime patch added while suspended: Kueue's node selectors, tolerations and labels);
    None when every pod template already holds them. Nothing else of a replicated job changes:
    JobSet's webhook refuses it (the rest is immutable even while suspended)."""
    rjobs = as_list(as_dict(current.get("spec")).get("replicatedJobs"))
    wanted = {
        str(r.get("name")): r for r in as_list(desired["spec"].get("replicatedJobs")) if isinstance(r, dict)
    }
    out, changed = [], False
    for rjob in rjobs:
        want = wanted.get(str(as_dict(rjob).get("name")))
        have_template = as_dict(as_dict(as_dict(as_dict(rjob).get("template")).get("spec")).get("template"))
        want_template = as_dict(as_dict(as_dict(as_dict(want).get("template")).get("spec")).get("template"))
        merged = _scheduling_fields(have_template, want_template)
        if want is None or merged == have_template:
            out.append(rjob)
            continue
        replaced = copy.deepcopy(rjob)
        _child(_child(replaced, "template"), "spec")["template"] = merged
        out.append(replaced)
        changed = True
    return out if changed else None


def suspended_differ(current: JsonDict, desired: JsonDict) -> JsonDict | None:
    """A JobSet whose TrainJob or itself is suspended brought in line, as upstream re-applies the
    whole JobSet then: `suspend`, the labels and annotations, and the pod templates' scheduling
    fields (`_reapplied_replicated_jobs`). Running, it is left alone (upstream builds nothing)."""
    spec_patch: JsonDict = {}
    want = bool(desired["spec"].get("suspend", False))
    if want != bool(as_dict(current.get("spec")).get("suspend", False)):
        spec_patch["suspend"] = want
    rjobs = _reapplied_replicated_jobs(current, desired)
    if rjobs is not None:
        spec_patch["replicatedJobs"] = rjobs
    patch: JsonDict = {"spec": spec_patch} if spec_patch else {}
    have_meta, want_meta = as_dict(current.get("metadata")), as_dict(desired.get("metadata"))
    for key in ("labels", "annotations"):
        if not contains(as_dict(have_meta.get(key)), as_dict(want_meta.get(key))):
            patch.setdefault("metadata", {})[key] = dict(as_dict(want_meta.get(key)))
    return patch or None


def _count(value: object) -> int:
    """A replicated job's count as the TrainJob reports it (int32 on the wire; garbage is 0)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def status_from(jobset: JsonDict, status: JsonDict, stamp: str) -> None:
    """`JobSet.Status`: the JobSet's Completed/Failed (True) become the TrainJob's Complete/Failed,
    reason and message kept; `jobsStatus` is one entry per replicated job's status."""
    jstatus = as_dict(jobset.get("status"))
    conditions = as_list(jstatus.get("conditions"))
    for source, target in ((JOBSET_COMPLETED, COND_COMPLETE), (JOBSET_FAILED, COND_FAILED)):
        cond = find(conditions, source)
        if cond is not None and cond.get("status") == "True":
            set_status_condition(status, {**cond, "type": target}, stamp)
    statuses = [
        {
            "name": str(item.get("name") or ""),
            **{key: _count(item.get(key)) for key in ("ready", "succeeded", "failed", "active", "suspended")},
        }
        for item in as_list(jstatus.get("replicatedJobsStatus"))
        if isinstance(item, dict)
    ]
    if statuses:
        status["jobsStatus"] = statuses
    else:
        status.pop("jobsStatus", None)
