"""The validating webhooks of Kubeflow Trainer v2.3 (upstream `pkg/webhooks/`), with its messages.

* TrainingRuntime (`trainingruntime_webhook.go`): CREATE checks the template's replicated jobs
  (`replicated_jobs`); UPDATE is allowed unchecked, as upstream's `ValidateUpdate` returns nil.
* ClusterTrainingRuntime (`clustertrainingruntime_webhook.go`): the same check on CREATE and
  UPDATE, and on CREATE a warning when it is labelled `trainer.kubeflow.org/support: deprecated`.
* TrainJob (`trainjob_webhook.go`): the runtimeRef's group/kind must name a registered runtime
  (`unsupported runtime: <Kind>.<group>`, a plain error, not a field error); then upstream reads
  the runtime from the manager's cache and runs the plugins' `Validate` (`runtime_rules`). That
  part needs a `lookup`: the local plane passes one over its store, the operator's webhook one
  over its informers of the runtimes (`cli.operator_webhook.AdmissionCache`, from the
  registration's `admission_reads`); without one only what the TrainJob holds is checked.

Of the plugins' rules, these are upstream's: torch (reserved `PET_*` envs, envInjection targets),
mpi (runLauncherAsNode with numNodes >= 2, reserved `OMPI_MCA_*` envs), xgboost (reserved `DMLC_*`
envs), jobset (initializer jobs, containers and volume mounts; runtimePatches naming jobs and
containers of the runtime, envs of the node/initializer containers, the manager a domain-prefixed
path), torchtune's (`torchtune.validate`), volcano's empty queue. Not here yet: volcano's
PriorityClass lookup (the pods' own admission refuses an unknown one), flux's numProcPerNode,
runtimePatches' immutability, and the DNS-subdomain/path checks of a patch manager past its
`<domain>/<path>` shape. Upstream runs the plugins in map order (random); they
run here in its registry's declaration order (mpi, torch, jobset, xgboost). A struct bad value is
shown as JSON, as apimachinery v0.36's `ErrorBody` does.

The TrainJob defaulting webhook (runtimePatches' `time`) is a mutating webhook, not served yet.
"""

from __future__ import annotations

from typing import Any

from kubetrain.api.fielderrors import ErrorList, FieldError, forbidden, invalid, required
from kubetrain.kinds.registration import Lookup, Verdict
from kubetrain.kinds.trainjob import torchtune
from kubetrain.kinds.trainjob.constants import (
    ANCESTOR_TRAINER,
    API_VERSION,
    CLUSTER_TRAINING_RUNTIME,
    DATASET_INITIALIZER,
    GROUP,
    LABEL_SUPPORT,
    LABEL_TRAINJOB_ANCESTOR,
    LAUNCHER,
    MODEL_INITIALIZER,
    MPI_RESERVED_ENVS,
    NODE,
    RUNTIME_DEPRECATION_POLICY_URL,
    SUPPORT_DEPRECATED,
    TORCH_TUNE_ENTRYPOINT,
    TORCHRUN_RESERVED_ENVS,
    TRAINING_RUNTIME,
    VOLUME_NAME_INITIALIZER,
    XGBOOST_RESERVED_ENVS,
)
from kubetrain.kinds.trainjob.info import gpus_per_node, new_info
from kubetrain.kinds.trainjob.podgroup import VOLCANO_QUEUE_ANNOTATION
from kubetrain.kinds.trainjob.torch import missing_target, resources_per_node

JsonDict = dict[str, Any]

REPLICATED_JOBS = "spec.template.spec.replicatedJobs"
REPLICAS_MESSAGE = "always must be 1"
CONTAINER_NAMES_MESSAGE = "must contain the required container for the ancestor: {}"
EXPECTED_CONTAINER = {
    ANCESTOR_TRAINER: NODE,
    MODEL_INITIALIZER: MODEL_INITIALIZER,
    DATASET_INITIALIZER: DATASET_INITIALIZER,
}
"""The container a replicated job of each ancestor step must hold."""
RUNTIMES = {
    f"{TRAINING_RUNTIME}.{GROUP}": ("trainingruntimes", "trainingRuntime", "spec.runtimeRef", True),
    f"{CLUSTER_TRAINING_RUNTIME}.{GROUP}": (
        "clustertrainingruntimes",
        "clusterTrainingRuntime",
        "spec.RuntimeRef",
        False,
    ),
}
"""Registry key -> (plural, upstream's word in the not-found message, the path it reports (the
cluster runtime's is upstream's `RuntimeRef`, capitalised), namespaced)."""


