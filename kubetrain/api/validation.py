"""Admission validation of training jobs with upstream's exact field errors.

Upstream's rules: docs/upstream-behaviour.md#validation.

What the upstream webhooks (training-operator v1.9; MXJob: the ≤1.7 controller rules) check, with
their paths, messages and order, on the UN-defaulted object as a webhook sees it. Per-kind quirks
are data in each kind's `KindInfo.rules` (its framework package), reproduced on purpose because
clients match on them:

* TF does not validate replica-type keys; JAX validates no `managedBy` at all;
* PyTorch's update check compares the new object with itself, so `managedBy` can change
  (docs/upstream-behaviour.md#quirks-kept); TF, XGBoost and Paddle reject the change;
* Paddle quotes the container name in its message (`with name "paddle"`).

Upstream iterates a Go map, so its error order between replica types is random; ours follows the
document order. Rules upstream lacks are in `kubetrain.api.guards` and come after upstream's.
The CRD's CEL rule on `schedulingPolicy.queue` is reproduced here too (the API server checks it
before any webhook), so the embedded API server and `kubetrain validate` reject the same updates.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubetrain.api import guards
from kubetrain.api.fielderrors import ErrorList, ValidationResult, invalid, not_supported, required
from kubetrain.api.jobs import parse_job
from kubetrain.api.kinds import KUBEFLOW_JOBS_CONTROLLER, MULTIKUEUE_CONTROLLER, KindInfo, KindRules
from kubetrain.api.types import QUEUE_IMMUTABLE, RunPolicy, TrainingJob
from kubetrain.kube.names import is_dns1035_label

SUPPORTED_MANAGERS = (KUBEFLOW_JOBS_CONTROLLER, MULTIKUEUE_CONTROLLER)
MANAGED_BY_PATH = "spec.runPolicy.managedBy"
QUEUE_PATH = "spec.runPolicy.schedulingPolicy.queue"
FIELD_IMMUTABLE = "field is immutable"


# ---- entry points -------------------------------------------------------------------------------


def validate_with_warnings(
    job: TrainingJob, info: KindInfo, old: TrainingJob | None = None
) -> ValidationResult:
    """All field errors and warnings of a create (`old` None) or an update of `job`."""
    result = ValidationResult()
    rules = info.rules
    errs = result.errors
    if old is not None:
        errs.extend(_queue_transition(job, old))
    errs.extend(_name_errors(job.metadata))
    run_policy = job.run_policy
    if old is not None and rules.managed_by_immutable:
        errs.extend(_managed_by_update(old.run_policy, run_policy))
    manager = run_policy.managed_by
    if rules.checks_managed_by and manager is not None and manager not in SUPPORTED_MANAGERS:
        errs.append(not_supported(MANAGED_BY_PATH, run_policy.managed_by, SUPPORTED_MANAGERS))
    if rules.before_replicas is not None:
        rules.before_replicas(job, info, result)
    _replica_specs(job, info, rules, errs)
    if rules.after_replicas is not None:
        rules.after_replicas(job, info, result)
    additions = guards.check(job, info)
    flagged = {e.field for e in errs}
    errs.extend(e for e in additions if e.field not in flagged)
    return result


def validate(job: TrainingJob, info: KindInfo, old: TrainingJob | None = None) -> ErrorList:
    """The field errors of `job` (warnings dropped; see `validate_with_warnings`)."""
    return validate_with_warnings(job, info, old).errors


def validate_raw_with_warnings(
    raw: Any, old_raw: Any = None, *, kinds: Mapping[str, KindInfo]
) -> tuple[TrainingJob | None, KindInfo | None, ValidationResult]:
    """Parse and validate a raw object of one of `kinds` (and the stored one on update); never
    raises."""
    job, info, parse_errors = parse_job(raw, kinds)
    result = ValidationResult(errors=parse_errors)
    if job is None or info is None:
        return job, info, result
    old = None
    if old_raw is not None:
        old, old_info, _ = parse_job(old_raw, kinds)
        if old_info is not info:
            old = None
    checked = validate_with_warnings(job, info, old)
    result.errors.extend(checked.errors)
    result.warnings.extend(checked.warnings)
    return job, info, result


def validate_raw(
    raw: Any, old_raw: Any = None, *, kinds: Mapping[str, KindInfo]
) -> tuple[TrainingJob | None, KindInfo | None, ErrorList]:
    """`parse_job` + `validate` in one call: structural and semantic errors together."""
    job, info, result = validate_raw_with_warnings(raw, old_raw, kinds=kinds)
    return job, info, result.errors


def aggregate(errors: ErrorList) -> str:
    """apimachinery's `ErrorList.ToAggregate().Error()`: duplicates dropped, `[a, b]` when several."""
    seen: set[str] = set()
    unique = ErrorList()
    for err in errors:
        text = str(err)
        if text not in seen:
            seen.add(text)
            unique.append(err)
    return str(unique)


