# ruff: noqa: RUF009  (`wire()` returns a dataclasses.field; the call is the declaration, not a shared default)
"""MXJob's wire type and description: `mxReplicaSpecs`, `jobMode`, and the ≤1.7 controller's rules
(replica-type keys and `managedBy` unchecked, at most one Scheduler;
docs/upstream-behaviour.md#validation)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubetrain.api.fielderrors import ErrorList, forbidden
from kubetrain.api.guards import enum
from kubetrain.api.kinds import RESTART_NEVER, KindInfo, KindRules
from kubetrain.api.types import REQUIRED, JsonDict, ReplicaSpec, RunPolicy, extra_keys, wire

MX_JOB_MODES = ("MXTrain", "MXTune")


@dataclass
class MXJobSpec:
    run_policy: RunPolicy | None = wire("runPolicy")
    job_mode: str | None = wire("jobMode")
    replica_specs: dict[str, ReplicaSpec | None] | None = wire("mxReplicaSpecs", schema=REQUIRED)
    extra: JsonDict = extra_keys()


def _one_scheduler(rtype: str, rspec: ReplicaSpec | None, role_path: str, errs: ErrorList) -> None:
    """≤1.7 allowed at most one Scheduler; with one map key per type that means one replica."""
    if rtype == "Scheduler" and rspec is not None and rspec.replicas is not None and rspec.replicas > 1:
        errs.append(forbidden(f"{role_path}.replicas", "must not have more than 1 Scheduler"))


def _spec_checks(spec: Any, errs: ErrorList) -> None:
    if isinstance(spec, MXJobSpec) and spec.job_mode is not None:
        enum(errs, "spec.jobMode", spec.job_mode, MX_JOB_MODES)


MXJOB = KindInfo(
    kind="MXJob",
    plural="mxjobs",
    singular="mxjob",
    replica_specs_field="mxReplicaSpecs",
    replica_types=("Scheduler", "Server", "Worker", "TunerTracker", "TunerServer", "Tuner"),
    default_container="mxnet",
    default_port_name="mxjob-port",
    default_port=9091,
    default_restart_policy=RESTART_NEVER,
    framework="mxnet",
    controller_name="mxjob-controller",
    spec_type=MXJobSpec,
    rules=KindRules(
        replica_types_checked=False,
        checks_managed_by=False,
        managed_by_immutable=False,
        after_replica=_one_scheduler,
        spec_checks=_spec_checks,
    ),
)
