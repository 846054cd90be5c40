"""PyTorchJob, one package: its wire type and description (`wire.py`) and its framework plugin
(`plugin.py`); `kubetrain.kinds.registry` registers it with `generic(PYTORCH)`."""

from kubetrain.frameworks.pytorch.plugin import DEFAULT_INIT_CONTAINER_TEMPLATE, PYTORCH, PyTorch
from kubetrain.frameworks.pytorch.wire import PYTORCHJOB, ElasticPolicy, PyTorchJobSpec, RDZVConf

__all__ = [
    "DEFAULT_INIT_CONTAINER_TEMPLATE",
    "PYTORCH",
    "PYTORCHJOB",
    "ElasticPolicy",
    "PyTorch",
    "PyTorchJobSpec",
    "RDZVConf",
]