def _dict(value: Any) -> JsonDict:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _pod_spec(rjob: Any) -> JsonDict:
    """A replicated job's pod spec (`template.spec.template.spec`)."""
    return _dict(_dict(_dict(_dict(_dict(rjob).get("template")).get("spec")).get("template")).get("spec"))


def _names(items: Any) -> list[str]:
    return [str(c.get("name")) for c in _list(items) if isinstance(c, dict)]


def _replicated_jobs(runtime: JsonDict) -> list[Any]:
    return _list(_dict(_dict(_dict(runtime.get("spec")).get("template")).get("spec")).get("replicatedJobs"))


def replicated_jobs(runtime: JsonDict) -> ErrorList:
    """upstream `validateReplicatedJobs`: an ancestor step's job runs once and holds its container."""
    errs = ErrorList()
    for idx, rjob in enumerate(_replicated_jobs(runtime)):
        labels = _dict(_dict(_dict(rjob).get("template")).get("metadata")).get("labels")
        if not isinstance(labels, dict):
            continue
        ancestor = labels.get(LABEL_TRAINJOB_ANCESTOR)
        if ancestor not in EXPECTED_CONTAINER:
            continue
        replicas = _dict(rjob).get("replicas", 1)  # the CRD's default
        if replicas != 1:
            errs.append(invalid(f"{REPLICATED_JOBS}[{idx}].replicas", replicas, REPLICAS_MESSAGE))
        containers = _pod_spec(rjob).get("containers")
        if EXPECTED_CONTAINER[ancestor] not in _names(containers):
            errs.append(
                invalid(
                    f"{REPLICATED_JOBS}[{idx}].template.spec.template.spec.containers",
                    containers if containers is not None else None,
                    CONTAINER_NAMES_MESSAGE.format(ancestor),
                )
            )
    return errs


def is_deprecated(obj: JsonDict) -> bool:
    labels = _dict(obj.get("metadata")).get("labels")
    return isinstance(labels, dict) and labels.get(LABEL_SUPPORT) == SUPPORT_DEPRECATED


def _deprecated(prefix: str, obj: JsonDict) -> str:
    name = _dict(obj.get("metadata")).get("name", "")
    return (
        f'{prefix} "{name}" is deprecated and will be removed in a future release of Kubeflow '
        f"Trainer. See runtime deprecation policy: {RUNTIME_DEPRECATION_POLICY_URL}"
    )


def admit_training_runtime(obj: JsonDict, old: JsonDict | None, lookup: Lookup | None) -> Verdict:
    if old is not None:  # upstream's ValidateUpdate: nothing
        return Verdict()
    return Verdict(replicated_jobs(obj))


def admit_cluster_training_runtime(obj: JsonDict, old: JsonDict | None, lookup: Lookup | None) -> Verdict:
    warnings = (_deprecated("ClusterTrainingRuntime", obj),) if old is None and is_deprecated(obj) else ()
    return Verdict(replicated_jobs(obj), warnings=warnings)


def runtime_key(trainjob: JsonDict) -> str:
    """upstream `RuntimeRefToRuntimeRegistryKey`: `schema.GroupKind{group, kind}.String()`, with the
    CRD's defaults for a missing apiGroup/kind (an explicit empty string stays empty, as in Go)."""
    ref = _dict(_dict(trainjob.get("spec")).get("runtimeRef"))
    group = ref.get("apiGroup", GROUP)
    kind = ref.get("kind", CLUSTER_TRAINING_RUNTIME)
    group, kind = str(group or ""), str(kind or "")
    return f"{kind}.{group}" if group else kind


def admit_trainjob(obj: JsonDict, old: JsonDict | None, lookup: Lookup | None) -> Verdict:
    key = runtime_key(obj)
    if key not in RUNTIMES:
        return Verdict(message=f"unsupported runtime: {key}")
    if lookup is None:
        return Verdict()
    plural, word, path, namespaced = RUNTIMES[key]
    spec = _dict(obj.get("spec"))
    ref = _dict(spec.get("runtimeRef"))
    name = str(ref.get("name") or "")
    namespace = str(_dict(obj.get("metadata")).get("namespace") or "default") if namespaced else ""
    runtime = lookup(API_VERSION, plural, namespace, name)
    if runtime is None:
        not_found = f'{plural}.{GROUP} "{name}" not found'
        message = f"{not_found}: specified {word} must be created before the TrainJob is created"
        return Verdict(ErrorList([invalid(path, ref, message)]))
    warnings: tuple[str, ...] = ()
    if not namespaced and is_deprecated(runtime):
        warnings = (_deprecated("Referenced ClusterTrainingRuntime", runtime),)
    return Verdict(runtime_rules(obj, runtime), warnings=warnings)


