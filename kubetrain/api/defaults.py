"""In-memory defaults of a training job (docs/upstream-behaviour.md#defaults).

Upstream has no mutating webhook: the controller defaults a copy of the job at the start of every
reconcile and never writes the defaults back, so `kubectl get -o yaml` keeps showing the user's
spec. We do the same, and because it runs on every reconcile of every job (a 1,000-replica job
included), `apply_defaults` copies only what it changes (copy-on-write) instead of deep-copying the
job: the result shares unchanged subtrees (metadata, status, pod templates whose default port is
already there) with the input. Neither object is mutated afterwards by kubetrain — the reconciler
treats both as read-only, as a controller must treat its cache — and the frameworks deep-copy a
template before turning it into a pod (docs/upstream-behaviour.md#pod-template).

Malformed input (a template that is not an object, containers that are not a list, ...) is left
as it is: defaulting never raises, validation reports the problem.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Protocol, TypeVar, cast

from kubetrain.api.kinds import CLEAN_POD_NONE, KindInfo
from kubetrain.api.types import ReplicaSpec, RunPolicy, TrainingJob

DEFAULT_REPLICAS = 1


class _ElasticBounds(Protocol):
    min_replicas: int | None
    max_replicas: int | None


PolicyT = TypeVar("PolicyT", bound=_ElasticBounds)


def apply_defaults(job: TrainingJob, info: KindInfo) -> TrainingJob:
    """A defaulted copy of `job` (the input is never mutated; see the module docstring on sharing)."""
    out = dataclasses.replace(job)
    spec = job.spec
    if spec is None:
        return out
    spec = dataclasses.replace(cast(Any, spec))  # every kind's spec type is a dataclass
    out.spec = spec
    spec.run_policy = _default_run_policy(spec.run_policy)
    if spec.replica_specs is not None:
        spec.replica_specs = {
            rtype: None if rspec is None else _default_replica_spec(rspec, info)
            for rtype, rspec in normalize_replica_types(spec.replica_specs, info).items()
        }
    if info.rules.spec_defaults is not None:
        info.rules.spec_defaults(spec)
    return out


def normalize_replica_types(specs: dict[str, Any], info: KindInfo) -> dict[str, Any]:
    """Replica-type keys in canonical casing (`worker` -> `Worker`), order kept.

    Keys that match no known type are kept as they are (validation rejects them). When two keys
    fold to the same type (`Worker` and `worker`), the first one in document order wins and the
    other is dropped; upstream's choice depends on Go's random map order, and validation rejects
    such a job anyway (a kubetrain addition).
    """
    out: dict[str, Any] = {}
    for key, value in specs.items():
        canonical = info.canonical_replica_type(key) or key
        if canonical not in out:
            out[canonical] = value
    return out


def _default_run_policy(policy: RunPolicy | None) -> RunPolicy:
    if policy is None:
        return RunPolicy(clean_pod_policy=CLEAN_POD_NONE)
    if policy.clean_pod_policy:
        return policy
    return dataclasses.replace(policy, clean_pod_policy=CLEAN_POD_NONE)


def _default_replica_spec(rspec: ReplicaSpec, info: KindInfo) -> ReplicaSpec:
    changes: dict[str, Any] = {}
    if rspec.replicas is None:
        changes["replicas"] = DEFAULT_REPLICAS
    if not rspec.restart_policy:
        changes["restart_policy"] = info.default_restart_policy
    template = with_default_port(rspec.template, info)
    if template is not rspec.template:
        changes["template"] = template
    return dataclasses.replace(rspec, **changes) if changes else rspec


def with_default_port(template: Any, info: KindInfo) -> Any:
    """The template with the kind's default port on its default container (upstream's port
    defaulting: docs/upstream-behaviour.md#defaults).

    The container named like the kind's default container is used, else container 0. If it has
    no port with the default port NAME, `{name, containerPort}` is appended (an existing port with
    that name keeps its number). Returns the same object when nothing changes; otherwise only the
    path down to that container's ports is copied.
    """
    if not isinstance(template, dict):
        return template
    pod_spec = template.get("spec")
    if not isinstance(pod_spec, dict):
        return template
    containers = pod_spec.get("containers")
    if not isinstance(containers, list) or not containers:
        return template
    index = next(
        (
            i
            for i, c in enumerate(containers)
            if isinstance(c, dict) and c.get("name") == info.default_container
        ),
        0,
    )
    container = containers[index]
    if not isinstance(container, dict):
        return template
    ports = container.get("ports")
    if ports is None:
        ports = []
    if not isinstance(ports, list):
        return template
    if any(isinstance(p, dict) and p.get("name") == info.default_port_name for p in ports):
        return template
    new_container = {
        **container,
        "ports": [*ports, {"name": info.default_port_name, "containerPort": info.default_port}],
    }
    new_containers = list(containers)
    new_containers[index] = new_container
    return {**template, "spec": {**pod_spec, "containers": new_containers}}


def default_elastic_policy(policy: PolicyT, specs: dict[str, ReplicaSpec | None]) -> PolicyT:
    """min/max replicas: one given -> both equal it; none -> both = Worker replicas
    (docs/upstream-behaviour.md#pytorchjob-elastic); `policy` is a kind's elastic-policy dataclass
    with `min_replicas` and `max_replicas`."""
    low, high = policy.min_replicas, policy.max_replicas
    if low is not None and high is not None:
        return policy
    if high is not None:
        low = high
    elif low is not None:
        high = low
    else:
        worker = specs.get("Worker")
        if worker is None or worker.replicas is None:
            return policy
        low = high = worker.replicas
    return cast(PolicyT, dataclasses.replace(cast(Any, policy), min_replicas=low, max_replicas=high))
