"""What caffe2-operator dereferences without checking (no replica spec, a template without
containers), reported as field errors instead of a crash; it has no webhook upstream."""

from __future__ import annotations

from kubetrain.api.fielderrors import ErrorList, invalid, not_supported, required
from kubetrain.api.kinds import KindInfo
from kubetrain.api.standalone import require_containers
from kubetrain.kinds.caffe2job.types import Caffe2Job


def validate_caffe2(job: Caffe2Job) -> ErrorList:
    errs = ErrorList()
    spec = job.spec
    if spec is None or spec.replica_specs is None:
        errs.append(required("spec.replicaSpecs"))
        return errs
    require_containers(errs, "spec.replicaSpecs", spec.replica_specs.template)
    replicas = spec.replica_specs.replicas
    if replicas is not None and replicas < 1:
        errs.append(invalid("spec.replicaSpecs.replicas", replicas, "must be greater than or equal to 1"))
    backend = spec.backend_specs.backend_type if spec.backend_specs is not None else None
    if backend is not None and backend not in ("none", "redis", "nfs"):
        errs.append(not_supported("spec.backendSpecs.backendType", backend, ["none", "redis", "nfs"]))
    return errs


def problems(job: Caffe2Job, info: KindInfo) -> list[str]:
    return list(validate_caffe2(job).messages())
