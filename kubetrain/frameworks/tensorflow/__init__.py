"""TFJob, one package: its wire type and description (`wire.py`) and its framework plugin
(`plugin.py`); `kubetrain.kinds.registry` registers it with `generic(TENSORFLOW)`."""

from kubetrain.frameworks.tensorflow.plugin import TENSORFLOW, TensorFlow
from kubetrain.frameworks.tensorflow.wire import TFJOB, TFJobSpec

__all__ = ["TENSORFLOW", "TFJOB", "TFJobSpec", "TensorFlow"]
