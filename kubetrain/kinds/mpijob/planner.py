"""MPIJob planning: one entry point for the three API versions, each on its own mechanics.

`plan()` decides which version a job was written in (`kubetrain.kinds.mpijob.conversion`), freezes
that decision in the job's `kubeflow.org/mpi-api-version` annotation on first sight, and hands
the job to the v1 (training-operator, kubectl exec), v2beta1 (mpi-operator, SSH) or v1alpha2 (the
original mpi-operator, worker StatefulSet and kubectl exec) planner.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from kubetrain.api.kinds import LABEL_OPERATOR_NAME
from kubetrain.api.types import JobStatus, TrainingJob
from kubetrain.api.validation import aggregate
from kubetrain.controller.config import ChildType, ControllerConfig
from kubetrain.controller.job import JobKind, run_job
from kubetrain.controller.plan import Event, ObjectRef, Observed, PatchObject, Plan
from kubetrain.kinds.mpijob.conversion import API_VERSION_ANNOTATION, annotated_version
from kubetrain.kinds.mpijob.ssh import KeyGen, generate_key_pair
from kubetrain.kinds.mpijob.v1 import KIND as V1_KIND
from kubetrain.kinds.mpijob.v1alpha2 import KIND as V1ALPHA2_KIND
from kubetrain.kinds.mpijob.v2beta1 import MPIV2Kind
from kubetrain.kinds.mpijob.wire import parse

__all__ = ["CHILD_TYPES", "plan"]


def plan(
    job: dict[str, Any],
    observed: Observed,
    now: datetime,
    config: ControllerConfig,
    *,
    keygen: KeyGen = generate_key_pair,
) -> Plan:
    """The plan for one MPIJob of either version (same contract as `reconciler.plan`); the v1
    launcher's kubectl image is the configured `mpi_kubectl_delivery_image`."""
    decoded = parse(job)
    parsed, info, errors = decoded
    if parsed is None or info is None or not isinstance(parsed, TrainingJob) or not parsed.name:
        return Plan()
    if errors or not isinstance(job.get("spec"), dict):
        # Not even the shape of an MPIJob (the CRD schema rules this out): a Warning, as upstream.
        reason = "MPIJobFailedValidation" if info.version == "v1" else "ValidationError"
        return Plan(events=[Event("Warning", reason, aggregate(errors) or "MPIJobSpec is not valid")])
    kind: JobKind[TrainingJob, JobStatus]
    if info.version == "v1":
        kind = V1_KIND
    elif info.version == "v1alpha2":
        kind = V1ALPHA2_KIND
    else:
        kind = MPIV2Kind(keygen)
    out = run_job(kind, job, decoded, observed, now, config)
    if kind.ours(parsed) and annotated_version(job) is None:
        ref = ObjectRef(parsed.api_version, "MPIJob", parsed.namespace, parsed.name, parsed.uid or None)
        patch = {"metadata": {"annotations": {API_VERSION_ANNOTATION: info.version}}}
        out.actions.insert(0, PatchObject(ref, patch))
    return out


CHILD_TYPES: tuple[ChildType, ...] = (
    ChildType("v1", "ConfigMap", "configmaps", None),
    ChildType("v1", "Secret", "secrets", LABEL_OPERATOR_NAME),
    ChildType("v1", "Service", "services", None),
    ChildType("v1", "ServiceAccount", "serviceaccounts", None),
    ChildType("rbac.authorization.k8s.io/v1", "Role", "roles", None),
    ChildType("rbac.authorization.k8s.io/v1", "RoleBinding", "rolebindings", None),
    ChildType("batch/v1", "Job", "jobs", None),
    ChildType("apps/v1", "StatefulSet", "statefulsets", None),
)
"""What the three MPIJob planners own besides pods (v1alpha2's workers are a StatefulSet; v2beta1's
Service has no operator-name label, so it is watched by owner like the rest); PodGroups come with
gang scheduling. Secrets are selected by the operator-name label the SSH Secret carries: the cache
holds only Secrets of ours (ConfigMaps stay unfiltered: a namesake ConfigMap must be seen to be
refused, as upstream)."""
