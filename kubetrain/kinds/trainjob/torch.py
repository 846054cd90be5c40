"""The torch ML policy plugin (upstream v2.3.0 `plugins/torch/torch.go`, `EnforceMLPolicy`): with a
runtime whose mlPolicy has `torch`, the trainer pod set's node count from `trainer.numNodes`, and
torchrun's env plus the rendezvous port on the trainer's `node` container:

    PET_NNODES           the trainer pod set's count
    PET_NPROC_PER_NODE   `trainer.numProcPerNode`, else "auto"; "auto" without a GPU per node
                         becomes the CPUs per node (requests, else limits; Value() rounds up; at
                         least 1), the resources per node being the TrainJob's resourcesPerNode,
                         else the runtime's `node` container's
    PET_NODE_RANK        the pod's Job completion index (a fieldRef)
    PET_MASTER_ADDR      `<trainjob>-node-0-0.<trainjob>`, and PET_MASTER_PORT 29500 (not for a
                         torchtune command `tune run`: it gets torchtune's arguments instead,
                         `torchtune.py`)

The env and port go there only when the TrainJob has a `trainer` (the trainer's own env first).
`envInjection` targets (a replicated job's container or init container, by name) get all five
whatever the command; a target the runtime lacks fails the runtime's objects with upstream's error
(the webhook refuses it first).
"""

from __future__ import annotations

import math
from typing import Any

from kubetrain.kinds.trainjob import torchtune
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
from kubetrain.kinds.trainjob.info import Info, gpus_per_node, runtime_resources_per_node
from kubetrain.kube.quantity import quantity_value

JsonDict = dict[str, Any]
ProcPerNode = int | str


def _cpu_value(resources: object) -> int:
    """`resources.Cpu().Value()`: the cpu quantity rounded up, 0 when absent or invalid."""
    raw = as_dict(resources).get("cpu")
    try:
        return math.ceil(quantity_value(raw)) if raw is not None else 0
    except (ValueError, TypeError):
        return 0


def cpus_per_node(resources: JsonDict | None) -> int:
    """upstream `getNumCPUPerNode`: the requests' cpu, else (zero or absent) the limits'."""
    if resources is None:
        return 0
    requested = _cpu_value(resources.get("requests"))
    return requested if requested else _cpu_value(resources.get("limits"))


def missing_target(job: str, container: str) -> str:
    """upstream's error (webhook and plugin alike) for an envInjection target the runtime lacks."""
    return f'envInjection target podSet "{job}" container "{container}" not found in runtime template'


def resources_per_node(info: Info, trainer: JsonDict | None) -> JsonDict | None:
    """The TrainJob's resourcesPerNode, else the runtime's `node` container's resources."""
    if trainer is not None and isinstance(trainer.get("resourcesPerNode"), dict):
        resources: JsonDict = trainer["resourcesPerNode"]
        return resources
    return runtime_resources_per_node(info)


def num_proc_per_node(info: Info, trainer: JsonDict | None) -> ProcPerNode:
    """PET_NPROC_PER_NODE's value as upstream v2.3.0 resolves it (module docstring)."""
    value: ProcPerNode = "auto"
    if trainer is not None:
        procs = trainer.get("numProcPerNode")
        if isinstance(procs, int) and not isinstance(procs, bool):
            value = procs
    resources = resources_per_node(info, trainer)
    if value == "auto" and gpus_per_node(resources) == 0:
        value = max(1, cpus_per_node(resources))
    return value


def enforce(info: Info, trainjob: JsonDict) -> str:
    """Edit `info` as the torch plugin does when the runtime's mlPolicy has `torch`; "" or
    upstream's error for an envInjection target the runtime lacks."""
    policy = as_dict(info.ml_policy).get("torch")
    if not isinstance(policy, dict):
        return ""
    spec = as_dict(trainjob.get("spec"))
    trainer = spec.get("trainer") if isinstance(spec.get("trainer"), dict) else None
    pod_set = info.pod_set_by_ancestor(ANCESTOR_TRAINER)
    if pod_set is not None and trainer is not None and isinstance(trainer.get("numNodes"), int):
        pod_set.count = trainer["numNodes"]
    name = str(as_dict(trainjob.get("metadata")).get("name") or "")
    nodes = pod_set.count if pod_set is not None else 1
    procs = num_proc_per_node(info, trainer)
    pet_env = [
        {"name": TORCH_ENV_NUM_NODES, "value": str(nodes)},
        {"name": TORCH_ENV_NUM_PROC_PER_NODE, "value": str(procs)},
        {
            "name": TORCH_ENV_NODE_RANK,
            "valueFrom": {"fieldRef": {"fieldPath": JOB_COMPLETION_INDEX_FIELD_PATH}},
        },
    ]
    master_env = [
        {"name": TORCH_ENV_MASTER_ADDR, "value": f"{name}-{NODE}-0-0.{name}"},
        {"name": TORCH_ENV_MASTER_PORT, "value": str(CONTAINER_TRAINER_PORT)},
    ]
    container = info.trainer_container() if trainer is not None else None
    if container is not None and trainer is not None:
        upsert_all(container, "env", as_list(trainer.get("env")), "name")
        upsert_all(container, "env", pet_env, "name")
        if tuple(as_list(trainer.get("command"))) != TORCH_TUNE_ENTRYPOINT:
            upsert_all(container, "env", master_env, "name")
        else:
            gpus = gpus_per_node(resources_per_node(info, trainer))
            info.trainer_command = torchtune.command(info.spec, trainjob, nodes, procs, gpus)
        ports = container.get("ports")
        if not isinstance(ports, list):
            ports = container["ports"] = []
        upsert(ports, {"containerPort": CONTAINER_TRAINER_PORT}, "containerPort")
    for target in as_list(as_dict(policy.get("envInjection")).get("targets")):
        job = str(as_dict(target).get("jobName") or "")
        for container_name in as_list(as_dict(target).get("containerNames")):
            target_set = info.pod_set_by_name(job)
            found = target_set.any_container(str(container_name)) if target_set is not None else None
            if found is None:
                return missing_target(job, str(container_name))
            upsert_all(found, "env", [*pet_env, *master_env], "name")
    return ""
