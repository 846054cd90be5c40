"""MPIJob, `kubeflow.org/v1` (training-operator), `v2beta1` (mpi-operator) and `v1alpha2` (the original
mpi-operator) from one CRD; one package.

`wire.py` describes the versions (`types.py` their spec types) and parses a job; `conversion.py`
decides which version's mechanics a job follows (the version it was written in), which is also its
events' source and the apiVersion they name; `defaults.py` and `validation.py` are the upstreams'
controller rules; `planner.py` hands a job to `v1.py` (kubectl exec, with `v1_objects.py`),
`v2beta1.py` (SSH and a launcher batch Job, with `v2_objects.py`, `v2_podgroup.py`,
`v2_status.py`) or `v1alpha2.py` (a worker StatefulSet and a launcher batch Job reached through
kubectl exec, with `v1alpha2_objects.py`); `hostfile.py` and `ssh.py` are the MPI mechanics they share.

It is listed and watched as v1, the storage version. Its planner refuses same-named objects it
does not control instead of adopting them and its v2beta1 and v1alpha2 launchers are batch Jobs, so
it observes namesakes and the Jobs' pods; a gang's minResources are ordered by PriorityClass. No
webhook, as upstream.
"""

from __future__ import annotations

from kubetrain.kinds.mpijob.conversion import written_version
from kubetrain.kinds.mpijob.planner import CHILD_TYPES, plan
from kubetrain.kinds.mpijob.validation import problems
from kubetrain.kinds.mpijob.wire import MPIJOB_VERSIONS, parse
from kubetrain.kinds.registration import CounterFamily, KindRegistration, ObserveHints
from kubetrain.kinds.training_operator import TRAINING_OPERATOR_COUNTERS

MPI_OPERATOR_COUNTERS = CounterFamily(
    prefix="mpi_operator_jobs_",
    counters=("created", "successful", "failed"),
    help="Counts number of MPI jobs {what}",
)
"""mpi-operator's label-less counters, which the v2beta1 planner increments
(docs/upstream-behaviour.md#mpi-operator-process); v1 counts in training-operator's."""

REGISTRATION = KindRegistration(
    versions=MPIJOB_VERSIONS,
    planner=plan,
    parse=parse,
    children=CHILD_TYPES,
    observe=ObserveHints(namesakes=True, batch_job_pods=True, priority_classes=True),
    problems=problems,
    version_of=written_version,
    counters=(TRAINING_OPERATOR_COUNTERS, MPI_OPERATOR_COUNTERS),
)

__all__ = ["MPI_OPERATOR_COUNTERS", "REGISTRATION"]
