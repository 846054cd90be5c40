"""Topology helpers shared by the framework plugins: names, ports, env vars, Go-compatible JSON.

Everything here is pure and cheap. The per-job values that cost O(replicas) to build (TF's
cluster, XGBoost's worker list, MXNet's MX_CONFIG) are memoised by the plugins on a hashable
fingerprint of their inputs, never on object identity, so a reused or mutated job object can
never be served a stale value.
"""

from __future__ import annotations

import json
import re
from typing import Any

from kubetrain.api.codec import json_clone
from kubetrain.api.kinds import KindInfo
from kubetrain.api.types import ReplicaSpec, TrainingJob

JsonDict = dict[str, Any]

# Go's encoding/json escapes these inside strings (HTML safety); they never occur structurally.
_GO_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
_GO_ESCAPE_RE = re.compile("[<>&\u2028\u2029]")
_GO_INT_RE = re.compile(r"[+-]?[0-9]+")


def go_json(obj: Any) -> str:
    """Serialise exactly like Go's `json.Marshal` for the shapes we emit (compact, HTML-escaped).

    Callers build dicts in Go's key order: struct fields in declaration order, map keys sorted.
    """
    text = json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
    return _GO_ESCAPE_RE.sub(lambda m: _GO_ESCAPES[m.group(0)], text)


def go_atoi(text: str | None) -> int | None:
    """`strconv.Atoi`: the integer value of a decimal string, or None when it is not one."""
    if text is None or not _GO_INT_RE.fullmatch(text):
        return None
    return int(text)


def replica_name(job_name: str, rtype: str, index: int) -> str:
    """`<job>-<rt>-<i>` with `rt` lower-cased and any `/` replaced (docs/upstream-behaviour.md#names)."""
    return f"{job_name}-{rtype.lower()}-{index}".replace("/", "-")


def canonical(info: KindInfo, rtype: str) -> str:
    """The CamelCase replica type for `rtype` given in any casing (callers pass either form)."""
    if rtype in info.replica_types:
        return rtype
    return info.canonical_replica_type(rtype) or rtype


def spec_of(job: TrainingJob, rtype: str) -> ReplicaSpec | None:
    return job.replica_specs.get(rtype)


def replicas_of(spec: ReplicaSpec | None) -> int:
    """Replica count of a (defaulted) spec; a missing spec contributes nothing."""
    if spec is None or spec.replicas is None:
        return 0
    return spec.replicas


def total_replicas(job: TrainingJob) -> int:
    return sum(replicas_of(spec) for spec in job.replica_specs.values())


def template_containers(spec: ReplicaSpec | None) -> list[JsonDict]:
    """The containers of a replica spec's pod template ([] when absent or malformed)."""
    if spec is None or not isinstance(spec.template, dict):
        return []
    pod_spec = spec.template.get("spec")
    if not isinstance(pod_spec, dict):
        return []
    containers = pod_spec.get("containers")
    return [c for c in containers if isinstance(c, dict)] if isinstance(containers, list) else []


def container_port(spec: ReplicaSpec | None, container_name: str, port_name: str) -> int | None:
    """containerPort of the port `port_name` on the container `container_name`, like upstream's
    `getPortFrom<Kind>Job`; None when the container or the port is missing."""
    for container in template_containers(spec):
        if container.get("name") != container_name:
            continue
        for port in container.get("ports") or []:
            if isinstance(port, dict) and port.get("name") == port_name:
                value = port.get("containerPort")
                if isinstance(value, int) and not isinstance(value, bool):
                    return value
    return None


def default_port(info: KindInfo, spec: ReplicaSpec | None) -> int | None:
    """The kind's named port on the kind's default container of `spec`."""
    return container_port(spec, info.default_container, info.default_port_name)


def env(name: str, value: str) -> JsonDict:
    return {"name": name, "value": value}


def pod_containers(pod: JsonDict) -> list[JsonDict]:
    """The containers of a pod being built (the reconciler guarantees `spec.containers`)."""
    pod_spec = pod.setdefault("spec", {})
    containers = pod_spec.get("containers")
    if not isinstance(containers, list):
        containers = pod_spec["containers"] = []
    return containers


def append_env(container: JsonDict, env_vars: list[JsonDict]) -> None:
    """Append after the user's env: the last duplicate wins, so ours override, as upstream's do
    (docs/upstream-behaviour.md#quirks-kept).

    Each container gets its own copies: pods are serialised later and must not share dicts.
    """
    current = container.get("env")
    if not isinstance(current, list):
        current = container["env"] = []
    current.extend(json_clone(var) if "valueFrom" in var else dict(var) for var in env_vars)


def append_env_all(pod: JsonDict, env_vars: list[JsonDict]) -> None:
    for container in pod_containers(pod):
        append_env(container, env_vars)
