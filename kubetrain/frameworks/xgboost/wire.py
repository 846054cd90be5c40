# ruff: noqa: RUF009  (`wire()` returns a dataclasses.field; the call is the declaration, not a shared default)
"""XGBoostJob's wire type and description: `xgbReplicaSpecs` and its webhook's rules (one Master,
always present; docs/upstream-behaviour.md#validation)."""

from __future__ import annotations

from dataclasses import dataclass

from kubetrain.api.fielderrors import ErrorList, ValidationResult, forbidden, required
from kubetrain.api.kinds import RESTART_NEVER, KindInfo, KindRules
from kubetrain.api.types import REQUIRED, JsonDict, ReplicaSpec, RunPolicy, TrainingJob, extra_keys, wire


@dataclass
class XGBoostJobSpec:
    run_policy: RunPolicy | None = wire("runPolicy")
    replica_specs: dict[str, ReplicaSpec | None] | None = wire("xgbReplicaSpecs", schema=REQUIRED)
    extra: JsonDict = extra_keys()


def _one_master(rtype: str, rspec: ReplicaSpec | None, role_path: str, errs: ErrorList) -> None:
    if rtype == "Master" and (rspec is None or rspec.replicas != 1):
        errs.append(forbidden(f"{role_path}.replicas", "must be 1"))


def _master_present(job: TrainingJob, info: KindInfo, result: ValidationResult) -> None:
    if "Master" not in job.replica_specs:
        result.errors.append(required(f"spec.{info.replica_specs_field}[Master]", "must be present"))


XGBOOSTJOB = KindInfo(
    kind="XGBoostJob",
    plural="xgboostjobs",
    singular="xgboostjob",
    replica_specs_field="xgbReplicaSpecs",
    replica_types=("Master", "Worker"),
    default_container="xgboost",
    default_port_name="xgboostjob-port",
    default_port=9999,
    default_restart_policy=RESTART_NEVER,
    framework="xgboost",
    controller_name="xgboostjob-controller",
    spec_type=XGBoostJobSpec,
    rules=KindRules(after_replica=_one_master, after_replicas=_master_present),
)
