# ruff: noqa: RUF009  (`wire()` returns a dataclasses.field; the call is the declaration, not a shared default)
"""Wire types of MPIJob `kubeflow.org/v1`, `kubeflow.org/v2beta1` and `kubeflow.org/v1alpha2`.

Upstream's: docs/upstream-behaviour.md#kind-fields, #mpijob-v1 (v1), #mpijob-v2beta1 (v2beta1) and
#mpijob-v1alpha2 (v1alpha2, the original mpi-operator's StatefulSet procedure).

Both versions share the envelope (`TrainingJob`), the replica spec, the run policy and the status
of the v1 kinds; only the spec differs. Fields of the *other* version land in `extra` when a job
is decoded as this version, so reading one version back as the other loses nothing (see
`kubetrain.kinds.mpijob.conversion`). The CRD defaults of v2beta1 are declared here (`schema`), which
also makes them the marker of a job written as v2beta1.
"""

from __future__ import annotations

from dataclasses import dataclass

from kubetrain.api.types import I32, REQUIRED, JsonDict, ReplicaSpec, RunPolicy, extra_keys, wire

LAUNCHER = "Launcher"
WORKER = "Worker"
MPI_REPLICA_TYPES = (LAUNCHER, WORKER)

LAUNCHER_AT_STARTUP = "AtStartup"
LAUNCHER_WAIT_FOR_WORKERS_READY = "WaitForWorkersReady"
LAUNCHER_CREATION_POLICIES = (LAUNCHER_AT_STARTUP, LAUNCHER_WAIT_FOR_WORKERS_READY)

OPENMPI = "OpenMPI"
INTEL = "Intel"
MPICH = "MPICH"
MPI_IMPLEMENTATIONS = (OPENMPI, INTEL, MPICH)

ROOT_SSH_PATH = "/root/.ssh"
_REQUIRED = REQUIRED
_extra = extra_keys


@dataclass
class MPIJobV1Spec:
    """training-operator's MPIJob: kubectl-exec launcher, top-level (deprecated) cleanPodPolicy."""

    slots_per_worker: I32 | None = wire("slotsPerWorker")
    clean_pod_policy: str | None = wire("cleanPodPolicy")
    replica_specs: dict[str, ReplicaSpec | None] | None = wire("mpiReplicaSpecs", schema=_REQUIRED)
    main_container: str | None = wire("mainContainer")
    run_policy: RunPolicy | None = wire("runPolicy")
    extra: JsonDict = _extra()


@dataclass
class MPIJobV2Spec:
    """mpi-operator's MPIJob: SSH launcher run by a batch/v1 Job, CRD defaults as upstream."""

    slots_per_worker: I32 | None = wire("slotsPerWorker", schema={"default": 1})
    run_launcher_as_worker: bool | None = wire("runLauncherAsWorker", schema={"default": False})
    run_policy: RunPolicy | None = wire("runPolicy")
    replica_specs: dict[str, ReplicaSpec | None] | None = wire("mpiReplicaSpecs", schema=_REQUIRED)
    ssh_auth_mount_path: str | None = wire("sshAuthMountPath", schema={"default": ROOT_SSH_PATH})
    launcher_creation_policy: str | None = wire(
        "launcherCreationPolicy",
        schema={"default": LAUNCHER_AT_STARTUP, "enum": list(LAUNCHER_CREATION_POLICIES)},
    )
    mpi_implementation: str | None = wire(
        "mpiImplementation", schema={"default": OPENMPI, "enum": list(MPI_IMPLEMENTATIONS)}
    )
    extra: JsonDict = _extra()


DEFAULT_V1ALPHA2_BACKOFF_LIMIT = 6
"""mpi-operator v1alpha2's `SetDefaults_MPIJob`; kubetrain's v1alpha2 schema declares it (see
`V1ALPHA2_MARKERS`)."""


@dataclass
class MPIJobV1Alpha2Spec:
    """The original mpi-operator's MPIJob (v0.2): workers as a StatefulSet, a launcher batch Job
    that reaches them through `kubectl exec`; top-level backoffLimit and activeDeadlineSeconds."""

    slots_per_worker: I32 | None = wire("slotsPerWorker", schema={"minimum": 1})
    backoff_limit: I32 | None = wire("backoffLimit", schema={"default": DEFAULT_V1ALPHA2_BACKOFF_LIMIT})
    active_deadline_seconds: int | None = wire("activeDeadlineSeconds")
    clean_pod_policy: str | None = wire("cleanPodPolicy")
    replica_specs: dict[str, ReplicaSpec | None] | None = wire("mpiReplicaSpecs", schema=_REQUIRED)
    main_container: str | None = wire("mainContainer")
    run_policy: RunPolicy | None = wire("runPolicy")
    extra: JsonDict = _extra()


V1ALPHA2_MARKERS = ("backoffLimit", "activeDeadlineSeconds")
"""Top-level spec keys only v1alpha2 has. Its schema defaults `backoffLimit` (to upstream's
controller default, 6), so every job created as v1alpha2 carries it and no job created as v1 or
v2beta1 does (the API server applies the request version's defaults)."""

V2BETA1_MARKERS = ("sshAuthMountPath", "launcherCreationPolicy", "mpiImplementation", "runLauncherAsWorker")
"""Spec keys the v2beta1 schema defaults and the v1 schema does not: any stored job written as
v2beta1 carries them, no job written as v1 does (the API server applies the request version's
defaults)."""
