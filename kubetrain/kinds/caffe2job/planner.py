"""The Caffe2Job planner (kubeflow/caffe2-operator, archived; docs/upstream-behaviour.md#caffe2job).

One pod per worker, no Services; every container learns its shard and the cluster through env
(`CAFFE2_CONFIG`, `SHARD_ID`, `NUM_SHARDS`, ...). Differences from upstream, both for a pure,
idempotent planner:

* pods are named `<job>-worker-<i>` instead of upstream's `generateName: <job>-`: a planner that
  re-runs before its creates are observed must not create a second pod for the same index; the
  labels (`caffe2_replica_index`, ...) are upstream's, so label-based tooling is unaffected;
* pods also carry the operator-name and job-name labels of the v1 kinds, which is how the
  runtime's pod cache finds children;
* a missing `RuntimeID` defaults to the job's creation time (upstream: the time of the first
  sync), so every pass derives the same value.
"""

from __future__ import annotations

import json
from datetime import datetime

from kubetrain.api.codec import json_clone
from kubetrain.api.conditions import TRUE, is_finished, set_condition
from kubetrain.api.fielderrors import ErrorList
from kubetrain.api.kinds import (
    COND_CREATED,
    COND_FAILED,
    COND_RUNNING,
    COND_SUCCEEDED,
    LABEL_JOB_NAME,
    LABEL_OPERATOR_NAME,
    KindInfo,
)
from kubetrain.api.types import JobStatus
from kubetrain.controller.config import ControllerConfig
from kubetrain.controller.context import Reconcile
from kubetrain.controller.job import JobKind, run_job
from kubetrain.controller.names import JsonDict, is_controlled_by, labels_of
from kubetrain.controller.owned import POD, OwnedObjects, as_dict
from kubetrain.controller.plan import CreateObject, Observed, Plan
from kubetrain.controller.pods import phase
from kubetrain.kinds.caffe2job.defaults import default_caffe2
from kubetrain.kinds.caffe2job.types import Caffe2Job, Caffe2JobStatus, Caffe2ReplicaStatus
from kubetrain.kinds.caffe2job.validation import validate_caffe2
from kubetrain.kinds.caffe2job.wire import CAFFE2JOB, parse
from kubetrain.kube.timefmt import parse_time

PORT = 2222
LABEL_GROUP = "group_name"
LABEL_JOB_KEY = "caffe2_job_key"
LABEL_RUNTIME_ID = "runtime_id"
LABEL_REPLICA_TYPE = "caffe2_replica_type"
LABEL_REPLICA_INDEX = "caffe2_replica_index"


def runtime_id(job: Caffe2Job, now: datetime) -> str:
    created = parse_time(job.metadata.get("creationTimestamp"))
    return str(int((created or now).timestamp()))


class Caffe2Kind(JobKind[Caffe2Job, Caffe2JobStatus]):
    """caffe2-operator's Caffe2Job on `run_job`: no managedBy, an invalid job only warns."""

    one_step_per_pass = True

    def initial_status(self) -> Caffe2JobStatus:
        return Caffe2JobStatus()

    def prepare(
        self, job: Caffe2Job, info: KindInfo, errors: ErrorList, now: datetime
    ) -> tuple[Caffe2Job, str]:
        errors.extend(validate_caffe2(job))
        if errors:
            return job, f"Found validation errors: {errors}"
        return default_caffe2(job, runtime_id(job, now)), ""

    def exists_message(self, name: str, kind: str) -> str:
        return f'Resource "{name}" already exists and is not managed by Caffe2Job'

    def created(self, ctx: Reconcile[Caffe2Job, Caffe2JobStatus]) -> None:
        """`Created` on a job without conditions (no event, no counter, as upstream)."""
        if not ctx.status.conditions:
            _set(ctx.status, COND_CREATED, "Caffe2JobCreated", f"Caffe2Job {ctx.name} is created.", ctx.stamp)

    def reconcile(self, ctx: Reconcile[Caffe2Job, Caffe2JobStatus]) -> None:
        c2, sync, status, stamp = ctx.job, ctx.owned, ctx.status, ctx.stamp
        key = f"{c2.namespace}-{c2.name}"
        replicas = (c2.spec.replica_specs.replicas or 0) if c2.spec and c2.spec.replica_specs else 0
        pods = {
            labels_of(p).get(LABEL_REPLICA_INDEX): p
            for p in sync.objects(POD)
            if is_controlled_by(p, c2.uid) and labels_of(p).get(LABEL_JOB_KEY) == key
        }
        if not is_finished(JobStatus(conditions=status.conditions)):
            for index in range(replicas):
                if str(index) not in pods:
                    sync.plan.actions.append(CreateObject(_pod(sync, c2, index, replicas)))
            if status.start_time is None:
                status.start_time = stamp
        counts = Caffe2ReplicaStatus()
        for pod in pods.values():
            pod_phase = phase(pod)
            if pod_phase in ("Running", "Pending"):
                counts.active += 1
            elif pod_phase == "Succeeded":
                counts.succeeded += 1
            elif pod_phase == "Failed":
                counts.failed += 1
        status.replica_statuses = counts
        _conditions(status, c2.name, counts, replicas, stamp)