def invalid_message(info: KindInfo, name: str, errors: ErrorList) -> str:
    """The API server's 422 message: `PyTorchJob.kubeflow.org "x" is invalid: <errors>`."""
    return f'{info.kind}.{info.group} "{name}" is invalid: {aggregate(errors)}'


def webhook_name(info: KindInfo) -> str:
    return info.webhook_name or f"validator.{info.singular}.training-operator.kubeflow.org"


def webhook_path(info: KindInfo) -> str:
    """controller-runtime's generated path, e.g. `/validate-kubeflow-org-v1-pytorchjob`."""
    return f"/validate-{info.group.replace('.', '-')}-{info.version}-{info.kind.lower()}"


def denied_message(info: KindInfo, errors: ErrorList) -> str:
    """What kubectl prints when the validating webhook denies a request
    (docs/upstream-behaviour.md#validation)."""
    return f'admission webhook "{webhook_name(info)}" denied the request: {aggregate(errors)}'


# ---- shared rules -------------------------------------------------------------------------------


def _name_errors(metadata: Any) -> ErrorList:
    errs = ErrorList()
    name = metadata.get("name") if isinstance(metadata, dict) else None
    if name is None or name == "":
        generate = metadata.get("generateName") if isinstance(metadata, dict) else None
        if isinstance(generate, str) and generate:
            # The API server appends 5 characters before admission; check the prefix the same way.
            reasons = is_dns1035_label(generate + "x" * 5)
            if reasons:
                errs.append(invalid("metadata.generateName", generate, "should match: " + ",".join(reasons)))
            return errs
        name = ""
    if not isinstance(name, str):
        errs.append(invalid("metadata.name", guards.type_name(name), "must be of type string"))
        return errs
    reasons = is_dns1035_label(name)
    if reasons:
        errs.append(invalid("metadata.name", name, "should match: " + ",".join(reasons)))
    return errs


def _queue_transition(job: TrainingJob, old: TrainingJob) -> ErrorList:
    """The CRD's CEL rule `self == oldSelf`: fires only when both objects have a queue."""
    new_queue = _queue(job.run_policy)
    old_queue = _queue(old.run_policy)
    if new_queue is not None and old_queue is not None and new_queue != old_queue:
        # CEL errors report the schema type of the field as the "value".
        return ErrorList([invalid(QUEUE_PATH, "string", QUEUE_IMMUTABLE)])
    return ErrorList()


def _queue(policy: RunPolicy) -> str | None:
    return policy.scheduling_policy.queue if policy.scheduling_policy is not None else None


def _managed_by_update(old: RunPolicy, new: RunPolicy) -> ErrorList:
    """apimachinery `ValidateImmutableField`; a nil pointer prints as "null"."""
    if old.managed_by == new.managed_by:
        return ErrorList()
    shown = new.managed_by if new.managed_by is not None else "null"
    return ErrorList([invalid(MANAGED_BY_PATH, shown, FIELD_IMMUTABLE)])


def _replica_specs(job: TrainingJob, info: KindInfo, rules: KindRules, errs: ErrorList) -> None:
    """`utils.ValidateReplicaSpecs` plus the per-type hook, one replica type at a time."""
    map_path = f"spec.{info.replica_specs_field}"
    specs = job.spec.replica_specs if job.spec is not None else None
    if specs is None:
        errs.append(required(map_path, "must be required"))
        return
    name = f'"{info.default_container}"' if rules.quote_container_name else info.default_container
    for rtype, rspec in specs.items():
        role_path = f"{map_path}[{rtype}]"
        containers_path = f"{role_path}.template.spec.containers"
        valid = info.replica_types if rules.replica_types_checked else None
        if valid is not None and rtype not in valid:
            errs.append(not_supported(role_path, rtype, valid))
        containers = guards.containers_of(rspec)
        if not containers:
            errs.append(required(containers_path, "must be specified"))
        present = False
        for idx, container in enumerate(containers):
            if not isinstance(container, dict):
                continue
            if container.get("image") in (None, ""):
                errs.append(required(f"{containers_path}[{idx}].image", "must be required"))
            if container.get("name") == info.default_container:
                present = True
        if not present:
            errs.append(required(containers_path, f"must have at least one container with name {name}"))
        if rules.after_replica is not None:
            rules.after_replica(rtype, rspec, role_path, errs)
