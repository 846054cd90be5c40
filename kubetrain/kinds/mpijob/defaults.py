"""In-memory defaults of MPIJob (v1, v2beta1 and v1alpha2).

As for the generic kinds (`kubetrain.api.defaults`), the controller defaults a copy on every
reconcile and never writes it back. Each function returns a new object and shares unchanged
subtrees with its input; neither is mutated afterwards.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from kubetrain.api.defaults import normalize_replica_types
from kubetrain.api.kinds import CLEAN_POD_NONE, RESTART_NEVER, RESTART_ON_FAILURE
from kubetrain.api.types import ReplicaSpec, RunPolicy, TrainingJob
from kubetrain.kinds.mpijob.types import (
    DEFAULT_V1ALPHA2_BACKOFF_LIMIT,
    LAUNCHER,
    LAUNCHER_AT_STARTUP,
    OPENMPI,
    ROOT_SSH_PATH,
    WORKER,
)
from kubetrain.kinds.mpijob.wire import MPIJOB_V1, v1_spec, v1alpha2_spec, v2_spec


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


def default_v1alpha2(job: TrainingJob) -> TrainingJob:
    """`SetDefaults_MPIJob` of v1alpha2, on a copy: backoffLimit 6, cleanPodPolicy None, and the
    launcher's restartPolicy OnFailure unless it is Never (a batch Job allows only those two)."""
    out = dataclasses.replace(job)
    if job.spec is None:
        return out
    spec = dataclasses.replace(v1alpha2_spec(job))
    out.spec = spec  # MPIJob specs ride in the shared envelope
    if spec.backoff_limit is None:
        spec.backoff_limit = DEFAULT_V1ALPHA2_BACKOFF_LIMIT
    if not spec.clean_pod_policy:
        spec.clean_pod_policy = CLEAN_POD_NONE
    specs = dict(spec.replica_specs or {})
    launcher = specs.get(LAUNCHER)
    if launcher is not None and launcher.restart_policy != RESTART_NEVER:
        specs[LAUNCHER] = dataclasses.replace(launcher, restart_policy=RESTART_ON_FAILURE)
    spec.replica_specs = specs
    return out
