"""The JAX ML policy plugin (upstream v2.3.0 `plugins/jax/jax.go`, `EnforceMLPolicy`): with a
runtime whose mlPolicy has `jax`, the trainer pod set's node count from `trainer.numNodes`, and on
the trainer's `node` container `jax.distributed.initialize`'s env plus the coordinator port:

    JAX_NUM_PROCESSES        the trainer pod set's count (one process per pod)
    JAX_PROCESS_ID           the pod's Job completion index (a fieldRef)
    JAX_COORDINATOR_ADDRESS  `<trainjob>-node-0-0.<trainjob>:29500` (process 0, via the headless service)
    ports                    containerPort 29500 (upstream `ContainerTrainerPort`)

As upstream: only when the TrainJob has a `trainer` (without one, no env and no port), and the
trainer's own env is not applied here but by the JobSet plugin afterwards, so a trainer env of the
same name wins (upstream's JAX `Validate` is a no-op: no reserved names).
"""

from __future__ import annotations

from typing import Any

from kubetrain.kinds.trainjob.apply import as_dict, upsert, upsert_all
from kubetrain.kinds.trainjob.constants import (
    ANCESTOR_TRAINER,
    CONTAINER_TRAINER_PORT,
    JAX_ENV_COORDINATOR_ADDRESS,
    JAX_ENV_NUM_PROCESSES,
    JAX_ENV_PROCESS_ID,
    JOB_COMPLETION_INDEX_FIELD_PATH,
    NODE,
)
from kubetrain.kinds.trainjob.info import Info

JsonDict = dict[str, Any]


def enforce(info: Info, trainjob: JsonDict) -> None:
    """Edit `info` as the JAX plugin does when the runtime's mlPolicy has `jax`."""
    if not isinstance(as_dict(info.ml_policy).get("jax"), dict):
        return
    spec = as_dict(trainjob.get("spec"))
    trainer = spec.get("trainer") if isinstance(spec.get("trainer"), dict) else None
    pod_set = info.pod_set_by_ancestor(ANCESTOR_TRAINER)
    if pod_set is not None and trainer is not None and isinstance(trainer.get("numNodes"), int):
        pod_set.count = trainer["numNodes"]
    container = info.trainer_container() if trainer is not None else None
    if container is None:
        return
    nodes = pod_set.count if pod_set is not None else 1
    name = str(as_dict(trainjob.get("metadata")).get("name") or "")
    upsert_all(
        container,
        "env",
        [
            {"name": JAX_ENV_NUM_PROCESSES, "value": str(nodes)},
            {
                "name": JAX_ENV_PROCESS_ID,
                "valueFrom": {"fieldRef": {"fieldPath": JOB_COMPLETION_INDEX_FIELD_PATH}},
            },
            {
                "name": JAX_ENV_COORDINATOR_ADDRESS,
                "value": f"{name}-{NODE}-0-0.{name}:{CONTAINER_TRAINER_PORT}",
            },
        ],
        "name",
    )
    ports = container.get("ports")
    if not isinstance(ports, list):
        ports = container["ports"] = []
    upsert(ports, {"containerPort": CONTAINER_TRAINER_PORT}, "containerPort")
