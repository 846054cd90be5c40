"""ChainerJob (`kubeflow.org/v1alpha1`, the archived chainer-operator), one package: its wire types
(`types.py`), description and parse (`wire.py`), defaults, validation and planner (a master batch
Job and worker StatefulSets). Namesakes are refused, not adopted. No webhook, as upstream."""

from __future__ import annotations

from kubetrain.kinds.chainerjob.planner import CHILD_TYPES, plan
from kubetrain.kinds.chainerjob.validation import problems
from kubetrain.kinds.chainerjob.wire import CHAINERJOB, parse
from kubetrain.kinds.registration import KindRegistration, ObserveHints
from kubetrain.kinds.training_operator import TRAINING_OPERATOR_COUNTERS

REGISTRATION = KindRegistration(
    versions=(CHAINERJOB,),
    planner=plan,
    parse=parse,
    children=CHILD_TYPES,
    observe=ObserveHints(namesakes=True, batch_job_pods=True, replica_specs_map=False),
    problems=problems,
    counters=(TRAINING_OPERATOR_COUNTERS,),
)

__all__ = ["REGISTRATION"]
