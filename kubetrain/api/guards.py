"""Validation rules kubetrain adds to upstream's webhooks (documented in the README's differences).

Upstream accepts jobs that can never run, or that break the operator later, because its webhooks
only check what the Go types cannot express. Each rule below rejects one such job at admission,
with an apimachinery-style field error, instead of letting it fail at reconcile time:

1. Counts that must not be negative: `replicas`, `runPolicy.backoffLimit`,
   `activeDeadlineSeconds`, `ttlSecondsAfterFinished`, `schedulingPolicy.minAvailable`,
   `scheduleTimeoutSeconds`, elastic `minReplicas`/`maxReplicas`/`maxRestarts`
   -> `Invalid value: -1: must be greater than or equal to 0`.
2. Replica counts above `MAX_REPLICAS` (a typo such as 100000 would otherwise create that many
   pods) -> `Invalid value: 100000: must be less than or equal to 10000`.
3. Enumerations upstream leaves free: `restartPolicy` (Always/OnFailure/Never/ExitCode),
   `cleanPodPolicy` (All/Running/None), TF `successPolicy` ("" or AllWorkers), PyTorch
   `elasticPolicy.rdzvBackend` (c10d/etcd/etcd-v2), MXJob `jobMode` (MXTrain/MXTune)
   -> `Unsupported value`; PyTorch `nprocPerNode` must be auto/cpu/gpu or a positive integer;
   `rdzvPort` must be a port number; elastic `minReplicas <= maxReplicas`.
4. Replica-type keys: TF and MXJob keys must name a known type (case-insensitively, as defaulting
   normalises them); two keys that differ only by case (`Worker`, `worker`) -> `Duplicate value`
   (upstream keeps a random one); an empty map has nothing to run -> `Required value`.
5. Pod templates: `template`/`template.spec` must be objects, `containers` a list of objects,
   every container needs a `name` (the pod API would refuse it) and a string `image`.
6. `<job>-<rt>-<max index>` (the pod and service names, docs/upstream-behaviour.md#names) must fit
   a DNS-1035 label of 63 characters, else no pod or service can be created (upstream bug
   kubeflow/trainer#1745).

Errors on a path upstream already reported are dropped by the caller, so a job gets one message
per field.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubetrain.api.codec import type_name
from kubetrain.api.fielderrors import ErrorList, ErrorType, FieldError, invalid, not_supported, required
from kubetrain.api.kinds import CLEAN_POD_POLICIES, RESTART_POLICIES, KindInfo
from kubetrain.api.types import ReplicaSpec, RunPolicy, TrainingJob
from kubetrain.kube.names import DNS1035_LABEL_MAX_LENGTH, is_dns1035_label

MAX_REPLICAS = 10000


def containers_of(rspec: ReplicaSpec | None) -> list[Any]:
    """The template's containers, or [] when any level is missing or malformed."""
    template = rspec.template if rspec is not None else None
    pod_spec = template.get("spec") if isinstance(template, dict) else None
    containers = pod_spec.get("containers") if isinstance(pod_spec, dict) else None
    return containers if isinstance(containers, list) else []


def check(job: TrainingJob, info: KindInfo) -> ErrorList:
    errs = ErrorList()
    _replica_specs(job, info, errs)
    _run_policy(job.run_policy, errs)
    if info.rules.spec_checks is not None and job.spec is not None:
        info.rules.spec_checks(job.spec, errs)
    _pod_names(job, info, errs)
    return errs


def _non_negative(errs: ErrorList, path: str, value: int | None) -> None:
    if value is not None and value < 0:
        errs.append(invalid(path, value, "must be greater than or equal to 0"))


def enum(errs: ErrorList, path: str, value: str, allowed: tuple[str, ...]) -> None:
    """`value` must be one of `allowed` (kinds' own enum fields use it too)."""
    if value not in allowed:
        errs.append(not_supported(path, value, allowed))


def _replica_specs(job: TrainingJob, info: KindInfo, errs: ErrorList) -> None:
    map_path = f"spec.{info.replica_specs_field}"
    specs = job.spec.replica_specs if job.spec is not None else None
    if specs is None:
        return
    if not specs:
        errs.append(required(map_path, "must have at least one replica type"))
    seen: set[str] = set()
    for rtype, rspec in specs.items():
        role_path = f"{map_path}[{rtype}]"
        canonical = info.canonical_replica_type(rtype)
        if canonical is None:
            errs.append(not_supported(role_path, rtype, info.replica_types))
        elif canonical in seen:
            errs.append(FieldError(ErrorType.DUPLICATE, role_path, "", rtype))
        else:
            seen.add(canonical)
        if rspec is None:
            continue
        replicas_path = f"{role_path}.replicas"
        _non_negative(errs, replicas_path, rspec.replicas)
        if rspec.replicas is not None and rspec.replicas > MAX_REPLICAS:
            errs.append(
                invalid(replicas_path, rspec.replicas, f"must be less than or equal to {MAX_REPLICAS}")
            )
        if rspec.restart_policy:
            enum(errs, f"{role_path}.restartPolicy", rspec.restart_policy, RESTART_POLICIES)
        _template(errs, f"{role_path}.template", rspec.template)


