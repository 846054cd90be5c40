"""Validation of MPIJob (v1, v2beta1 and v1alpha2) with upstream's messages.

Neither version has an admission webhook upstream; their controllers validate:

* v2beta1 (mpi-operator, docs/upstream-behaviour.md#mpijob-v2beta1-validation): field errors on
  the *defaulted* job; the controller reports them in a Warning `ValidationError` event and does
  nothing else.
* v1 (training-operator, docs/upstream-behaviour.md#mpijob-v1): `ValidateV1MpiJobSpec` returns
  the first problem as one plain message, checked on the job as the user wrote it; kubetrain fails
  the job with it (as the generic path does with `<Kind>FailedValidation`).

`problems` gives a job's problems as messages, for `kubetrain validate`-like callers.
"""

from __future__ import annotations

from kubetrain.api.fielderrors import ErrorList, ErrorType, FieldError, invalid, not_supported, required
from kubetrain.api.kinds import (
    CLEAN_POD_POLICIES,
    MULTIKUEUE_CONTROLLER,
    RESTART_NEVER,
    RESTART_ON_FAILURE,
    KindInfo,
)
from kubetrain.api.standalone import NON_NEGATIVE as _NON_NEGATIVE
from kubetrain.api.standalone import containers
from kubetrain.api.standalone import containers as _containers
from kubetrain.api.types import ReplicaSpec, RunPolicy, TrainingJob
from kubetrain.kinds.mpijob.defaults import default_v2
from kubetrain.kinds.mpijob.types import LAUNCHER, MPI_IMPLEMENTATIONS, MPI_REPLICA_TYPES, WORKER
from kubetrain.kinds.mpijob.wire import MPI_OPERATOR_CONTROLLER, v1_spec, v1alpha2_spec, v2_spec
from kubetrain.kube.names import is_dns1035_label

V2_MANAGERS = (MPI_OPERATOR_CONTROLLER, MULTIKUEUE_CONTROLLER)
V2_RESTART_POLICIES = (RESTART_NEVER, RESTART_ON_FAILURE)
MAX_MANAGED_BY_LENGTH = 63
VALIDATION_EVENT_LIMIT = 1024
_AT_LEAST_ONE = "must be greater than or equal to 1"


def _sorted(values: tuple[str, ...]) -> list[str]:
    """Go's `sets.String.List()` order, which upstream's NotSupported messages use."""
    return sorted(values)


# ---- v2beta1 ------------------------------------------------------------------------------------


def validate_v2(job: TrainingJob) -> ErrorList:
    """mpi-operator's `ValidateMPIJob` on a defaulted job
    (docs/upstream-behaviour.md#mpijob-v2beta1-validation)."""
    errs = _v2_name(job)
    spec = v2_spec(job)
    base = "spec"
    errs.extend(_v2_replica_specs(spec.replica_specs, f"{base}.mpiReplicaSpecs"))
    if spec.slots_per_worker is None:
        errs.append(required(f"{base}.slotsPerWorker", "must have number of slots per worker"))
    elif spec.slots_per_worker < 0:
        errs.append(invalid(f"{base}.slotsPerWorker", spec.slots_per_worker, _NON_NEGATIVE))
    errs.extend(_v2_run_policy(spec.run_policy or RunPolicy(), f"{base}.runPolicy"))
    if not spec.ssh_auth_mount_path:
        errs.append(required(f"{base}.sshAuthMountPath", "must have a mount path for SSH credentials"))
    if spec.mpi_implementation not in MPI_IMPLEMENTATIONS:
        errs.append(
            not_supported(
                f"{base}.mpiImplementation", spec.mpi_implementation or "", _sorted(MPI_IMPLEMENTATIONS)
            )
        )
    return errs


def _v2_name(job: TrainingJob) -> ErrorList:
    errs = ErrorList()
    worker = job.replica_specs.get(WORKER)
    replicas = worker.replicas if worker is not None and worker.replicas and worker.replicas > 0 else 1
    host = f"{job.name}-worker-{replicas - 1}"
    reasons = is_dns1035_label(host)
    if reasons:
        detail = f'will not able to create pod and service with invalid DNS label "{host}": '
        detail += ", ".join(reasons)
        errs.append(invalid("metadata.name", job.name, detail))
    return errs


def _v2_replica_specs(specs: dict[str, ReplicaSpec | None] | None, path: str) -> ErrorList:
    errs = ErrorList()
    if specs is None:
        errs.append(required(path, "must have replica specs"))
        return errs
    launcher = specs.get(LAUNCHER)
    launcher_path = f"{path}[{LAUNCHER}]"
    if launcher is None:
        errs.append(required(launcher_path, f"must have {LAUNCHER} replica spec"))
    else:
        errs.extend(_v2_replica(launcher, launcher_path))
        if launcher.replicas is not None and launcher.replicas != 1:
            errs.append(invalid(f"{launcher_path}.replicas", launcher.replicas, "must be 1"))
    worker = specs.get(WORKER)
    if worker is not None:
        worker_path = f"{path}[{WORKER}]"
        errs.extend(_v2_replica(worker, worker_path))
        if worker.replicas is not None and worker.replicas <= 0:
            errs.append(invalid(f"{worker_path}.replicas", worker.replicas, _AT_LEAST_ONE))
    return errs


