"""ChainerJob (`kubeflow.org/v1alpha1`, the archived chainer-operator): a master batch Job and
worker StatefulSets; namesakes are refused, not adopted. No webhook, as upstream."""

from __future__ import annotations

from typing import Any

from kubetrain.api.kinds import KindInfo
from kubetrain.api.kinds_mpi import CHAINERJOB, parse_extra_job
from kubetrain.api.validation_mpi import validate_extra
from kubetrain.controller import chainer
from kubetrain.kinds.registration import KindRegistration, ObserveHints
from kubetrain.kinds.training_operator import TRAINING_OPERATOR_COUNTERS


def problems(job: Any, info: KindInfo) -> list[str]:
    return validate_extra(job, info.version)


REGISTRATION = KindRegistration(
    versions=(CHAINERJOB,),
    planner=chainer.plan,
    parse=parse_extra_job,
    children=chainer.CHILD_TYPES,
    observe=ObserveHints(namesakes=True, batch_job_pods=True, replica_specs_map=False),
    problems=problems,
    counters=(TRAINING_OPERATOR_COUNTERS,),
)
