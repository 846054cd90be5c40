"""Upstream's JobSet validating webhook (``vjobset.kb.io``), as an admission plugin of the plane.

``ValidateCreate``/``ValidateUpdate`` and ``validateFailurePolicy``/``validateCoordinator`` of
``pkg/webhooks/jobset_webhook.go`` (v0.10.1), run on the defaulted JobSet as upstream's run after
its mutating webhook. Messages are upstream's, checked against its webhook on a real control plane
(tests/integration/jobset): a create's errors joined by newlines (``errors.Join``), an update's as
an aggregate (one error alone, else ``[a, b]``). One known difference: the immutable
``spec.replicatedJobs`` value is printed as JSON in the stored object's key order, where Go prints
its struct fields in declaration order.
"""

from __future__ import annotations

import json
import re
from typing import Any

from kubetrain.embedded.apiserver.admission import AdmissionRequest, AdmissionResult
from kubetrain.kube.names import is_dns1035_label, is_dns1123_subdomain

from . import constants as c
from .defaults import defaulted
from .naming import job_name

JsonDict = dict[str, Any]

WEBHOOK_NAME = "vjobset.kb.io"
MAX_INT32 = 2**31 - 1
MAX_MANAGED_BY_LENGTH = 63
DNS1035_MAX_LENGTH_MSG = "must be no more than 63 characters"
GROUP_NAME_TOO_LONG = ".spec.replicatedJob[].groupName is too long, must be less than 63 characters"
JOB_NAME_TOO_LONG = "JobSet name is too long, job names generated for this JobSet will exceed 63 characters"
POD_NAME_TOO_LONG = "JobSet name is too long, pod names generated for this JobSet will exceed 63 characters"
SUBDOMAIN_TOO_LONG = ".spec.network.subdomain is too long, must be less than 63 characters"
VALID_ON_JOB_FAILURE_REASONS = (
    "BackoffLimitExceeded",
    "DeadlineExceeded",
    "FailedIndexes",
    "MaxFailedIndexesExceeded",
    "PodFailurePolicy",
)
RULE_NAME = re.compile(r"[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?")
HTTP_PATH_FMT = r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+"
IMMUTABLE = "field is immutable"
PRODUCT_TOO_BIG = "the product of replicas and parallelism must not exceed {} for replicatedJob '{}'"
RULE_NAME_LENGTH = (
    "invalid failure policy rule name of length {}, the rule name must be at least 1 characters long and "
    "at most 128 characters long"
)
RULE_NAME_FORMAT = (
    "invalid failure policy rule name '{}', a failure policy rule name must start with an alphabetic "
    "character, optionally followed by a string of alphanumeric characters or '_,:', and must end with an "
    "alphanumeric character or '_'"
)
RULE_TARGET = "invalid replicatedJob name '{}' in failure policy does not appear in .spec.ReplicatedJobs"
RULE_REASON = "invalid job failure reason '{}' in failure policy is not a recognized job failure reason"
RULE_NAMES_NOT_UNIQUE = "rule names are not unique, rules with indices [{}] all have the same name '{}'"


def invalid(path: str, value: Any, message: str) -> str:
    """``field.Invalid(...).Error()``: strings quoted, other values as JSON."""
    return f"{path}: Invalid value: {json.dumps(value, separators=(',', ':'))}: {message}"


def _dns1035(path: str, value: str, too_long: str) -> list[str]:
    return [
        invalid(path, value, too_long if DNS1035_MAX_LENGTH_MSG in m else m) for m in is_dns1035_label(value)
    ]


def _domain_prefixed_path(path: str, value: str) -> list[str]:
    """``validation.IsDomainPrefixedPath``."""
    segments = value.split("/", 1)
    if len(segments) != 2 or not segments[0] or not segments[1]:
        return [invalid(path, value, 'must be a domain-prefixed path (such as "acme.io/foo")')]
    errs = [invalid(path, segments[0], m) for m in is_dns1123_subdomain(segments[0])]
    if not re.fullmatch(HTTP_PATH_FMT, segments[1]):
        errs.append(
            invalid(path, segments[1], f"Invalid path (regex used for validation is '{HTTP_PATH_FMT}')")
        )
    return errs