def runtime_rules(trainjob: JsonDict, runtime: JsonDict) -> ErrorList:
    """The plugins' `Validate` of a TrainJob against the runtime it names."""
    spec = _dict(trainjob.get("spec"))
    policy = _dict(_dict(runtime.get("spec")).get("mlPolicy"))
    trainer = spec.get("trainer")
    errs = ErrorList()
    if isinstance(policy.get("mpi"), dict):
        errs.extend(_mpi(trainer, policy["mpi"], runtime))
    if isinstance(policy.get("torch"), dict):
        errs.extend(_torch(trainjob, policy["torch"], runtime))
    errs.extend(_jobset(spec, runtime))
    if isinstance(policy.get("xgboost"), dict):
        errs.extend(_xgboost(trainer))
    if isinstance(_dict(_dict(runtime.get("spec")).get("podGroupPolicy")).get("volcano"), dict):
        errs.extend(_volcano(trainjob, runtime))
    return errs


def _volcano(trainjob: JsonDict, runtime: JsonDict) -> list[FieldError]:
    """The volcano plugin's `Validate`: a queue annotation (the runtime's or a runtime patch's)
    must name a queue. (Its PriorityClass lookup is not done here: see the module docstring.)"""
    annotations = new_info(trainjob, runtime).annotations or {}
    if annotations.get(VOLCANO_QUEUE_ANNOTATION) != "":
        return []
    path = f"spec.annotations[{VOLCANO_QUEUE_ANNOTATION}]"
    return [invalid(path, "", "Volcano queue name must not be empty")]


def _reserved(trainer: Any, reserved: frozenset[str]) -> list[FieldError]:
    """torch's and mpi's rule: one error listing every reserved env the trainer sets."""
    env = _dict(trainer).get("env")
    found = sorted(
        {str(e.get("name")) for e in _list(env) if isinstance(e, dict) and e.get("name") in reserved}
    )
    if not found:
        return []
    return [
        invalid(
            "spec.trainer.env",
            env,
            f"must not have reserved envs, invalid envs configured: [{' '.join(found)}]",
        )
    ]


def _pod_sets(runtime: JsonDict) -> dict[str, tuple[list[str], list[str]]]:
    """Replicated job name -> (its containers' names, its init containers' names)."""
    out = {}
    for rjob in _replicated_jobs(runtime):
        pod = _pod_spec(rjob)
        out[str(_dict(rjob).get("name"))] = (_names(pod.get("containers")), _names(pod.get("initContainers")))
    return out


def _mpi(trainer: Any, mpi: JsonDict, runtime: JsonDict) -> list[FieldError]:
    errs: list[FieldError] = []
    if isinstance(trainer, dict):
        num_nodes = trainer.get("numNodes")
        pod_sets = _pod_sets(runtime)
        if (
            (num_nodes if isinstance(num_nodes, int) else 1) >= 2
            and mpi.get("runLauncherAsNode") is True
            and (LAUNCHER not in pod_sets or NODE not in pod_sets)
        ):
            errs.append(
                invalid(
                    "spec.trainer.numNodes",
                    num_nodes,
                    "must have 1 when MPI trainingRuntime with enabled runLauncherAsNode does not have "
                    "either launcher and node",
                )
            )
        errs.extend(_reserved(trainer, MPI_RESERVED_ENVS))
    return errs


def _torch(trainjob: JsonDict, torch: JsonDict, runtime: JsonDict) -> list[FieldError]:
    trainer = _dict(trainjob.get("spec")).get("trainer")
    errs: list[FieldError] = []
    pod_sets = _pod_sets(runtime)
    for target in _list(_dict(torch.get("envInjection")).get("targets")):
        job = str(_dict(target).get("jobName", ""))
        containers, init = pod_sets.get(job, ([], []))
        for name in _list(_dict(target).get("containerNames")):
            if name not in containers and name not in init:
                errs.append(invalid("spec.runtimeRef", target, missing_target(job, str(name))))
    if isinstance(trainer, dict):
        errs.extend(_reserved(trainer, TORCHRUN_RESERVED_ENVS))
        if tuple(_list(trainer.get("command"))) == TORCH_TUNE_ENTRYPOINT:
            resources = resources_per_node(new_info(trainjob, runtime), trainer)
            errs.extend(torchtune.validate(trainjob, gpus_per_node(resources)))
    return errs


