"""Framework plugins by kind: the reconciler's only way to find one."""

from __future__ import annotations

from kubetrain.frameworks.base import Framework
from kubetrain.frameworks.jax import JAX
from kubetrain.frameworks.mxnet import MXNET
from kubetrain.frameworks.paddle import PADDLE
from kubetrain.frameworks.pytorch import PYTORCH
from kubetrain.frameworks.tensorflow import TENSORFLOW
from kubetrain.frameworks.xgboost import XGBOOST

FRAMEWORKS: dict[str, Framework] = {
    plugin.info.kind: plugin for plugin in (TENSORFLOW, PYTORCH, XGBOOST, PADDLE, JAX, MXNET)
}


def framework_for(kind: str) -> Framework:
    """The plugin of a generic-path kind; KeyError for kinds served elsewhere (MPIJob, ...)."""
    try:
        return FRAMEWORKS[kind]
    except KeyError:
        raise KeyError(f"no framework plugin for kind {kind!r}") from None
