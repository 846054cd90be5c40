"""The job kinds the operator serves and how the runtime addresses each of them.

The generic kinds (`kubetrain.api.kinds.KINDS`) have one version each. The kinds with their own
planners (`kubetrain.api.kinds_mpi.EXTRA_KINDS`) add two twists the runtime has to know about:

* **MPIJob is served in two versions from one CRD** (`kubetrain.api.conversion_mpi`). The
  operator lists and watches it as `kubeflow.org/v1`, the storage version, because the
  version-detection rule `written_version` reads "no v2beta1 markers" as "written as v1" only for
  objects read through v1. Children of a v2beta1 job name `kubeflow.org/v2beta1` in their owner
  reference, so both versions map back to the one MPIJob controller; the events of a v2beta1 job
  come from `mpi-operator` and point at the job as v2beta1, as mpi-operator's do.
* **The v1 launcher's kubectl image is a flag** (`--mpi-kubectl-delivery-image`), which the pure
  planner takes as an argument: `plan` passes the configured value through.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from kubetrain.api.conversion_mpi import written_version
from kubetrain.api.crds import all_kinds, crd_for
from kubetrain.api.kinds import KINDS, KindInfo
from kubetrain.api.kinds_mpi import CAFFE2JOB, CHAINERJOB, EXTRA_KIND_NAMES, MPIJOB_V1, MPIJOB_VERSIONS
from kubetrain.controller import mpi, reconciler
from kubetrain.controller.config import ControllerConfig
from kubetrain.controller.plan import Observed, Plan

JsonDict = dict[str, Any]

SERVED_KINDS: Mapping[str, KindInfo] = {
    **KINDS,
    MPIJOB_V1.kind: MPIJOB_V1,
    CHAINERJOB.kind: CHAINERJOB,
    CAFFE2JOB.kind: CAFFE2JOB,
}
"""Every kind the operator reconciles, each with the version it is listed and watched as."""

OWN_PLANNER_KINDS = frozenset(EXTRA_KIND_NAMES)
"""Kinds whose planners refuse a same-named object they do not control (`ErrResourceExists`)
instead of adopting it, so the runtime shows them their namesakes (see `Manager.observed_for`)."""


def owner_api_versions(info: Any) -> frozenset[str]:
    """The apiVersions a child's controller reference may name for a job of this kind."""
    if info.kind == MPIJOB_V1.kind and info.group == MPIJOB_V1.group:
        return frozenset(i.api_version for i in MPIJOB_VERSIONS.values())
    return frozenset({info.api_version})


def _mechanics(info: Any, job: JsonDict) -> Any:
    """The KindInfo whose wire facts apply to `job` (an MPIJob: the version it was written in)."""
    if info.kind == MPIJOB_V1.kind:
        return MPIJOB_VERSIONS[written_version(job)]
    return info


def controller_name(info: Any, job: JsonDict) -> str:
    """The events' `source.component`: `mpi-operator` for a v2beta1 MPIJob, else the kind's."""
    return str(_mechanics(info, job).controller_name)


def event_api_version(info: Any, job: JsonDict) -> str:
    """The apiVersion an event's involvedObject names: the version the job was written in."""
    if info.kind == MPIJOB_V1.kind:
        return str(_mechanics(info, job).api_version)
    return str(job.get("apiVersion") or info.api_version)


def crd_manifests(kinds: Iterable[str] | None = None) -> list[JsonDict]:
    """The CRDs of these kinds (all served kinds by default), every version of each: the
    mpijobs CRD always carries both v1 (storage) and v2beta1."""
    wanted = set(SERVED_KINDS if kinds is None else kinds)
    grouped: dict[str, list[KindInfo]] = {}
    for info in all_kinds():
        if info.kind in wanted:
            grouped.setdefault(info.crd_name, []).append(info)
    return [crd_for(infos) for infos in grouped.values()]


def plan(job: dict[str, Any], observed: Observed, now: datetime, config: ControllerConfig) -> Plan:
    """`kubetrain.controller.reconciler.plan`, with the configured kubectl-delivery image handed
    to the MPIJob planner (whose shared entry point does not pass it on)."""
    if isinstance(job, dict) and job.get("kind") == MPIJOB_V1.kind:
        return mpi.plan(job, observed, now, config, kubectl_delivery_image=config.mpi_kubectl_delivery_image)
    return reconciler.plan(job, observed, now, config)
