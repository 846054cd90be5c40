"""Caffe2Job (`kubeflow.org/v1alpha1`, the archived caffe2-operator), one package: its wire types
(`types.py`), description and parse (`wire.py`), defaults, validation and planner (one pod per
worker from a single replica spec). Namesakes are refused, not adopted. No webhook, as upstream."""

from __future__ import annotations

from kubetrain.kinds.caffe2job.planner import plan
from kubetrain.kinds.caffe2job.validation import problems
from kubetrain.kinds.caffe2job.wire import CAFFE2JOB, parse
from kubetrain.kinds.registration import KindRegistration, ObserveHints
from kubetrain.kinds.training_operator import TRAINING_OPERATOR_COUNTERS

REGISTRATION = KindRegistration(
    versions=(CAFFE2JOB,),
    planner=plan,
    parse=parse,
    observe=ObserveHints(namesakes=True, batch_job_pods=True, replica_specs_map=False),
    problems=problems,
    counters=(TRAINING_OPERATOR_COUNTERS,),
)

__all__ = ["REGISTRATION"]
