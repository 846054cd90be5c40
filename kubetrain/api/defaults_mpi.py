"""In-memory defaults of MPIJob (v1 and v2beta1), ChainerJob and Caffe2Job.

As for the generic kinds (`kubetrain.api.defaults`), the controller defaults a copy on every
reconcile and never writes it back. Each function returns a new object and shares unchanged
subtrees with its input; neither is mutated afterwards.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from kubetrain.api.defaults import normalize_replica_types
from kubetrain.api.kinds import CLEAN_POD_NONE, RESTART_NEVER, RESTART_ON_FAILURE
from kubetrain.api.kinds_mpi import MPIJOB_V1, v1_spec, v2_spec
from kubetrain.api.types import ReplicaSpec, RunPolicy, TrainingJob
from kubetrain.api.types_historical import (
    Caffe2BackendSpec,
    Caffe2Job,
    Caffe2ReplicaSpec,
    ChainerJob,
    ChainerMasterSpec,
    ChiefSpec,
    MPIConfig,
    TerminationPolicy,
    WorkerSetSpec,
)
from kubetrain.api.types_mpi import (
    LAUNCHER,
    LAUNCHER_AT_STARTUP,
    OPENMPI,
    ROOT_SSH_PATH,
    WORKER,
)

CHAINER_CONTAINER = "chainer"
CHAINER_BACKEND_MPI = "mpi"
GPU_RESOURCE = "nvidia.com/gpu"


def _clean_pod_policy(policy: RunPolicy | None, fallback: str | None) -> RunPolicy:
    """runPolicy.cleanPodPolicy, else `fallback`, else None (a copy when it changes)."""
    if policy is None:
        return RunPolicy(clean_pod_policy=fallback or CLEAN_POD_NONE)
    if policy.clean_pod_policy:
        return policy
    return dataclasses.replace(policy, clean_pod_policy=fallback or CLEAN_POD_NONE)


def _replica(rspec: ReplicaSpec | None, replicas: int, restart: str) -> ReplicaSpec | None:
    if rspec is None:
        return None
    changes: dict[str, Any] = {}
    if rspec.replicas is None:
        changes["replicas"] = replicas
    if not rspec.restart_policy:
        changes["restart_policy"] = restart
    return dataclasses.replace(rspec, **changes) if changes else rspec


# ---- MPIJob -------------------------------------------------------------------------------------


def default_v1(job: TrainingJob) -> TrainingJob:
    """training-operator's MPIJob defaults (docs/upstream-behaviour.md#mpijob-v1, #defaults).

    Replica-type keys in canonical casing; replicas 1 and restartPolicy Never for both types;
    slotsPerWorker 1; cleanPodPolicy: `runPolicy.cleanPodPolicy` wins, else the deprecated
    top-level field is copied into runPolicy, else None (and the top-level copy gets None too).
    """
    out = dataclasses.replace(job)
    if job.spec is None:
        return out
    spec = dataclasses.replace(v1_spec(job))
    out.spec = spec  # MPIJob specs ride in the shared envelope
    spec.run_policy = _clean_pod_policy(spec.run_policy, spec.clean_pod_policy)
    if not spec.clean_pod_policy:
        spec.clean_pod_policy = spec.run_policy.clean_pod_policy
    if spec.slots_per_worker is None:
        spec.slots_per_worker = 1
    if spec.replica_specs is not None:
        spec.replica_specs = {
            rtype: _replica(rspec, 1, RESTART_NEVER)
            for rtype, rspec in normalize_replica_types(spec.replica_specs, MPIJOB_V1).items()
        }
    return out


def default_v2(job: TrainingJob) -> TrainingJob:
    """mpi-operator's controller defaults, applied to a copy on every sync
    (docs/upstream-behaviour.md#mpijob-v2beta1).

    Keys are not normalised: mpi-operator looks up `Launcher` and `Worker` exactly.
    """
    out = dataclasses.replace(job)
    if job.spec is None:
        return out
    spec = dataclasses.replace(v2_spec(job))
    out.spec = spec  # MPIJob specs ride in the shared envelope
    spec.run_policy = _clean_pod_policy(spec.run_policy, None)
    if spec.slots_per_worker is None:
        spec.slots_per_worker = 1
    if spec.run_launcher_as_worker is None:
        spec.run_launcher_as_worker = False
    if not spec.ssh_auth_mount_path:
        spec.ssh_auth_mount_path = ROOT_SSH_PATH
    if not spec.mpi_implementation:
        spec.mpi_implementation = OPENMPI
    if not spec.launcher_creation_policy:
        spec.launcher_creation_policy = LAUNCHER_AT_STARTUP
    if spec.replica_specs is not None:
        specs = dict(spec.replica_specs)
        if LAUNCHER in specs:
            specs[LAUNCHER] = _replica(specs[LAUNCHER], 1, RESTART_ON_FAILURE)
        if WORKER in specs:
            specs[WORKER] = _replica(specs[WORKER], 0, RESTART_NEVER)
        spec.replica_specs = specs
    return out


# ---- ChainerJob ---------------------------------------------------------------------------------


def _with_container_name(template: Any, name: str) -> Any:
    """A single unnamed container gets `name` (chainer-operator's defaulting)."""
    if not isinstance(template, dict) or not isinstance(template.get("spec"), dict):
        return template
    containers = template["spec"].get("containers")
    if not isinstance(containers, list) or len(containers) != 1 or not isinstance(containers[0], dict):
        return template
    if containers[0].get("name"):
        return template
    return {**template, "spec": {**template["spec"], "containers": [{**containers[0], "name": name}]}}


def _with_restart_never(template: Any) -> Any:
    """A template without a pod restartPolicy gets `Never` (both archived operators did this)."""
    spec = template.get("spec") if isinstance(template, dict) else None
    if not isinstance(spec, dict) or spec.get("restartPolicy"):
        return template
    return {**template, "spec": {**spec, "restartPolicy": RESTART_NEVER}}


def _gpu_slots(template: Any) -> int:
    """The `nvidia.com/gpu` limit of the `chainer` container, else 1 (distributed slots default)."""
    spec = template.get("spec") if isinstance(template, dict) else None
    containers = spec.get("containers") if isinstance(spec, dict) else None
    for container in containers if isinstance(containers, list) else []:
        if not isinstance(container, dict) or container.get("name") != CHAINER_CONTAINER:
            continue
        resources = container.get("resources")
        limits = resources.get("limits") if isinstance(resources, dict) else None
        value = limits.get(GPU_RESOURCE) if isinstance(limits, dict) else None
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, str) and value.isdigit():
            return int(value)
    return 1


def _slots(config: MPIConfig | None, template: Any) -> MPIConfig:
    if config is not None and config.slots is not None:
        return config
    slots = _gpu_slots(template)
    return MPIConfig(slots=slots) if config is None else dataclasses.replace(config, slots=slots)


def default_chainer(job: ChainerJob) -> ChainerJob:
    """chainer-operator's defaults (docs/upstream-behaviour.md#chainerjob)."""
    out = dataclasses.replace(job)
    if job.spec is None:
        return out
    spec = dataclasses.replace(job.spec)
    out.spec = spec
    distributed = bool(spec.worker_sets)
    master = spec.master or ChainerMasterSpec()
    template = _with_container_name(master.template, CHAINER_CONTAINER)
    template = _with_restart_never(template)
    master = dataclasses.replace(master, template=template)
    if distributed:
        master.mpi_config = _slots(master.mpi_config, template)
        if not spec.backend:
            spec.backend = CHAINER_BACKEND_MPI
    spec.master = master
    if spec.worker_sets:
        sets: dict[str, WorkerSetSpec | None] = {}
        for name, wset in spec.worker_sets.items():
            if wset is None:
                sets[name] = None
                continue
            wtemplate = _with_container_name(wset.template, CHAINER_CONTAINER)
            sets[name] = dataclasses.replace(
                wset,
                template=wtemplate,
                replicas=1 if wset.replicas is None else wset.replicas,
                mpi_config=_slots(wset.mpi_config, wtemplate),
            )
        spec.worker_sets = sets
    return out


# ---- Caffe2Job ----------------------------------------------------------------------------------

CAFFE2_BACKEND_NONE = "none"
CAFFE2_BACKEND_REDIS = "redis"
CAFFE2_CHIEF_REPLICA = "WORKER"


def default_caffe2(job: Caffe2Job, runtime_id: str) -> Caffe2Job:
    """caffe2-operator's defaults (docs/upstream-behaviour.md#caffe2job); `runtime_id` replaces
    upstream's "current unix time" so that defaulting stays a pure function (the planner passes the
    creation time)."""
    out = dataclasses.replace(job)
    if job.spec is None:
        return out
    spec = dataclasses.replace(job.spec)
    out.spec = spec
    if not spec.runtime_id:
        spec.runtime_id = runtime_id
    replicas = spec.replica_specs or Caffe2ReplicaSpec()
    template = replicas.template
    template = _with_restart_never(template)
    spec.replica_specs = dataclasses.replace(
        replicas, replicas=1 if replicas.replicas is None else replicas.replicas, template=template
    )
    backend = spec.backend_specs or Caffe2BackendSpec()
    if not backend.backend_type:
        count = spec.replica_specs.replicas or 0
        backend = dataclasses.replace(
            backend, backend_type=CAFFE2_BACKEND_NONE if count <= 1 else CAFFE2_BACKEND_REDIS
        )
    spec.backend_specs = backend
    policy = spec.termination_policy or TerminationPolicy()
    if policy.chief is None:
        chief = ChiefSpec(replica_name=CAFFE2_CHIEF_REPLICA, replica_index=0)
        policy = dataclasses.replace(policy, chief=chief)
    spec.termination_policy = policy
    return out
