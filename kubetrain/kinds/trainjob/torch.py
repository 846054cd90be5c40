"""The torch ML policy plugin (upstream `plugins/torch/torch.go`, `EnforceMLPolicy`): the trainer
pod set's node count from `trainer.numNodes`, `numProcPerNode` (from the TrainJob, else the
runtime, else "auto", resolved against `resourcesPerNode`), and torchrun's `PET_*` env plus the
rendezvous port on the trainer's `node` container.

Not here yet: torchtune (a trainer command `tune run`), whose arguments upstream rewrites instead
of setting the env; such a TrainJob gets the trainer's env and the port only.
"""

from __future__ import annotations

import math
from typing import Any

from kubetrain.kinds.trainjob.apply import as_dict, as_list, upsert, upsert_all
from kubetrain.kinds.trainjob.constants import (
    ANCESTOR_TRAINER,
    CONTAINER_TRAINER_PORT,
    JOB_COMPLETION_INDEX_FIELD_PATH,
    NODE,
    TORCH_ENV_MASTER_ADDR,
    TORCH_ENV_MASTER_PORT,
    TORCH_ENV_NODE_RANK,
    TORCH_ENV_NUM_NODES,
    TORCH_ENV_NUM_PROC_PER_NODE,
    TORCH_TUNE_ENTRYPOINT,
)
from kubetrain.kinds.trainjob.info import Info
from kubetrain.kube.quantity import quantity_value

JsonDict = dict[str, Any]
ProcPerNode = int | str


def _cpu_count(resources: JsonDict) -> int:
    """`max(1, resources[cpu].Value())` (Value rounds up; a missing cpu is 0)."""
    raw = resources.get("cpu")
    try:
        value = quantity_value(raw) if raw is not None else 0
    except (ValueError, TypeError):
        value = 0
    return max(1, math.ceil(value))


def _per_node(fallback: ProcPerNode, resources: object, mode: str) -> tuple[ProcPerNode, bool]:
    """upstream `calculateNumProcPerNode`: (procs, whether the cpu count decided)."""
    if not isinstance(resources, dict):
        return 1, False
    if mode == "auto":
        use_cpu = not any("gpu" in str(name).lower() for name in resources)
    elif mode == "cpu":
        use_cpu = "cpu" in resources
    else:
        use_cpu = False
    if use_cpu:
        return _cpu_count(resources), True
    return fallback, False


def num_proc_per_node(policy: JsonDict, trainer: JsonDict | None) -> ProcPerNode:
    value: Any = policy.get("numProcPerNode", "auto")
    if trainer is not None and trainer.get("numProcPerNode") is not None:
        value = trainer["numProcPerNode"]
    if not isinstance(value, (int, str)) or isinstance(value, bool):
        value = "auto"
    if trainer is not None and isinstance(trainer.get("resourcesPerNode"), dict):
        mode = str(value)
        fallback: ProcPerNode = "auto" if mode == "auto" else 1 if mode == "cpu" else value
        resources = trainer["resourcesPerNode"]
        value, used_cpu = _per_node(fallback, resources.get("limits"), mode)
        if not used_cpu:
            value, _ = _per_node(fallback, resources.get("requests"), mode)
    return value


def enforce(info: Info, trainjob: JsonDict) -> None:
    """Edit `info` as the torch plugin does when the runtime's mlPolicy has `torch`."""
    policy = as_dict(info.ml_policy).get("torch")
    if not isinstance(policy, dict):
        return
    spec = as_dict(trainjob.get("spec"))
    trainer = spec.get("trainer") if isinstance(spec.get("trainer"), dict) else None
    pod_set = info.pod_set_by_ancestor(ANCESTOR_TRAINER)
    if pod_set is not None and trainer is not None and isinstance(trainer.get("numNodes"), int):
        pod_set.count = trainer["numNodes"]
    procs = num_proc_per_node(policy, trainer)
    container = info.trainer_container() if trainer is not None else None
    if container is None or trainer is None:
        return
    upsert_all(container, "env", as_list(trainer.get("env")), "name")
    name = str(as_dict(trainjob.get("metadata")).get("name") or "")
    if tuple(as_list(trainer.get("command"))) != TORCH_TUNE_ENTRYPOINT:
        nodes = pod_set.count if pod_set is not None else 1
        upsert_all(
            container,
            "env",
            [
                {"name": TORCH_ENV_NUM_NODES, "value": str(nodes)},
                {"name": TORCH_ENV_NUM_PROC_PER_NODE, "value": str(procs)},
                {
                    "name": TORCH_ENV_NODE_RANK,
                    "valueFrom": {"fieldRef": {"fieldPath": JOB_COMPLETION_INDEX_FIELD_PATH}},
                },
                {"name": TORCH_ENV_MASTER_ADDR, "value": f"{name}-{NODE}-0-0.{name}"},
                {"name": TORCH_ENV_MASTER_PORT, "value": str(CONTAINER_TRAINER_PORT)},
            ],
            "name",
        )
    ports = container.get("ports")
    if not isinstance(ports, list):
        ports = container["ports"] = []
    upsert(ports, {"containerPort": CONTAINER_TRAINER_PORT}, "containerPort")
