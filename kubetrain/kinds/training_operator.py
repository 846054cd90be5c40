"""The six `kubeflow.org/v1` replica-spec kinds on the generic reconciler: one framework plugin
each, validated by the admission webhook as upstream's training-operator does."""

from __future__ import annotations

from functools import partial

from kubetrain.api.jobs import parse_job
from kubetrain.controller import reconciler
from kubetrain.frameworks.base import Framework
from kubetrain.kinds.registration import CounterFamily, KindRegistration

TRAINING_OPERATOR_COUNTERS = CounterFamily(
    prefix="training_operator_jobs_",
    counters=("created", "deleted", "successful", "failed", "restarted"),
    help="Counts number of jobs {what}",
    labels=("job_namespace", "framework"),
)
"""training-operator's job counters, labelled by namespace and framework; its planners (the
generic kinds, MPIJob v1, and the archived operators' kinds on `run_job`) increment them."""

MXJOB_DEPRECATED = "kubeflow.org/v1 MXJob is deprecated: upstream training-operator removed it in v1.9"


def generic(framework: Framework, *, admission_warning: str = "") -> KindRegistration:
    """The registration of a kind whose planner is the generic reconciler around `framework`."""
    return KindRegistration(
        versions=(framework.info,),
        planner=partial(reconciler.plan, framework=framework),
        parse=partial(parse_job, kinds={framework.info.kind: framework.info}),
        framework_plugin=framework,
        webhook=True,
        admission_warning=admission_warning,
        counters=(TRAINING_OPERATOR_COUNTERS,),
    )
