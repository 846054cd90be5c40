"""PaddleJob, one package: its wire type and description (`wire.py`) and its framework plugin
(`plugin.py`); `kubetrain.kinds.registry` registers it with `generic(PADDLE)`."""

from kubetrain.frameworks.paddle.plugin import PADDLE, Paddle
from kubetrain.frameworks.paddle.wire import PADDLEJOB, PaddleElasticPolicy, PaddleJobSpec

__all__ = ["PADDLE", "PADDLEJOB", "Paddle", "PaddleElasticPolicy", "PaddleJobSpec"]