def _template(errs: ErrorList, path: str, template: Any) -> None:
    if template is None:
        return
    if not isinstance(template, dict):
        errs.append(invalid(path, type_name(template), "must be of type object"))
        return
    pod_spec = template.get("spec")
    if pod_spec is None:
        return
    if not isinstance(pod_spec, dict):
        errs.append(invalid(f"{path}.spec", type_name(pod_spec), "must be of type object"))
        return
    containers = pod_spec.get("containers")
    containers_path = f"{path}.spec.containers"
    if containers is None:
        return
    if not isinstance(containers, list):
        errs.append(invalid(containers_path, type_name(containers), "must be of type array"))
        return
    for idx, container in enumerate(containers):
        item_path = f"{containers_path}[{idx}]"
        if not isinstance(container, dict):
            errs.append(invalid(item_path, type_name(container), "must be of type object"))
            continue
        name = container.get("name")
        if name is None or name == "":
            errs.append(required(f"{item_path}.name"))
        elif not isinstance(name, str):
            errs.append(invalid(f"{item_path}.name", type_name(name), "must be of type string"))
        image = container.get("image")
        if image is not None and not isinstance(image, str):
            errs.append(invalid(f"{item_path}.image", type_name(image), "must be of type string"))


def _run_policy(policy: RunPolicy, errs: ErrorList) -> None:
    base = "spec.runPolicy"
    if policy.clean_pod_policy:
        enum(errs, f"{base}.cleanPodPolicy", policy.clean_pod_policy, CLEAN_POD_POLICIES)
    _non_negative(errs, f"{base}.backoffLimit", policy.backoff_limit)
    _non_negative(errs, f"{base}.activeDeadlineSeconds", policy.active_deadline_seconds)
    _non_negative(errs, f"{base}.ttlSecondsAfterFinished", policy.ttl_seconds_after_finished)
    sched = policy.scheduling_policy
    if sched is not None:
        _non_negative(errs, f"{base}.schedulingPolicy.minAvailable", sched.min_available)
        _non_negative(errs, f"{base}.schedulingPolicy.scheduleTimeoutSeconds", sched.schedule_timeout_seconds)


def elastic_bounds(errs: ErrorList, policy: Any) -> None:
    """The rules every elastic policy shares: min/max/maxRestarts non-negative, max bounded, min <= max
    (`policy` has `min_replicas`, `max_replicas`, `max_restarts`)."""
    base = "spec.elasticPolicy"
    low, high = policy.min_replicas, policy.max_replicas
    _non_negative(errs, f"{base}.minReplicas", low)
    _non_negative(errs, f"{base}.maxReplicas", high)
    _non_negative(errs, f"{base}.maxRestarts", policy.max_restarts)
    if high is not None and high > MAX_REPLICAS:
        errs.append(invalid(f"{base}.maxReplicas", high, f"must be less than or equal to {MAX_REPLICAS}"))
    if low is not None and high is not None and 0 <= high < low:
        errs.append(invalid(f"{base}.minReplicas", low, f"must be less than or equal to {base}.maxReplicas"))


def elastic_workers(spec_type: type) -> Callable[[Any, str], int | None]:
    """A `KindRules.scaled_replicas` for a kind whose spec (of `spec_type`) has an `elastic_policy`:
    its Workers may scale to the policy's `maxReplicas`."""

    def scaled(spec: Any, canonical: str) -> int | None:
        if canonical != "Worker" or not isinstance(spec, spec_type):
            return None
        policy: Any = getattr(spec, "elastic_policy", None)
        return policy.max_replicas if policy else None

    return scaled


def _max_index(job: TrainingJob, info: KindInfo, canonical: str, rspec: ReplicaSpec) -> int | None:
    replicas = 1 if rspec.replicas is None else rspec.replicas
    scaled = info.rules.scaled_replicas
    if scaled is not None and job.spec is not None:
        high = scaled(job.spec, canonical)
        if high is not None and high <= MAX_REPLICAS:
            replicas = max(replicas, high)
    if not 1 <= replicas <= MAX_REPLICAS:
        return None
    return replicas - 1


def _pod_names(job: TrainingJob, info: KindInfo, errs: ErrorList) -> None:
    name = job.metadata.get("name") if isinstance(job.metadata, dict) else None
    if not isinstance(name, str) or is_dns1035_label(name):
        return  # a missing or invalid name is reported by the name rule
    longest = ""
    for rtype, rspec in job.replica_specs.items():
        canonical = info.canonical_replica_type(rtype)
        if canonical is None or rspec is None:
            continue
        index = _max_index(job, info, canonical, rspec)
        if index is None:
            continue
        pod = f"{name}-{canonical.lower()}-{index}"
        if len(pod) > len(longest):
            longest = pod
    if len(longest) > DNS1035_LABEL_MAX_LENGTH:
        allowed = DNS1035_LABEL_MAX_LENGTH - (len(longest) - len(name))
        errs.append(
            invalid(
                "metadata.name",
                name,
                f"must be no more than {allowed} characters: the pod and service name "
                f'"{longest}" must be no more than {DNS1035_LABEL_MAX_LENGTH} characters',
            )
        )
