# ruff: noqa: RUF009  (`wire()` returns a dataclasses.field; the call is the declaration, not a shared default)
"""PyTorchJob's wire type and description: `pytorchReplicaSpecs`, the elastic policy, `nprocPerNode`,
and its webhook's rules (docs/upstream-behaviour.md#pytorchjob, #pytorchjob-elastic, #validation)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from kubetrain.api.defaults import default_elastic_policy
from kubetrain.api.fielderrors import ErrorList, ValidationResult, forbidden, invalid, required
from kubetrain.api.guards import elastic_bounds, elastic_workers, enum
from kubetrain.api.kinds import RESTART_ON_FAILURE, KindInfo, KindRules
from kubetrain.api.types import I32, REQUIRED, JsonDict, ReplicaSpec, RunPolicy, TrainingJob, extra_keys, wire

RDZV_BACKENDS = ("c10d", "etcd", "etcd-v2")
NPROC_KEYWORDS = ("auto", "cpu", "gpu")
DEFAULT_NPROC_PER_NODE = "auto"
_POSITIVE_INT = re.compile(r"[1-9][0-9]*")


@dataclass
class RDZVConf:
    key: str | None = wire("key")
    value: str | None = wire("value")
    extra: JsonDict = extra_keys()


@dataclass
class ElasticPolicy:
    """PyTorchJob `spec.elasticPolicy` (torchrun elastic launch)."""

    min_replicas: I32 | None = wire("minReplicas")
    max_replicas: I32 | None = wire("maxReplicas")
    rdzv_backend: str | None = wire("rdzvBackend")
    rdzv_port: I32 | None = wire("rdzvPort")
    rdzv_host: str | None = wire("rdzvHost")
    rdzv_id: str | None = wire("rdzvId")
    rdzv_conf: list[RDZVConf] | None = wire("rdzvConf")
    standalone: bool | None = wire("standalone")
    n_proc_per_node: I32 | None = wire("nProcPerNode")
    max_restarts: I32 | None = wire("maxRestarts")
    metrics: list[JsonDict] | None = wire("metrics", schema="metric-list")
    extra: JsonDict = extra_keys()


@dataclass
class PyTorchJobSpec:
    run_policy: RunPolicy | None = wire("runPolicy")
    replica_specs: dict[str, ReplicaSpec | None] | None = wire("pytorchReplicaSpecs", schema=REQUIRED)
    elastic_policy: ElasticPolicy | None = wire("elasticPolicy")
    nproc_per_node: str | None = wire("nprocPerNode")
    extra: JsonDict = extra_keys()


def _elastic_needs_workers(job: TrainingJob, info: KindInfo, result: ValidationResult) -> None:
    spec = job.spec
    if not isinstance(spec, PyTorchJobSpec) or spec.elastic_policy is None:
        return
    if "Worker" not in job.replica_specs:
        result.errors.append(
            required(
                f"spec.{info.replica_specs_field}[Worker]", "must be configured if elastic policy is used"
            )
        )
    if spec.elastic_policy.n_proc_per_node is not None:
        result.warnings.append("spec.elasticPolicy.nProcPerNode is deprecated, use spec.nprocPerNode instead")
        if spec.nproc_per_node is not None:
            result.errors.append(
                forbidden("spec.elasticPolicy.nProcPerNode", "must not be used with spec.nprocPerNode")
            )


def _replica_count(rtype: str, rspec: ReplicaSpec | None, role_path: str, errs: ErrorList) -> None:
    replicas = rspec.replicas if rspec is not None else None
    if rtype == "Master":
        if replicas != 1:
            errs.append(forbidden(f"{role_path}.replicas", "must be 1"))
    elif replicas is not None and replicas < 1:
        errs.append(forbidden(f"{role_path}.replicas", "must be at least 1"))


def _spec_checks(spec: Any, errs: ErrorList) -> None:
    if not isinstance(spec, PyTorchJobSpec):
        return
    value = spec.nproc_per_node
    if not (value is None or value in NPROC_KEYWORDS or _POSITIVE_INT.fullmatch(value)):
        errs.append(invalid("spec.nprocPerNode", value, 'must be "auto", "cpu", "gpu" or a positive integer'))
    policy = spec.elastic_policy
    if policy is None:
        return
    elastic_bounds(errs, policy)
    base = "spec.elasticPolicy"
    if policy.rdzv_backend is not None:
        enum(errs, f"{base}.rdzvBackend", policy.rdzv_backend, RDZV_BACKENDS)
    if policy.rdzv_port is not None and not 1 <= policy.rdzv_port <= 65535:
        errs.append(invalid(f"{base}.rdzvPort", policy.rdzv_port, "must be between 1 and 65535, inclusive"))


def _spec_defaults(spec: Any) -> None:
    if not isinstance(spec, PyTorchJobSpec):
        return
    if spec.elastic_policy is not None:
        spec.elastic_policy = default_elastic_policy(spec.elastic_policy, spec.replica_specs or {})
    deprecated_nproc = spec.elastic_policy is not None and spec.elastic_policy.n_proc_per_node is not None
    if spec.nproc_per_node is None and not deprecated_nproc:
        spec.nproc_per_node = DEFAULT_NPROC_PER_NODE


PYTORCHJOB = KindInfo(
    kind="PyTorchJob",
    plural="pytorchjobs",
    singular="pytorchjob",
    replica_specs_field="pytorchReplicaSpecs",
    replica_types=("Master", "Worker"),
    default_container="pytorch",
    default_port_name="pytorchjob-port",
    default_port=23456,
    default_restart_policy=RESTART_ON_FAILURE,
    framework="pytorch",
    controller_name="pytorchjob-controller",
    spec_type=PyTorchJobSpec,
    scale_subresource=True,
    rules=KindRules(
        managed_by_immutable=False,  # upstream's update check compares the new object with itself
        before_replicas=_elastic_needs_workers,
        after_replica=_replica_count,
        spec_checks=_spec_checks,
        spec_defaults=_spec_defaults,
        scaled_replicas=elastic_workers(PyTorchJobSpec),
    ),
)
