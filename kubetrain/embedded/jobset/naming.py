"""Child names and the labels and annotations a JobSet puts on its Jobs and their pods.

As upstream's ``labelAndAnnotateObject``, ``GenJobName``, ``jobHashKey``, ``globalJobIndex``,
``groupJobIndex`` and ``GetSubdomain`` (``pkg/controllers/jobset_controller.go``,
``pkg/util/placement``): the same keys carry the same values on Jobs and pod templates, so pods
can be selected per JobSet, replicated job, job or restart attempt, exactly as on a cluster.
"""

from __future__ import annotations

import hashlib
from typing import Any

from . import constants as c

JsonDict = dict[str, Any]


def job_name(jobset_name: str, rjob_name: str, job_index: int) -> str:
    """``<jobset>-<replicatedJob>-<jobIndex>`` (``placement.GenJobName``)."""
    return f"{jobset_name}-{rjob_name}-{job_index}"


def pod_hostname(jobset_name: str, rjob_name: str, job_index: int, pod_index: int) -> str:
    """The hostname the Job controller gives pod `pod_index` of that Job (``GenPodName``)."""
    return f"{job_name(jobset_name, rjob_name, job_index)}-{pod_index}"


def subdomain(js: JsonDict) -> str:
    """``spec.network.subdomain``, else the JobSet's name (the headless Service's name)."""
    network = (js.get("spec") or {}).get("network") or {}
    return str(network.get("subdomain") or (js.get("metadata") or {}).get("name") or "")


def dns_hostnames_enabled(js: JsonDict) -> bool:
    return bool(((js.get("spec") or {}).get("network") or {}).get("enableDNSHostnames"))


def job_hash_key(namespace: str, name: str) -> str:
    """SHA1 of ``<namespace>/<jobName>``: the ``job-key`` label (40 hex characters)."""
    return hashlib.sha1(f"{namespace}/{name}".encode()).hexdigest()


def _rjobs(js: JsonDict) -> list[JsonDict]:
    return list((js.get("spec") or {}).get("replicatedJobs") or [])


def global_replicas(js: JsonDict) -> str:
    return str(sum(int(r.get("replicas") or 0) for r in _rjobs(js)))


def global_job_index(js: JsonDict, rjob_name: str, job_index: int) -> str:
    """The job's index across every replicated job, in spec order ("" for an unknown one)."""
    total = 0
    for rjob in _rjobs(js):
        if rjob.get("name") == rjob_name:
            return str(total + job_index)
        total += int(rjob.get("replicas") or 0)
    return ""


def group_replicas(js: JsonDict, group: str) -> str:
    return str(sum(int(r.get("replicas") or 0) for r in _rjobs(js) if r.get("groupName", "") == group))


def group_job_index(js: JsonDict, group: str, rjob_name: str, job_index: int) -> str:
    total = 0
    for rjob in _rjobs(js):
        if rjob.get("groupName", "") == group:
            if rjob.get("name") == rjob_name:
                return str(total + job_index)
            total += int(rjob.get("replicas") or 0)
    return ""


def coordinator_endpoint(js: JsonDict) -> str:
    coord = (js.get("spec") or {}).get("coordinator") or {}
    name = (js.get("metadata") or {}).get("name")
    return (
        f"{name}-{coord.get('replicatedJob')}-{int(coord.get('jobIndex') or 0)}-"
        f"{int(coord.get('podIndex') or 0)}.{subdomain(js)}"
    )


def jobset_keys(js: JsonDict, rjob: JsonDict, job_index: int) -> dict[str, str]:
    """The keys ``labelAndAnnotateObject`` sets both as labels and as annotations."""
    meta = js.get("metadata") or {}
    name, namespace = str(meta.get("name") or ""), str(meta.get("namespace") or "default")
    rjob_name, group = str(rjob.get("name") or ""), str(rjob.get("groupName", ""))
    restarts = int((js.get("status") or {}).get("restarts") or 0)
    keys = {
        c.JOBSET_NAME_KEY: name,
        c.JOBSET_UID_KEY: str(meta.get("uid") or ""),
        c.REPLICATED_JOB_NAME_KEY: rjob_name,
        c.RESTARTS_KEY: str(restarts),
        c.REPLICATED_JOB_REPLICAS: str(int(rjob.get("replicas") or 0)),
        c.GLOBAL_REPLICAS_KEY: global_replicas(js),
        c.JOB_INDEX_KEY: str(job_index),
        c.JOB_KEY: job_hash_key(namespace, job_name(name, rjob_name, job_index)),
        c.JOB_GLOBAL_INDEX_KEY: global_job_index(js, rjob_name, job_index),
        c.GROUP_NAME_KEY: group,
        c.GROUP_REPLICAS_KEY: group_replicas(js, group),
        c.JOB_GROUP_INDEX_KEY: group_job_index(js, group, rjob_name, job_index),
    }
    if (js.get("spec") or {}).get("coordinator"):
        keys[c.COORDINATOR_KEY] = coordinator_endpoint(js)
    return keys


def label_and_annotate(obj_meta: JsonDict, js: JsonDict, rjob: JsonDict, job_index: int) -> JsonDict:
    """`obj_meta` with the JobSet labels and annotations added (exclusive placement: annotations)."""
    keys = jobset_keys(js, rjob, job_index)
    labels = {**(obj_meta.get("labels") or {}), **keys}
    annotations = {**(obj_meta.get("annotations") or {}), **keys}
    for source in ((js.get("metadata") or {}).get("annotations") or {}, _template_annotations(rjob)):
        if c.EXCLUSIVE_KEY in source:
            annotations[c.EXCLUSIVE_KEY] = source[c.EXCLUSIVE_KEY]
            if c.NODE_SELECTOR_STRATEGY_KEY in source:
                annotations[c.NODE_SELECTOR_STRATEGY_KEY] = source[c.NODE_SELECTOR_STRATEGY_KEY]
    return {**obj_meta, "labels": labels, "annotations": annotations}


def _template_annotations(rjob: JsonDict) -> dict[str, str]:
    return dict(((rjob.get("template") or {}).get("metadata") or {}).get("annotations") or {})
