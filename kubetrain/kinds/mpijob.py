"""MPIJob, `kubeflow.org/v1` (training-operator) and `v2beta1` (mpi-operator) from one CRD.

It is listed and watched as v1, the storage version; the version a job was written in
(`kubetrain.api.conversion_mpi.written_version`) decides its mechanics, its events' source and
the apiVersion they name. Its planner refuses same-named objects it does not control instead of
adopting them and its v2beta1 launcher is a batch Job, so it observes namesakes and the Job's
pods; a gang's minResources are ordered by PriorityClass. No webhook, as upstream.
"""

from __future__ import annotations

from typing import Any

from kubetrain.api.conversion_mpi import written_version
from kubetrain.api.kinds import KindInfo
from kubetrain.api.kinds_mpi import MPIJOB_V1, MPIJOB_V2BETA1, parse_extra_job
from kubetrain.api.validation_mpi import validate_extra
from kubetrain.controller import mpi
from kubetrain.kinds.registration import CounterFamily, KindRegistration, ObserveHints
from kubetrain.kinds.training_operator import TRAINING_OPERATOR_COUNTERS

MPI_OPERATOR_COUNTERS = CounterFamily(
    prefix="mpi_operator_jobs_",
    counters=("created", "successful", "failed"),
    help="Counts number of MPI jobs {what}",
)
"""mpi-operator's label-less counters, which the v2beta1 planner increments
(docs/upstream-behaviour.md#mpi-operator-process); v1 counts in training-operator's."""


def problems(job: Any, info: KindInfo) -> list[str]:
    return validate_extra(job, info.version)


REGISTRATION = KindRegistration(
    versions=(MPIJOB_V1, MPIJOB_V2BETA1),
    planner=mpi.plan,
    parse=parse_extra_job,
    children=mpi.CHILD_TYPES,
    observe=ObserveHints(namesakes=True, batch_job_pods=True, priority_classes=True),
    problems=problems,
    version_of=written_version,
    counters=(TRAINING_OPERATOR_COUNTERS, MPI_OPERATOR_COUNTERS),
)