KIND = Caffe2Kind()


def plan(job: JsonDict, observed: Observed, now: datetime, config: ControllerConfig) -> Plan:
    return run_job(KIND, job, parse(job), observed, now, config)


def _conditions(
    status: Caffe2JobStatus, name: str, counts: Caffe2ReplicaStatus, replicas: int, stamp: str
) -> None:
    def cond(cond_type: str, reason: str, message: str) -> None:
        if _set(status, cond_type, reason, message, stamp) and cond_type != COND_RUNNING:
            status.completion_time = status.completion_time or stamp

    if counts.failed > 0:
        cond(COND_FAILED, "Caffe2JobFailed", f"Caffe2Job {name} is failed.")
    elif replicas and counts.succeeded == replicas:
        cond(COND_SUCCEEDED, "Caffe2JobSucceeded", f"Caffe2Job {name} is successfully completed.")
    elif counts.active > 0:
        cond(COND_RUNNING, "Caffe2JobRunning", f"Caffe2Job {name} is running.")


def _set(status: Caffe2JobStatus, cond_type: str, reason: str, message: str, stamp: str) -> bool:
    """The v1 condition algebra (Caffe2Job's conditions have the v1 shape) on this status."""
    holder = JobStatus(conditions=status.conditions)
    changed = set_condition(holder, cond_type, TRUE, reason, message, stamp)
    status.conditions = holder.conditions
    return changed


def _pod(sync: OwnedObjects, job: Caffe2Job, index: int, replicas: int) -> JsonDict:
    assert job.spec is not None and job.spec.replica_specs is not None  # validated
    template = json_clone(as_dict(job.spec.replica_specs.template))
    tmeta = as_dict(template.get("metadata"))
    key = f"{job.namespace}-{job.name}"
    labels = {
        **as_dict(tmeta.get("labels")),
        LABEL_GROUP: "kubeflow.org",
        LABEL_JOB_KEY: key,
        LABEL_RUNTIME_ID: str(job.spec.runtime_id),
        LABEL_REPLICA_TYPE: "worker",
        LABEL_REPLICA_INDEX: str(index),
        LABEL_OPERATOR_NAME: CAFFE2JOB.controller_name,
        LABEL_JOB_NAME: job.name,
    }
    pod_spec = as_dict(template.get("spec"))
    backend = job.spec.backend_specs
    cluster = {
        "cluster": {"worker": [f"{key}-worker-{i}:{PORT}" for i in range(replicas)]},
        "task": {"type": "worker", "index": index},
    }
    env = [
        {"name": "REDIS_HOST", "value": (backend.redis_host if backend else None) or ""},
        {"name": "REDIS_PORT", "value": str(backend.redis_port) if backend and backend.redis_port else ""},
        {"name": "NFS_PATH", "value": (backend.nfs_path if backend else None) or ""},
        {"name": "SHARD_ID", "value": str(index)},
        {"name": "NUM_SHARDS", "value": str(replicas)},
        {"name": "RUN_ID", "value": str(job.spec.runtime_id)},
        {"name": "CAFFE2_CONFIG", "value": json.dumps(cluster, separators=(",", ":"))},
    ]
    pod_spec["containers"] = [
        {**c, "env": [*(c.get("env") or []), *env]}
        for c in pod_spec.get("containers") or []
        if isinstance(c, dict)
    ]
    metadata: JsonDict = {"name": f"{job.name}-worker-{index}", "namespace": job.namespace, "labels": labels}
    if tmeta.get("annotations"):
        metadata["annotations"] = dict(tmeta["annotations"])
    metadata["ownerReferences"] = [dict(sync.owner)]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": pod_spec}
