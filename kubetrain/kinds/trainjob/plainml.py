"""The plain ML plugin (upstream v2.3.0 `plugins/plainml/plainml.go`, `EnforceMLPolicy`): for a
runtime whose mlPolicy names none of torch, mpi and jax (no mlPolicy, only `numNodes`, xgboost or
flux), the trainer pod set's node count is the TrainJob's `trainer.numNodes`. Without it a
TrainJob on a plain runtime would run the runtime's count of nodes whatever it asked for. (The
plugin's other half, the trainer's env on the `node` container, is the JobSet plugin's too and is
done there.)"""

from __future__ import annotations

from typing import Any

from kubetrain.kinds.trainjob.apply import as_dict
from kubetrain.kinds.trainjob.constants import ANCESTOR_TRAINER
from kubetrain.kinds.trainjob.info import Info

JsonDict = dict[str, Any]
FRAMEWORK_POLICIES = ("torch", "mpi", "jax")
"""The policies whose own plugins count the nodes (and for which this one stands aside)."""


def enforce(info: Info, trainjob: JsonDict) -> None:
    policy = as_dict(info.ml_policy)
    if any(policy.get(name) is not None for name in FRAMEWORK_POLICIES):
        return
    nodes = as_dict(as_dict(trainjob.get("spec")).get("trainer")).get("numNodes")
    if not isinstance(nodes, int) or isinstance(nodes, bool):
        return
    pod_set = info.pod_set_by_ancestor(ANCESTOR_TRAINER)
    if pod_set is not None:
        pod_set.count = nodes
