"""The descriptions of MPIJob (v1, v2beta1), ChainerJob and Caffe2Job: the kinds off the generic path.

The six replica-spec kinds on the generic reconciler describe themselves in their framework
packages and are parsed by `parse_job`; these kinds have their own planners and validation, so
they are described here, kept in `EXTRA_KINDS` and parsed by `parse_extra_job`. The CRD generator
serves both MPIJob versions from one CRD, storage version first (see `kubetrain.api.conversion_mpi`).
"""

from __future__ import annotations

from typing import Any

from kubetrain.api.codec import decode
from kubetrain.api.conversion_mpi import V2BETA1, written_version
from kubetrain.api.fielderrors import ErrorList, invalid, not_supported
from kubetrain.api.kinds import RESTART_NEVER, KindInfo
from kubetrain.api.types import JobStatus, TrainingJob
from kubetrain.api.types_historical import (
    Caffe2Job,
    Caffe2JobSpec,
    Caffe2JobStatus,
    ChainerJob,
    ChainerJobSpec,
    ChainerJobStatus,
)
from kubetrain.api.types_mpi import MPI_REPLICA_TYPES, MPIJobV1Spec, MPIJobV2Spec

V1ALPHA1 = "v1alpha1"
MPI_OPERATOR_NAME = "mpi-operator"
"""operator-name label value of v2beta1 children, and mpi-operator's controller name."""
MPI_OPERATOR_CONTROLLER = "kubeflow.org/mpi-operator"
"""runPolicy.managedBy value of mpi-operator (v2beta1; absent means the same)."""

MPIJOB_V1 = KindInfo(
    kind="MPIJob",
    plural="mpijobs",
    singular="mpijob",
    replica_specs_field="mpiReplicaSpecs",
    replica_types=MPI_REPLICA_TYPES,
    default_container="mpi",
    default_port_name="mpi-port",
    default_port=9999,
    default_restart_policy=RESTART_NEVER,
    framework="mpi",
    controller_name="mpijob-controller",
    spec_type=MPIJobV1Spec,
)
MPIJOB_V2BETA1 = KindInfo(
    kind="MPIJob",
    plural="mpijobs",
    singular="mpijob",
    replica_specs_field="mpiReplicaSpecs",
    replica_types=MPI_REPLICA_TYPES,
    default_container="",
    default_port_name="",
    default_port=0,
    default_restart_policy=RESTART_NEVER,
    framework="mpi",
    controller_name=MPI_OPERATOR_NAME,
    event_source="mpi-job-controller",  # mpi-operator v0.8.0's controllerAgentName
    spec_type=MPIJobV2Spec,
    version=V2BETA1,
)
CHAINERJOB = KindInfo(
    kind="ChainerJob",
    plural="chainerjobs",
    singular="chainerjob",
    replica_specs_field="workerSets",
    replica_types=("Master", "WorkerSet"),
    default_container="chainer",
    default_port_name="",
    default_port=0,
    default_restart_policy=RESTART_NEVER,
    framework="chainer",
    controller_name="chainer-operator",
    spec_type=ChainerJobSpec,
    version=V1ALPHA1,
    status_type=ChainerJobStatus,
    short_names=("chj", "chjs", "chjob", "chjobs"),
    categories=("all",),
)
CAFFE2JOB = KindInfo(
    kind="Caffe2Job",
    plural="caffe2jobs",
    singular="caffe2job",
    replica_specs_field="replicaSpecs",
    replica_types=("Worker",),
    default_container="caffe2",
    default_port_name="caffe2job-port",
    default_port=2222,
    default_restart_policy=RESTART_NEVER,
    framework="caffe2",
    controller_name="caffe2-operator",
    spec_type=Caffe2JobSpec,
    version=V1ALPHA1,
    status_type=Caffe2JobStatus,
)

EXTRA_KINDS: tuple[KindInfo, ...] = (MPIJOB_V1, MPIJOB_V2BETA1, CHAINERJOB, CAFFE2JOB)
"""Every version of the kinds with their own planners; for MPIJob the storage version first."""
EXTRA_KIND_NAMES = ("MPIJob", "ChainerJob", "Caffe2Job")
MPIJOB_VERSIONS = {MPIJOB_V1.version: MPIJOB_V1, MPIJOB_V2BETA1.version: MPIJOB_V2BETA1}

ExtraJob = TrainingJob | ChainerJob | Caffe2Job


def kind_info_for(raw: Any) -> KindInfo | None:
    """The KindInfo whose mechanics apply to a raw object (MPIJob: the version it was written in)."""
    kind = raw.get("kind") if isinstance(raw, dict) else None
    if kind == "MPIJob":
        return MPIJOB_VERSIONS[written_version(raw)]
    if kind == "ChainerJob":
        return CHAINERJOB
    if kind == "Caffe2Job":
        return CAFFE2JOB
    return None


def _served(info: KindInfo) -> list[str]:
    if info.kind == "MPIJob":
        return [i.api_version for i in MPIJOB_VERSIONS.values()]
    return [info.api_version]


def parse_extra_job(raw: Any) -> tuple[ExtraJob | None, KindInfo | None, ErrorList]:
    """Decode an MPIJob, ChainerJob or Caffe2Job; never raises (like `parse_job`).

    An MPIJob is decoded with the spec type of the version it was written in, whatever version it
    was read as: fields of the other version stay in `spec.extra`.
    """
    errors = ErrorList()
    info = kind_info_for(raw)
    if info is None or not isinstance(raw, dict):
        kind = raw.get("kind") if isinstance(raw, dict) else None
        errors.append(not_supported("kind", kind, EXTRA_KIND_NAMES))
        return None, None, errors
    served = _served(info)
    if raw.get("apiVersion") not in served:
        errors.append(not_supported("apiVersion", raw.get("apiVersion"), served))
    envelope_cls: type[ExtraJob]
    if info.kind == "ChainerJob":
        envelope_cls = ChainerJob
    elif info.kind == "Caffe2Job":
        envelope_cls = Caffe2Job
    else:
        envelope_cls = TrainingJob
    envelope = {k: v for k, v in raw.items() if k not in ("spec", "status")}
    job, env_errors = decode(envelope_cls, envelope)
    errors.extend(env_errors)
    assert job is not None  # envelope is a dict
    if not isinstance(raw.get("metadata", {}), dict):
        job.metadata = {}
    if raw.get("spec") is not None:
        job.spec, spec_errors = decode(info.spec_type, raw["spec"], "spec")
        errors.extend(spec_errors)
    if raw.get("status") is not None:
        status_type = JobStatus if info.kind == "MPIJob" else info.status_type
        job.status, status_errors = decode(status_type, raw["status"], "status")
        errors.extend(status_errors)
    if not isinstance(job.metadata.get("name", ""), str):
        errors.append(invalid("metadata.name", job.metadata.get("name"), "must be of type string"))
    return job, info, errors


def v1_spec(job: TrainingJob) -> MPIJobV1Spec:
    """The v1 spec of a parsed MPIJob (an empty one when the job had none)."""
    spec: object = job.spec
    return spec if isinstance(spec, MPIJobV1Spec) else MPIJobV1Spec()


def v2_spec(job: TrainingJob) -> MPIJobV2Spec:
    spec: object = job.spec
    return spec if isinstance(spec, MPIJobV2Spec) else MPIJobV2Spec()
