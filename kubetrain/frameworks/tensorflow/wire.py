# ruff: noqa: RUF009  (`wire()` returns a dataclasses.field; the call is the declaration, not a shared default)
"""TFJob's wire type and description: `tfReplicaSpecs`, `successPolicy`, and its webhook's rules
(docs/upstream-behaviour.md#tfjob, #validation)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubetrain.api.fielderrors import ErrorList, ValidationResult, forbidden
from kubetrain.api.guards import enum
from kubetrain.api.kinds import RESTART_NEVER, KindInfo, KindRules
from kubetrain.api.types import REQUIRED, JsonDict, ReplicaSpec, RunPolicy, TrainingJob, extra_keys, wire

SUCCESS_POLICIES = ("", "AllWorkers")
SUCCESS_POLICY_DEFAULT = ""


@dataclass
class TFJobSpec:
    run_policy: RunPolicy | None = wire("runPolicy")
    replica_specs: dict[str, ReplicaSpec | None] | None = wire("tfReplicaSpecs", schema=REQUIRED)
    success_policy: str | None = wire("successPolicy")
    enable_dynamic_worker: bool | None = wire("enableDynamicWorker")
    extra: JsonDict = extra_keys()


def _one_chief_or_master(job: TrainingJob, info: KindInfo, result: ValidationResult) -> None:
    chief_or_master = sum(1 for rtype in job.replica_specs if rtype in ("Chief", "Master"))
    if chief_or_master > 1:
        result.errors.append(
            forbidden(f"spec.{info.replica_specs_field}", "must not have more than 1 Chief or Master role")
        )


def _spec_checks(spec: Any, errs: ErrorList) -> None:
    if isinstance(spec, TFJobSpec) and spec.success_policy is not None:
        enum(errs, "spec.successPolicy", spec.success_policy, SUCCESS_POLICIES)


def _spec_defaults(spec: Any) -> None:
    if isinstance(spec, TFJobSpec) and spec.success_policy is None:
        spec.success_policy = SUCCESS_POLICY_DEFAULT


TFJOB = KindInfo(
    kind="TFJob",
    plural="tfjobs",
    singular="tfjob",
    replica_specs_field="tfReplicaSpecs",
    replica_types=("PS", "Worker", "Chief", "Master", "Evaluator"),
    default_container="tensorflow",
    default_port_name="tfjob-port",
    default_port=2222,
    default_restart_policy=RESTART_NEVER,
    framework="tensorflow",
    controller_name="tfjob-controller",
    spec_type=TFJobSpec,
    rules=KindRules(
        replica_types_checked=False,  # upstream's TFJob webhook does not validate the keys
        after_replicas=_one_chief_or_master,
        spec_checks=_spec_checks,
        spec_defaults=_spec_defaults,
    ),
)
