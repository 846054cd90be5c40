"""The objects a JobSet creates: one batch/v1 Job per replica of each replicated job, and the
headless Service that gives their pods DNS names (``constructJob``,
``createHeadlessSvcIfNecessary`` in upstream's ``pkg/controllers/jobset_controller.go``)."""

from __future__ import annotations

import copy
from typing import Any

from . import constants as c
from .naming import dns_hostnames_enabled, job_name, label_and_annotate, subdomain

JsonDict = dict[str, Any]


def controller_ref(js: JsonDict) -> JsonDict:
    """The ownerReference ``ctrl.SetControllerReference`` writes: controller, blocking deletion."""
    meta = js.get("metadata") or {}
    return {
        "apiVersion": c.API_VERSION,
        "kind": c.KIND,
        "name": meta.get("name"),
        "uid": meta.get("uid"),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def suspended(js: JsonDict) -> bool:
    return bool((js.get("spec") or {}).get("suspend"))


def construct_job(js: JsonDict, rjob: JsonDict, job_index: int) -> JsonDict:
    """The Job for replica `job_index` of `rjob` (from the defaulted JobSet)."""
    meta = js.get("metadata") or {}
    template = copy.deepcopy(rjob.get("template") or {})
    tmeta = template.get("metadata") or {}
    spec: JsonDict = template.get("spec") or {}
    job_meta: JsonDict = {
        "name": job_name(str(meta.get("name")), str(rjob.get("name")), job_index),
        "namespace": meta.get("namespace") or "default",
    }
    if tmeta.get("labels"):
        job_meta["labels"] = dict(tmeta["labels"])
    if tmeta.get("annotations"):
        job_meta["annotations"] = dict(tmeta["annotations"])
    job_meta = label_and_annotate(job_meta, js, rjob, job_index)
    job_meta["ownerReferences"] = [controller_ref(js)]
    pod_template = spec.setdefault("template", {})
    pod_template["metadata"] = label_and_annotate(pod_template.get("metadata") or {}, js, rjob, job_index)
    pod_spec = pod_template.setdefault("spec", {})
    if dns_hostnames_enabled(js):
        pod_spec["subdomain"] = subdomain(js)
    annotations = job_meta["annotations"]
    if c.EXCLUSIVE_KEY in annotations and c.NODE_SELECTOR_STRATEGY_KEY in annotations:
        pod_spec["nodeSelector"] = {
            **(pod_spec.get("nodeSelector") or {}),
            c.NAMESPACED_JOB_KEY: f"{job_meta['namespace']}_{job_meta['name']}",
        }
        pod_spec["tolerations"] = [
            *(pod_spec.get("tolerations") or []),
            {"key": c.NO_SCHEDULE_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"},
        ]
    spec["suspend"] = suspended(js)
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": job_meta, "spec": spec}


def headless_service(js: JsonDict) -> JsonDict:
    """``clusterIP: None``, selecting every pod of the JobSet, named after its subdomain."""
    meta = js.get("metadata") or {}
    network = (js.get("spec") or {}).get("network") or {}
    publish = network.get("publishNotReadyAddresses")
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": subdomain(js),
            "namespace": meta.get("namespace") or "default",
            "ownerReferences": [controller_ref(js)],
        },
        "spec": {
            "clusterIP": "None",
            "selector": {c.JOBSET_NAME_KEY: meta.get("name")},
            "publishNotReadyAddresses": True if publish is None else bool(publish),
        },
    }
