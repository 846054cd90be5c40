"""JAXJob: coordinator env for `jax.distributed.initialize` (docs/upstream-behaviour.md#jaxjob)."""

from __future__ import annotations

from typing import ClassVar

from kubetrain.api.kinds import KindInfo
from kubetrain.api.types import TrainingJob
from kubetrain.frameworks._env import (
    JsonDict,
    append_env_all,
    default_port,
    env,
    replica_name,
    total_replicas,
)
from kubetrain.frameworks._status import PyTorchLikeStatus
from kubetrain.frameworks.base import FrameworkSettings, TopologyError
from kubetrain.frameworks.jax.wire import JAXJOB


def jax_env(job: TrainingJob, index: int) -> list[JsonDict]:
    """Every process dials worker-0's `jaxjob-port`; PROCESS_ID is the replica index."""
    port = default_port(JAXJOB, job.replica_specs.get("Worker"))
    if port is None:
        raise TopologyError("default container port is not exposed")
    return [
        env("PYTHONUNBUFFERED", "1"),
        env("COORDINATOR_PORT", str(port)),
        env("COORDINATOR_ADDRESS", replica_name(job.name, "worker", 0)),
        env("NUM_PROCESSES", str(total_replicas(job))),
        env("PROCESS_ID", str(index)),
    ]


class Jax(PyTorchLikeStatus):
    """JAXJob plugin: Worker is the only type, so the Worker branch of the shared rule decides."""

    info: ClassVar[KindInfo] = JAXJOB
    sets_replica_selector: ClassVar[bool] = True
    master_type: ClassVar[str | None] = None

    def is_master_role(self, job: TrainingJob, rtype: str, index: int) -> bool:
        return index == 0

    def set_cluster_spec(
        self, job: TrainingJob, pod: JsonDict, rtype: str, index: int, settings: FrameworkSettings
    ) -> None:
        append_env_all(pod, jax_env(job, index))

    def desired_children(self, job: TrainingJob, settings: FrameworkSettings) -> list[JsonDict]:
        return []


JAX = Jax()
