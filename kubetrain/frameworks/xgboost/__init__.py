"""XGBoostJob, one package: its wire type and description (`wire.py`) and its framework plugin
(`plugin.py`); `kubetrain.kinds.registry` registers it with `generic(XGBOOST)`."""

from kubetrain.frameworks.xgboost.plugin import XGBOOST, XGBoost
from kubetrain.frameworks.xgboost.wire import XGBOOSTJOB, XGBoostJobSpec

__all__ = ["XGBOOST", "XGBOOSTJOB", "XGBoost", "XGBoostJobSpec"]
