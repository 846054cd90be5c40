"""MXJob, one package: its wire type and description (`wire.py`) and its framework plugin
(`plugin.py`); `kubetrain.kinds.registry` registers it with `generic(MXNET, ...)`."""

from kubetrain.frameworks.mxnet.plugin import MXNET, MXNet
from kubetrain.frameworks.mxnet.wire import MXJOB, MXJobSpec

__all__ = ["MXJOB", "MXNET", "MXJobSpec", "MXNet"]
