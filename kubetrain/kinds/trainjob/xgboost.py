"""The XGBoost ML policy plugin (upstream v2.3.0 `plugins/xgboost/xgboost.go`, `EnforceMLPolicy`):
with a runtime whose mlPolicy has `xgboost`, the trainer pod set's node count from
`trainer.numNodes`, and on the trainer's `node` container the collective's `DMLC_*` env plus the
tracker port:

    DMLC_TRACKER_URI   `<trainjob>-node-0-0.<trainjob>` (rank 0 runs the RabitTracker)
    DMLC_TRACKER_PORT  29500 (upstream `ContainerTrainerPort`)
    DMLC_TASK_ID       the pod's Job completion index (a fieldRef)
    DMLC_NUM_WORKER    nodes x workers per node: the GPU count per node (requests, else limits,
                       of the first resource whose name has "gpu"), 1 without GPUs
    ports              containerPort 29500

The resources per node are the runtime's `node` container's, replaced whole by the TrainJob's
`resourcesPerNode` when it has one. As upstream: only when the TrainJob has a `trainer` (without
one, no env and no port); the trainer's own env comes from the JobSet plugin afterwards, and the
webhook forbids it the four `DMLC_*` names (`validation._xgboost`).
"""

from __future__ import annotations

from typing import Any

from kubetrain.kinds.trainjob.apply import as_dict, upsert, upsert_all
from kubetrain.kinds.trainjob.constants import (
    ANCESTOR_TRAINER,
    CONTAINER_TRAINER_PORT,
    JOB_COMPLETION_INDEX_FIELD_PATH,
    NODE,
    XGBOOST_ENV_NUM_WORKER,
    XGBOOST_ENV_TASK_ID,
    XGBOOST_ENV_TRACKER_PORT,
    XGBOOST_ENV_TRACKER_URI,
)
from kubetrain.kinds.trainjob.info import Info, gpus_per_node, runtime_resources_per_node

JsonDict = dict[str, Any]


def enforce(info: Info, trainjob: JsonDict) -> None:
    """Edit `info` as the XGBoost plugin does when the runtime's mlPolicy has `xgboost`."""
    if not isinstance(as_dict(info.ml_policy).get("xgboost"), dict):
        return
    pod_set = info.pod_set_by_ancestor(ANCESTOR_TRAINER)
    if pod_set is None:
        return
    spec = as_dict(trainjob.get("spec"))
    trainer = spec.get("trainer") if isinstance(spec.get("trainer"), dict) else None
    if trainer is not None and isinstance(trainer.get("numNodes"), int):
        pod_set.count = trainer["numNodes"]
    container = info.trainer_container() if trainer is not None else None
    if container is None or trainer is None:
        return
    resources = runtime_resources_per_node(info)
    if isinstance(trainer.get("resourcesPerNode"), dict):
        resources = trainer["resourcesPerNode"]
    workers = pod_set.count * (gpus_per_node(resources) or 1)
    name = str(as_dict(trainjob.get("metadata")).get("name") or "")
    upsert_all(
        container,
        "env",
        [
            {"name": XGBOOST_ENV_TRACKER_URI, "value": f"{name}-{NODE}-0-0.{name}"},
            {"name": XGBOOST_ENV_TRACKER_PORT, "value": str(CONTAINER_TRAINER_PORT)},
            {
                "name": XGBOOST_ENV_TASK_ID,
                "valueFrom": {"fieldRef": {"fieldPath": JOB_COMPLETION_INDEX_FIELD_PATH}},
            },
            {"name": XGBOOST_ENV_NUM_WORKER, "value": str(workers)},
        ],
        "name",
    )
    ports = container.get("ports")
    if not isinstance(ports, list):
        ports = container["ports"] = []
    upsert(ports, {"containerPort": CONTAINER_TRAINER_PORT}, "containerPort")
