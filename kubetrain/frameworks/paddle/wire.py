# ruff: noqa: RUF009  (`wire()` returns a dataclasses.field; the call is the declaration, not a shared default)
"""PaddleJob's wire type and description: `paddleReplicaSpecs`, its elastic policy, and its
webhook's quirk of quoting the container name (docs/upstream-behaviour.md#validation)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubetrain.api.defaults import default_elastic_policy
from kubetrain.api.fielderrors import ErrorList
from kubetrain.api.guards import elastic_bounds, elastic_workers
from kubetrain.api.kinds import RESTART_ON_FAILURE, KindInfo, KindRules
from kubetrain.api.types import I32, REQUIRED, JsonDict, ReplicaSpec, RunPolicy, extra_keys, wire


@dataclass
class PaddleElasticPolicy:
    min_replicas: I32 | None = wire("minReplicas")
    max_replicas: I32 | None = wire("maxReplicas")
    max_restarts: I32 | None = wire("maxRestarts")
    metrics: list[JsonDict] | None = wire("metrics", schema="metric-list")
    extra: JsonDict = extra_keys()


@dataclass
class PaddleJobSpec:
    run_policy: RunPolicy | None = wire("runPolicy")
    replica_specs: dict[str, ReplicaSpec | None] | None = wire("paddleReplicaSpecs", schema=REQUIRED)
    elastic_policy: PaddleElasticPolicy | None = wire("elasticPolicy")
    extra: JsonDict = extra_keys()


def _spec_checks(spec: Any, errs: ErrorList) -> None:
    if isinstance(spec, PaddleJobSpec) and spec.elastic_policy is not None:
        elastic_bounds(errs, spec.elastic_policy)


def _spec_defaults(spec: Any) -> None:
    if isinstance(spec, PaddleJobSpec) and spec.elastic_policy is not None:
        spec.elastic_policy = default_elastic_policy(spec.elastic_policy, spec.replica_specs or {})


PADDLEJOB = KindInfo(
    kind="PaddleJob",
    plural="paddlejobs",
    singular="paddlejob",
    replica_specs_field="paddleReplicaSpecs",
    replica_types=("Master", "Worker"),
    default_container="paddle",
    default_port_name="master",
    default_port=36543,
    default_restart_policy=RESTART_ON_FAILURE,
    framework="paddle",
    controller_name="paddlejob-controller",
    spec_type=PaddleJobSpec,
    scale_subresource=True,
    rules=KindRules(
        quote_container_name=True,
        spec_checks=_spec_checks,
        spec_defaults=_spec_defaults,
        scaled_replicas=elastic_workers(PaddleJobSpec),
    ),
)
