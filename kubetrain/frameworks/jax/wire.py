# ruff: noqa: RUF009  (`wire()` returns a dataclasses.field; the call is the declaration, not a shared default)
"""JAXJob's wire type and description: `jaxReplicaSpecs` (Workers only); its webhook checks no
`managedBy` at all (docs/upstream-behaviour.md#validation)."""

from __future__ import annotations

from dataclasses import dataclass

from kubetrain.api.kinds import RESTART_NEVER, KindInfo, KindRules
from kubetrain.api.types import REQUIRED, JsonDict, ReplicaSpec, RunPolicy, extra_keys, wire


@dataclass
class JAXJobSpec:
    run_policy: RunPolicy | None = wire("runPolicy")
    replica_specs: dict[str, ReplicaSpec | None] | None = wire("jaxReplicaSpecs", schema=REQUIRED)
    extra: JsonDict = extra_keys()


JAXJOB = KindInfo(
    kind="JAXJob",
    plural="jaxjobs",
    singular="jaxjob",
    replica_specs_field="jaxReplicaSpecs",
    replica_types=("Worker",),
    default_container="jax",
    default_port_name="jaxjob-port",
    default_port=6666,
    default_restart_policy=RESTART_NEVER,
    framework="jax",
    controller_name="jaxjob-controller",
    spec_type=JAXJobSpec,
    scale_subresource=True,
    rules=KindRules(checks_managed_by=False, managed_by_immutable=False),
)
