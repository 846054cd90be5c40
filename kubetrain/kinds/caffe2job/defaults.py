"""In-memory defaults of Caffe2Job (a copy on every reconcile, never written back)."""

from __future__ import annotations

import dataclasses

from kubetrain.api.standalone import with_restart_never
from kubetrain.kinds.caffe2job.types import (
    Caffe2BackendSpec,
    Caffe2Job,
    Caffe2ReplicaSpec,
    ChiefSpec,
    TerminationPolicy,
)

CAFFE2_BACKEND_NONE = "none"
CAFFE2_BACKEND_REDIS = "redis"
CAFFE2_CHIEF_REPLICA = "WORKER"


def default_caffe2(job: Caffe2Job, runtime_id: str) -> Caffe2Job:
    """caffe2-operator's defaults (docs/upstream-behaviour.md#caffe2job); `runtime_id` replaces
    upstream's "current unix time" so that defaulting stays a pure function (the planner passes the
    creation time)."""
    out = dataclasses.replace(job)
    if job.spec is None:
        return out
    spec = dataclasses.replace(job.spec)
    out.spec = spec
    if not spec.runtime_id:
        spec.runtime_id = runtime_id
    replicas = spec.replica_specs or Caffe2ReplicaSpec()
    template = replicas.template
    template = with_restart_never(template)
    spec.replica_specs = dataclasses.replace(
        replicas, replicas=1 if replicas.replicas is None else replicas.replicas, template=template
    )
    backend = spec.backend_specs or Caffe2BackendSpec()
    if not backend.backend_type:
        count = spec.replica_specs.replicas or 0
        backend = dataclasses.replace(
            backend, backend_type=CAFFE2_BACKEND_NONE if count <= 1 else CAFFE2_BACKEND_REDIS
        )
    spec.backend_specs = backend
    policy = spec.termination_policy or TerminationPolicy()
    if policy.chief is None:
        chief = ChiefSpec(replica_name=CAFFE2_CHIEF_REPLICA, replica_index=0)
        policy = dataclasses.replace(policy, chief=chief)
    spec.termination_policy = policy
    return out
