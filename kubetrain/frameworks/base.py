"""The contract between the framework-agnostic reconciler and one framework (TF, PyTorch, ...).

A framework knows its kind's topology (which env each replica needs), which pod carries the
master role, how its replica counts turn into Running/Succeeded/Failed conditions, and which
extra objects it wants (PyTorch's HPA). Everything else — pods, services, restarts, limits,
cleanup, gang scheduling — is the controller's. Adding a framework is its package
(`kubetrain/frameworks/<name>/`: `wire.py` with its spec type and `KindInfo`, `plugin.py` with
this plugin), its tests and a registry line (`kubetrain.kinds.registry`; docs/kinds.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Protocol

from kubetrain.api.conditions import set_condition
from kubetrain.api.kinds import KindInfo
from kubetrain.api.types import JobStatus, ReplicaSpec, TrainingJob

JsonDict = dict[str, Any]


class TopologyError(Exception):
    """The job's pods cannot be built (e.g. the rendezvous port is missing); becomes FailedCreatePod."""


@dataclass(frozen=True)
class FrameworkSettings:
    """Operator-level settings a framework may read (a projection of the controller config)."""

    cluster_domain: str = ""
    pytorch_init_container_image: str = "alpine:3.10"
    pytorch_init_container_max_tries: int = 100
    pytorch_init_container_template: str | None = None


@dataclass
class StatusContext:
    """What a framework's status rule may read and the effects it may produce.

    `job` has its defaults applied. `status.replica_statuses` has just been recounted from the
    pods. `pods` are the job's observed pods (raw dicts). Conditions go through `set_condition`
    (the upstream algebra), events and metric increments are collected for the plan.
    """

    job: TrainingJob
    status: JobStatus
    pods: Sequence[JsonDict]
    now: str
    events: list[tuple[Literal["Normal", "Warning"], str, str]] = field(default_factory=list)
    metrics: list[str] = field(default_factory=list)
    """Upstream counter names to increment, e.g. "training_operator_jobs_successful_total"."""

    def condition(self, cond_type: str, cond_status: str, reason: str, message: str) -> bool:
        return set_condition(self.status, cond_type, cond_status, reason, message, self.now)

    def event(self, etype: Literal["Normal", "Warning"], reason: str, message: str) -> None:
        self.events.append((etype, reason, message))

    def replica_spec(self, rtype: str) -> ReplicaSpec | None:
        return self.job.replica_specs.get(rtype)


class Framework(Protocol):
    """One framework plugin; implementations are stateless module-level singletons."""

    info: ClassVar[KindInfo]
    sets_replica_selector: ClassVar[bool]
    """PyTorch, Paddle and JAX publish `replicaStatuses[T].selector` (used by the scale subresource)."""

    def is_master_role(self, job: TrainingJob, rtype: str, index: int) -> bool:
        """Whether pod (rtype, index) gets the `training.kubeflow.org/job-role=master` label."""
        ...

    def set_cluster_spec(
        self, job: TrainingJob, pod: JsonDict, rtype: str, index: int, settings: FrameworkSettings
    ) -> None:
        """Inject the topology (env, init containers) into a pod being built; raise TopologyError."""
        ...

    def update_status(self, ctx: StatusContext) -> None:
        """Apply the kind's Running/Succeeded/Restarting/Failed rules to `ctx.status`
        (docs/upstream-behaviour.md#status-rules)."""
        ...

    def desired_children(self, job: TrainingJob, settings: FrameworkSettings) -> list[JsonDict]:
        """Extra owned objects this job should have right now (e.g. PyTorch's HPA); [] for most."""
        ...
