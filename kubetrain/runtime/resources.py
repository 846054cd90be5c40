"""The kinds the operator talks to: Kubernetes' built-ins plus the custom kinds it manages.

A static, extensible table is cheaper and more predictable than discovery; `register` adds kinds
(e.g. from the CRDs we install). The built-in part is `kubetrain.kube.resources`, shared with the
embedded API server.
"""

from __future__ import annotations

from kubetrain.kube.resources import BUILTIN_TYPES, ResourceRegistry, ResourceType

_CUSTOM: tuple[tuple[str, str, str, bool], ...] = (
    ("scheduling.volcano.sh/v1beta1", "PodGroup", "podgroups", True),
    ("scheduling.x-k8s.io/v1alpha1", "PodGroup", "podgroups", True),
    ("kubeflow.org/v1", "TFJob", "tfjobs", True),
    ("kubeflow.org/v1", "PyTorchJob", "pytorchjobs", True),
    ("kubeflow.org/v1", "XGBoostJob", "xgboostjobs", True),
    ("kubeflow.org/v1", "PaddleJob", "paddlejobs", True),
    ("kubeflow.org/v1", "JAXJob", "jaxjobs", True),
    ("kubeflow.org/v1", "MXJob", "mxjobs", True),
    ("kubeflow.org/v1", "MPIJob", "mpijobs", True),
    ("kubeflow.org/v2beta1", "MPIJob", "mpijobs", True),
    ("kubeflow.org/v1alpha1", "ChainerJob", "chainerjobs", True),
    ("kubeflow.org/v1alpha1", "Caffe2Job", "caffe2jobs", True),
)


def default_registry() -> ResourceRegistry:
    """A fresh registry of the built-ins and the custom kinds (callers register more into it)."""
    return ResourceRegistry(BUILTIN_TYPES + tuple(ResourceType(*row) for row in _CUSTOM))
