"""The six `kubeflow.org/v1` replica-spec kinds on the generic reconciler: one framework plugin
each, validated by the admission webhook as upstream's training-operator does."""

from __future__ import annotations

from functools import partial

from kubetrain.api.jobs import parse_job
from kubetrain.controller import reconciler
from kubetrain.frameworks.base import Framework
from kubetrain.kinds.registration import KindRegistration

MXJOB_DEPRECATED = "kubeflow.org/v1 MXJob is deprecated: upstream training-operator removed it in v1.9"


def generic(framework: Framework, *, admission_warning: str = "") -> KindRegistration:
    """The registration of a kind whose planner is the generic reconciler around `framework`."""
    return KindRegistration(
        versions=(framework.info,),
        planner=partial(reconciler.plan, framework=framework),
        parse=parse_job,
        framework_plugin=framework,
        webhook=True,
        admission_warning=admission_warning,
    )
