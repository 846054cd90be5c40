"""What chainer-operator dereferences without checking (a nil master, a template without
containers), reported as field errors instead of a crash; it has no webhook upstream."""

from __future__ import annotations

from kubetrain.api.fielderrors import ErrorList, invalid, not_supported, required
from kubetrain.api.kinds import KindInfo
from kubetrain.api.standalone import NON_NEGATIVE, require_containers
from kubetrain.kinds.chainerjob.types import ChainerJob
from kubetrain.kube.names import is_dns1035_label


def validate_chainer(job: ChainerJob) -> ErrorList:
    errs = ErrorList()
    spec = job.spec
    if spec is None or spec.master is None:
        errs.append(required("spec.master"))
        return errs
    require_containers(errs, "spec.master", spec.master.template)
    if spec.backend and spec.backend != "mpi":
        errs.append(not_supported("spec.backend", spec.backend, ["mpi"]))
    for name, wset in (spec.worker_sets or {}).items():
        path = f"spec.workerSets[{name}]"
        if wset is None:
            errs.append(required(path))
            continue
        require_containers(errs, path, wset.template)
        if wset.replicas is not None and wset.replicas < 0:
            errs.append(invalid(f"{path}.replicas", wset.replicas, NON_NEGATIVE))
        reasons = is_dns1035_label(f"{job.name}-workerset-{name}")
        if reasons:
            detail = "workerset name must make a DNS-1035 label: " + ", ".join(reasons)
            errs.append(invalid(path, name, detail))
    return errs


def problems(job: ChainerJob, info: KindInfo) -> list[str]:
    return list(validate_chainer(job).messages())