def validate_create(jobset: JsonDict) -> list[str]:
    """Upstream's ``ValidateCreate`` errors, in its order (empty: valid)."""
    js = defaulted(jobset)
    spec = js.get("spec") or {}
    name = str((js.get("metadata") or {}).get("name") or "")
    rjobs: list[JsonDict] = list(spec.get("replicatedJobs") or [])
    errs: list[str] = []
    if rjobs and rjobs[0].get("dependsOn") is not None:
        errs.append("DependsOn can't be set for the first ReplicatedJob")
    subdomain = str((spec.get("network") or {}).get("subdomain") or "")
    if subdomain:
        errs += [invalid("spec.network.subdomain", subdomain, m) for m in is_dns1123_subdomain(subdomain)]
        errs += _dns1035("spec.network.subdomain", subdomain, SUBDOMAIN_TOO_LONG)
    manager = spec.get("managedBy")
    if manager is not None:
        errs += _domain_prefixed_path("spec.managedBy", str(manager))
        if len(str(manager)) > MAX_MANAGED_BY_LENGTH:
            errs.append(f"spec.managedBy: Too long: may not be more than {MAX_MANAGED_BY_LENGTH} bytes")
    names: set[str] = set()
    for i, rjob in enumerate(rjobs):
        path = f"spec.replicatedJobs[{i}]"
        rname, replicas = str(rjob.get("name") or ""), int(rjob.get("replicas") or 0)
        names.add(rname)
        job_spec = (rjob.get("template") or {}).get("spec") or {}
        parallelism = 1 if job_spec.get("parallelism") is None else int(job_spec["parallelism"])
        if parallelism * replicas > MAX_INT32:
            errs.append(PRODUCT_TOO_BIG.format(MAX_INT32, rname))
        errs += _dns1035(f"{path}.groupName", str(rjob.get("groupName", "")), GROUP_NAME_TOO_LONG)
        longest_job = job_name(name, rname, replicas - 1)
        errs += _dns1035(f"{path}.name", longest_job, JOB_NAME_TOO_LONG)
        if job_spec.get("completionMode") == "Indexed" and job_spec.get("completions") is not None:
            longest_pod = f"{job_name(name, rname, replicas - 1)}-{int(job_spec['completions']) - 1}-abcde"
            for m in is_dns1035_label(longest_pod):  # upstream reports the job name as the value
                errs.append(
                    invalid(
                        f"{path}.name", longest_job, POD_NAME_TOO_LONG if DNS1035_MAX_LENGTH_MSG in m else m
                    )
                )
        for dep in rjob.get("dependsOn") or []:
            if dep.get("name") not in names:
                errs.append(f"replicatedJob: {rname} cannot depend on replicatedJob: {dep.get('name')}")
    for target in (spec.get("successPolicy") or {}).get("targetReplicatedJobs") or []:
        if target not in names:
            errs.append(f"invalid replicatedJob name '{target}' does not appear in .spec.ReplicatedJobs")
    if spec.get("failurePolicy") is not None:
        errs += _failure_policy(spec["failurePolicy"], names)
    if spec.get("coordinator") is not None:
        errs.append(_coordinator(js))
    return [e for e in errs if e]


def _failure_policy(policy: JsonDict, names: set[str]) -> list[str]:
    errs: list[str] = []
    by_name: dict[str, list[int]] = {}
    for index, rule in enumerate(policy.get("rules") or []):
        rule_name = str(rule.get("name") or "")
        if not 1 <= len(rule_name) <= 128:
            errs.append(RULE_NAME_LENGTH.format(len(rule_name)))
        by_name.setdefault(rule_name, []).append(index)
        if not RULE_NAME.fullmatch(rule_name):
            errs.append(RULE_NAME_FORMAT.format(rule_name))
        for target in rule.get("targetReplicatedJobs") or []:
            if target not in names:
                errs.append(RULE_TARGET.format(target))
        for reason in rule.get("onJobFailureReasons") or []:
            if reason not in VALID_ON_JOB_FAILURE_REASONS:
                errs.append(RULE_REASON.format(reason))
    for rule_name, indexes in by_name.items():  # Go iterates a map: with 2+ duplicates the order varies
        if len(indexes) > 1:
            listed = " ".join(str(i) for i in indexes)
            errs.append(RULE_NAMES_NOT_UNIQUE.format(listed, rule_name))
    return errs


