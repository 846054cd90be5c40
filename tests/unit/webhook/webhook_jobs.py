"""Raw jobs and AdmissionRequests for the webhook tests, written like the YAML a user applies."""

from __future__ import annotations

import copy
import uuid
from typing import Any

from kubetrain.kinds.registry import REPLICA_SPEC_KINDS as KINDS
from kubetrain.webhook.review import AdmissionRequest

IMAGE = "docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727"


def replica(kind: str, replicas: int = 1, container: str | None = None) -> dict[str, Any]:
    name = container or KINDS[kind].default_container
    return {"replicas": replicas, "template": {"spec": {"containers": [{"name": name, "image": IMAGE}]}}}


def valid_job(kind: str, name: str = "test", **spec: Any) -> dict[str, Any]:
    """The smallest job of `kind` its webhook accepts."""
    info = KINDS[kind]
    if kind in ("PyTorchJob", "XGBoostJob"):
        specs = {"Master": replica(kind), "Worker": replica(kind, 2)}
    elif kind == "MXJob":
        specs = {"Scheduler": replica(kind), "Server": replica(kind), "Worker": replica(kind, 2)}
    else:
        specs = {"Worker": replica(kind, 2)}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": "default"},
        "spec": {info.replica_specs_field: specs, **spec},
    }


def with_run_policy(job: dict[str, Any], **policy: Any) -> dict[str, Any]:
    out = copy.deepcopy(job)
    out["spec"].setdefault("runPolicy", {}).update(policy)
    return out


def request(operation: str, obj: Any, old: Any = None) -> AdmissionRequest:
    name = obj.get("metadata", {}).get("name", "") if isinstance(obj, dict) else ""
    return AdmissionRequest(
        uid=str(uuid.uuid4()), operation=operation, object=obj, old_object=old, namespace="default", name=name
    )


def review(
    operation: str, obj: Any, old: Any = None, api_version: str = "admission.k8s.io/v1"
) -> dict[str, Any]:
    """An AdmissionReview the way kube-apiserver sends it."""
    kind = obj.get("kind", "") if isinstance(obj, dict) else ""
    info = KINDS.get(kind)
    body: dict[str, Any] = {
        "uid": str(uuid.uuid4()),
        "kind": {"group": "kubeflow.org", "version": "v1", "kind": kind},
        "resource": {"group": "kubeflow.org", "version": "v1", "resource": info.plural if info else ""},
        "requestKind": {"group": "kubeflow.org", "version": "v1", "kind": kind},
        "namespace": "default",
        "name": obj.get("metadata", {}).get("name", "") if isinstance(obj, dict) else "",
        "operation": operation,
        "userInfo": {"username": "kubernetes-admin", "groups": ["system:masters", "system:authenticated"]},
        "object": obj,
        "oldObject": old,
        "dryRun": False,
        "options": {
            "kind": "CreateOptions" if operation == "CREATE" else "UpdateOptions",
            "apiVersion": "meta.k8s.io/v1",
        },
    }
    return {"kind": "AdmissionReview", "apiVersion": api_version, "request": body}
