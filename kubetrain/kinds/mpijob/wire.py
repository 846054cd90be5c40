"""MPIJob's descriptions, `kubeflow.org/v1` (training-operator), `v2beta1` (mpi-operator) and
`v1alpha2` (the original mpi-operator), and its parse. The CRD generator serves the three versions
from one CRD, storage version first (see `kubetrain.kinds.mpijob.conversion`); a job is decoded as
the version it was written in.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from kubetrain.api.fielderrors import ErrorList
from kubetrain.api.kinds import RESTART_NEVER, KindInfo
from kubetrain.api.standalone import parse_standalone
from kubetrain.api.types import TrainingJob
from kubetrain.kinds.mpijob.conversion import V1ALPHA2, V2BETA1, written_version
from kubetrain.kinds.mpijob.types import MPI_REPLICA_TYPES, MPIJobV1Alpha2Spec, MPIJobV1Spec, MPIJobV2Spec

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
MPIJOB_V1ALPHA2 = dataclasses.replace(MPIJOB_V2BETA1, spec_type=MPIJobV1Alpha2Spec, version=V1ALPHA2)
"""The original mpi-operator (v0.2): the same controller and event names (`mpi-job-controller`)."""
MPIJOB_VERSIONS = (MPIJOB_V1, MPIJOB_V2BETA1, MPIJOB_V1ALPHA2)
"""Served versions, the storage version (v1) first."""


def parse(raw: Any) -> tuple[TrainingJob | None, KindInfo | None, ErrorList]:
    """Decode an MPIJob; never raises (like `parse_job`).

    It is decoded with the spec type of the version it was written in, whatever version it was
    read as: fields of the other version stay in `spec.extra`.
    """
    return parse_standalone(raw, MPIJOB_VERSIONS, TrainingJob, written_version)


def v1_spec(job: TrainingJob) -> MPIJobV1Spec:
    """The v1 spec of a parsed MPIJob (an empty one when the job had none)."""
    spec: object = job.spec
    return spec if isinstance(spec, MPIJobV1Spec) else MPIJobV1Spec()


def v2_spec(job: TrainingJob) -> MPIJobV2Spec:
    spec: object = job.spec
    return spec if isinstance(spec, MPIJobV2Spec) else MPIJobV2Spec()


def v1alpha2_spec(job: TrainingJob) -> MPIJobV1Alpha2Spec:
    spec: object = job.spec
    return spec if isinstance(spec, MPIJobV1Alpha2Spec) else MPIJobV1Alpha2Spec()