def _v2_replica(spec: ReplicaSpec, path: str) -> ErrorList:
    errs = ErrorList()
    if spec.replicas is None:
        errs.append(required(f"{path}.replicas", "must define number of replicas"))
    if spec.restart_policy not in V2_RESTART_POLICIES:
        errs.append(
            not_supported(f"{path}.restartPolicy", spec.restart_policy or "", _sorted(V2_RESTART_POLICIES))
        )
    if not _containers(spec.template):
        errs.append(required(f"{path}.template.spec.containers", "must define at least one container"))
    return errs


def _v2_run_policy(policy: RunPolicy, path: str) -> ErrorList:
    errs = ErrorList()
    if policy.clean_pod_policy is None:
        errs.append(required(f"{path}.cleanPodPolicy", "must have clean Pod policy"))
    elif policy.clean_pod_policy not in CLEAN_POD_POLICIES:
        allowed = _sorted(CLEAN_POD_POLICIES)
        errs.append(not_supported(f"{path}.cleanPodPolicy", policy.clean_pod_policy, allowed))
    for key, value in (
        ("ttlSecondsAfterFinished", policy.ttl_seconds_after_finished),
        ("activeDeadlineSeconds", policy.active_deadline_seconds),
        ("backoffLimit", policy.backoff_limit),
    ):
        if value is not None and value < 0:
            errs.append(invalid(f"{path}.{key}", value, _NON_NEGATIVE))
    manager = policy.managed_by
    if manager is not None:
        if manager not in V2_MANAGERS:
            errs.append(not_supported(f"{path}.managedBy", manager, _sorted(V2_MANAGERS)))
        if len(manager) > MAX_MANAGED_BY_LENGTH:
            detail = f"may not be more than {MAX_MANAGED_BY_LENGTH} bytes"
            errs.append(FieldError(ErrorType.TOO_LONG, f"{path}.managedBy", detail))
    return errs


def validation_event_message(errors: ErrorList) -> str:
    """The Warning `ValidationError` event text, truncated like upstream's `truncateMessage`."""
    message = f"Found validation errors: {errors}"
    if len(message) > VALIDATION_EVENT_LIMIT:
        message = message[: VALIDATION_EVENT_LIMIT - 3] + "..."
    return message


# ---- v1 -----------------------------------------------------------------------------------------


def validate_v1(job: TrainingJob) -> str | None:
    """training-operator's `ValidateV1MpiJobSpec`: the first problem as one message, else None.

    Replica types are visited in document order (upstream: Go map order).
    """
    specs = v1_spec(job).replica_specs
    if specs is None:
        return "MPIJobSpec is not valid"
    for rtype, value in specs.items():
        if value is None or not _containers(value.template):
            return f"MPIJobSpec is not valid: containers definition expected in {rtype}"
        if rtype not in MPI_REPLICA_TYPES:
            return f"MPIReplicaType is {rtype} but must be one of [{' '.join(MPI_REPLICA_TYPES)}]"
        for container in _containers(value.template):
            container = container if isinstance(container, dict) else {}
            if not container.get("image"):
                return f"MPIJobSpec is not valid: Image is undefined in the container of {rtype}"
            if not container.get("name"):
                return f"MPIJobSpec is not valid: ImageName is undefined in the container of {rtype}"
        if rtype == LAUNCHER and value.replicas is not None and value.replicas != 1:
            return "MPIReplicaSpec is not valid: There must be only 1 launcher pod"
    if LAUNCHER not in specs:
        return "MPIReplicaSpec is not valid: Master ReplicaSpec must be present"
    return None


# ---- v1alpha2 -----------------------------------------------------------------------------------


def validate_v1alpha2(job: TrainingJob) -> ErrorList:
    """The v1alpha2 CRD's rules (Launcher replicas exactly 1, Worker replicas at least 1) and what
    upstream's controller dereferences without checking (it panics on a job without a Worker or
    without containers); kubetrain refuses those with a field error instead."""
    errs = ErrorList()
    base = "spec.mpiReplicaSpecs"
    specs = v1alpha2_spec(job).replica_specs or {}
    for rtype in (LAUNCHER, WORKER):
        replica = specs.get(rtype)
        path = f"{base}[{rtype}]"
        if replica is None:
            errs.append(required(path, f"an MPIJob v1alpha2 needs a {rtype} replica spec"))
            continue
        if not containers(replica.template):
            errs.append(required(f"{path}.template.spec.containers", "must have at least one container"))
        if rtype == LAUNCHER and replica.replicas not in (None, 1):
            errs.append(invalid(f"{path}.replicas", replica.replicas, "must be 1"))
        if rtype == WORKER and (replica.replicas is None or replica.replicas < 1):
            errs.append(invalid(f"{path}.replicas", replica.replicas, "must be greater than or equal to 1"))
    return errs


def problems(job: TrainingJob, info: KindInfo) -> list[str]:
    """Every problem of a parsed MPIJob as messages (v2beta1 checked on its defaulted copy)."""
    if info.version == "v1":
        message = validate_v1(job)
        return [] if message is None else [message]
    if info.version == "v1alpha2":
        return list(validate_v1alpha2(job).messages())
    return list(validate_v2(default_v2(job)).messages())
