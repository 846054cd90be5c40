"""In-memory defaults of ChainerJob (a copy on every reconcile, never written back)."""

from __future__ import annotations

import dataclasses
from typing import Any

from kubetrain.api.standalone import with_restart_never
from kubetrain.kinds.chainerjob.types import ChainerJob, ChainerMasterSpec, MPIConfig, WorkerSetSpec

CHAINER_CONTAINER = "chainer"
CHAINER_BACKEND_MPI = "mpi"
GPU_RESOURCE = "nvidia.com/gpu"


def _with_container_name(template: Any, name: str) -> Any:
    """A single unnamed container gets `name` (chainer-operator's defaulting)."""
    if not isinstance(template, dict) or not isinstance(template.get("spec"), dict):
        return template
    containers = template["spec"].get("containers")
    if not isinstance(containers, list) or len(containers) != 1 or not isinstance(containers[0], dict):
        return template
    if containers[0].get("name"):
        return template
    return {**template, "spec": {**template["spec"], "containers": [{**containers[0], "name": name}]}}


def _gpu_slots(template: Any) -> int:
    """The `nvidia.com/gpu` limit of the `chainer` container, else 1 (distributed slots default)."""
    spec = template.get("spec") if isinstance(template, dict) else None
    containers = spec.get("containers") if isinstance(spec, dict) else None
    for container in containers if isinstance(containers, list) else []:
        if not isinstance(container, dict) or container.get("name") != CHAINER_CONTAINER:
            continue
        resources = container.get("resources")
        limits = resources.get("limits") if isinstance(resources, dict) else None
        value = limits.get(GPU_RESOURCE) if isinstance(limits, dict) else None
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, str) and value.isdigit():
            return int(value)
    return 1


def _slots(config: MPIConfig | None, template: Any) -> MPIConfig:
    if config is not None and config.slots is not None:
        return config
    slots = _gpu_slots(template)
    return MPIConfig(slots=slots) if config is None else dataclasses.replace(config, slots=slots)


def default_chainer(job: ChainerJob) -> ChainerJob:
    """chainer-operator's defaults (docs/upstream-behaviour.md#chainerjob)."""
    out = dataclasses.replace(job)
    if job.spec is None:
        return out
    spec = dataclasses.replace(job.spec)
    out.spec = spec
    distributed = bool(spec.worker_sets)
    master = spec.master or ChainerMasterSpec()
    template = _with_container_name(master.template, CHAINER_CONTAINER)
    template = with_restart_never(template)
    master = dataclasses.replace(master, template=template)
    if distributed:
        master.mpi_config = _slots(master.mpi_config, template)
        if not spec.backend:
            spec.backend = CHAINER_BACKEND_MPI
    spec.master = master
    if spec.worker_sets:
        sets: dict[str, WorkerSetSpec | None] = {}
        for name, wset in spec.worker_sets.items():
            if wset is None:
                sets[name] = None
                continue
            wtemplate = _with_container_name(wset.template, CHAINER_CONTAINER)
            sets[name] = dataclasses.replace(
                wset,
                template=wtemplate,
                replicas=1 if wset.replicas is None else wset.replicas,
                mpi_config=_slots(wset.mpi_config, wtemplate),
            )
        spec.worker_sets = sets
    return out