def _coordinator(js: JsonDict) -> str:
    coord = (js.get("spec") or {}).get("coordinator") or {}
    target = coord.get("replicatedJob")
    rjob = next(
        (r for r in (js.get("spec") or {}).get("replicatedJobs") or [] if r.get("name") == target), None
    )
    if rjob is None:
        return f"coordinator replicatedJob {target} does not exist"
    job_index, pod_index = int(coord.get("jobIndex") or 0), int(coord.get("podIndex") or 0)
    if not 0 <= job_index < int(rjob.get("replicas") or 0):
        return f"coordinator job index {job_index} is invalid for replicatedJob {target}"
    job_spec = (rjob.get("template") or {}).get("spec") or {}
    if job_spec.get("completionMode") != "Indexed" or job_spec.get("completions") is None:
        return "job for coordinator pod must be indexed completion mode, and completions number must be set"
    if not 0 <= pod_index < int(job_spec["completions"]):
        return (
            f"coordinator pod index {pod_index} is invalid for replicatedJob {target} job index {job_index}"
        )
    return ""


KUEUE_MUTABLE_METADATA = ("annotations", "labels")
KUEUE_MUTABLE_SPEC = ("nodeSelector", "tolerations", "schedulingGates")


def validate_update(old: JsonDict, new: JsonDict) -> list[str]:
    """Upstream's ``ValidateUpdate``: replicatedJobs and managedBy are immutable, except the pod
    template fields Kueue changes while the JobSet is (or is being) suspended."""
    old_spec, new_spec = defaulted(old).get("spec") or {}, defaulted(new).get("spec") or {}
    old_rjobs, munged = list(old_spec.get("replicatedJobs") or []), list(new_spec.get("replicatedJobs") or [])
    if old_spec.get("suspend") or new_spec.get("suspend"):
        munged = [
            _with_old_pod_fields(r, old_rjobs[i]) if i < len(old_rjobs) else r for i, r in enumerate(munged)
        ]
    errs: list[str] = []
    if _pruned(munged) != _pruned(old_rjobs):
        errs.append(invalid("spec.replicatedJobs", munged, IMMUTABLE))
    if new_spec.get("managedBy") != old_spec.get("managedBy"):
        errs.append(invalid("spec.managedBy", new_spec.get("managedBy"), IMMUTABLE))
    return errs


def _pruned(value: Any) -> Any:
    """`value` without empty maps, lists and nulls: Go's semantic equality of decoded structs
    (``apiequality.Semantic.DeepEqual``) does not tell an absent field from an empty one."""
    if isinstance(value, dict):
        out = {k: _pruned(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in (None, {}, [])}
    if isinstance(value, list):
        return [_pruned(v) for v in value]
    return value


def _with_old_pod_fields(rjob: JsonDict, old: JsonDict) -> JsonDict:
    out: JsonDict = json.loads(json.dumps(rjob))
    template = out.setdefault("template", {}).setdefault("spec", {}).setdefault("template", {})
    old_template = ((old.get("template") or {}).get("spec") or {}).get("template") or {}
    for part, keys in (("metadata", KUEUE_MUTABLE_METADATA), ("spec", KUEUE_MUTABLE_SPEC)):
        source = old_template.get(part) or {}
        for key in keys:
            if key in source:
                template.setdefault(part, {})[key] = source[key]
            elif isinstance(template.get(part), dict):
                template[part].pop(key, None)
    return out


def jobset_admission(request: AdmissionRequest) -> AdmissionResult | None:
    """The plane's admission plugin: JobSet creates and updates (not ``/status``)."""
    if (request.group, request.kind) != (c.GROUP, c.KIND) or request.subresource:
        return None
    if request.operation == "CREATE":
        errs = validate_create(request.object)
        message = "\n".join(errs)
    elif request.operation == "UPDATE" and request.old_object is not None:
        errs = validate_update(request.old_object, request.object)
        message = errs[0] if len(errs) == 1 else f"[{', '.join(errs)}]"
    else:
        return None
    return AdmissionResult.deny(WEBHOOK_NAME, message) if errs else None