def _xgboost(trainer: Any) -> list[FieldError]:
    return [
        forbidden(f"spec.trainer.env[{i}]", f"{e.get('name')} is reserved for the XGBoost runtime")
        for i, e in enumerate(_list(_dict(trainer).get("env")))
        if isinstance(e, dict) and e.get("name") in XGBOOST_RESERVED_ENVS
    ]


def _initializer(spec: JsonDict, runtime: JsonDict, step: str, config: str) -> list[FieldError]:
    ref = spec.get("runtimeRef")
    jobs = {str(_dict(r).get("name")): r for r in _replicated_jobs(runtime)}
    if step not in jobs:
        return [
            invalid(
                "spec.runtimeRef",
                ref,
                f"must have {step} job when trainJob is configured with input {config}",
            )
        ]
    pod = _pod_spec(jobs[step])
    if step not in _names(pod.get("initContainers")) + _names(pod.get("containers")):
        return [invalid("spec.runtimeRef", ref, f"must have container with name - {step} in the {step} job")]
    mounts = [
        m.get("name")
        for c in _list(pod.get("containers"))
        if isinstance(c, dict) and c.get("name") == step
        for m in _list(c.get("volumeMounts"))
        if isinstance(m, dict)
    ]
    if VOLUME_NAME_INITIALIZER not in mounts:
        mount = f"volumeMount with name - {VOLUME_NAME_INITIALIZER}"
        detail = f"must have {mount} in container {step} of the {step} job"
        return [invalid("spec.runtimeRef", ref, detail)]
    return []


def _jobset(spec: JsonDict, runtime: JsonDict) -> list[FieldError]:
    errs: list[FieldError] = []
    initializer = _dict(spec.get("initializer"))
    if initializer.get("dataset") is not None:
        errs.extend(_initializer(spec, runtime, DATASET_INITIALIZER, "datasetConfig"))
    if initializer.get("model") is not None:
        errs.extend(_initializer(spec, runtime, MODEL_INITIALIZER, "modelConfig"))
    patches = spec.get("runtimePatches")
    pod_sets = _pod_sets(runtime)
    for patch in _list(patches):
        manager = str(_dict(patch).get("manager") or "")
        errs.extend(_domain_prefixed_path("spec.runtimePatches.manager", manager))
        template_spec = _dict(_dict(_dict(patch).get("trainingRuntimeSpec")).get("template")).get("spec")
        if not isinstance(template_spec, dict):
            continue
        for rjob in _list(template_spec.get("replicatedJobs")):
            job = str(_dict(rjob).get("name"))
            if job not in pod_sets:
                errs.append(
                    invalid(
                        "spec.runtimePatches",
                        patches,
                        "must not have replicated job that doesn't exist in the runtime job template",
                    )
                )
                continue
            containers, init = pod_sets[job]
            known = set(containers) | set(init)
            pod = _pod_spec(rjob)
            for c in _list(pod.get("initContainers")):
                if _dict(c).get("name") not in known:
                    detail = f"must not have initContainer that doesn't exist in the runtime job {job}"
                    errs.append(invalid("spec.runtimePatches", patches, detail))
            for c in _list(pod.get("containers")):
                name = _dict(c).get("name")
                if name not in known:
                    detail = f"must not have container that doesn't exist in the runtime job {job}"
                    errs.append(invalid("spec.runtimePatches", patches, detail))
                elif _dict(c).get("env") and name in (DATASET_INITIALIZER, MODEL_INITIALIZER, NODE):
                    steps = f"{DATASET_INITIALIZER}, {MODEL_INITIALIZER}, {NODE}"
                    detail = f"must not have envs for the {steps} containers"
                    errs.append(invalid("spec.runtimePatches", patches, detail))
    return errs


def _domain_prefixed_path(path: str, value: str) -> list[FieldError]:
    """apimachinery `IsDomainPrefixedPath`'s shape checks (not its subdomain and path syntax)."""
    if not value:
        return [required(path)]
    host, _, rest = value.partition("/")
    if not host or not rest:
        return [invalid(path, value, 'must be a domain-prefixed path (such as "acme.io/foo")')]
    return []
