"""Every kind kubetrain serves, one line each; the tables the other layers need, derived.

Adding a kind: its package (wire types, planner, a `KindRegistration`), its tests, and one line
in `REGISTRY`. The CRD (`python -m kubetrain.kinds.crds --write manifests/crds`), the served
kinds, the client's and the CLI's kind names, the resource table, the webhook's routes and the
child informers all follow from it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from kubetrain.api.fielderrors import ErrorList, not_supported, required
from kubetrain.api.jobs import parse_job
from kubetrain.api.kinds import KindInfo
from kubetrain.controller import gang, reconciler
from kubetrain.controller.config import (
    HPA,
    SCHEDULER_PLUGINS_PODGROUP,
    VOLCANO_PODGROUP,
    ChildType,
    ControllerConfig,
)
from kubetrain.controller.plan import Observed, Plan
from kubetrain.frameworks.jax import JAX
from kubetrain.frameworks.mxnet import MXNET
from kubetrain.frameworks.paddle import PADDLE
from kubetrain.frameworks.pytorch import PYTORCH
from kubetrain.frameworks.tensorflow import TENSORFLOW
from kubetrain.frameworks.xgboost import XGBOOST
from kubetrain.kinds import caffe2job, chainerjob, mpijob, trainjob
from kubetrain.kinds.registration import CounterFamily, KindRegistration, Verdict
from kubetrain.kinds.training_operator import MXJOB_DEPRECATED, generic

JsonDict = dict[str, Any]

REGISTRY: tuple[KindRegistration, ...] = (
    generic(TENSORFLOW),
    generic(PYTORCH),
    generic(XGBOOST),
    generic(PADDLE),
    generic(JAX),
    generic(MXNET, admission_warning=MXJOB_DEPRECATED),
    mpijob.REGISTRATION,
    chainerjob.REGISTRATION,
    caffe2job.REGISTRATION,
    *trainjob.REGISTRATIONS,
)

BY_KIND: Mapping[str, KindRegistration] = {reg.kind: reg for reg in REGISTRY}

SERVED_KINDS: Mapping[str, KindInfo] = {reg.kind: reg.info for reg in REGISTRY if reg.reconciled}
"""Every kind the operator reconciles, each with the version it is listed and watched as."""

REGISTERED_KINDS: Mapping[str, KindInfo] = {reg.kind: reg.info for reg in REGISTRY}
"""Every registered kind, reconciled or not: the CRDs served and installed, the operator's RBAC."""

REPLICA_SPEC_KINDS: Mapping[str, KindInfo] = {
    reg.kind: reg.info for reg in REGISTRY if reg.framework_plugin is not None
}
"""The `kubeflow.org/v1` replica-spec kinds on the generic reconciler: the table
`kubetrain.api.jobs.parse_job` and the webhook's rules (`kubetrain.api.validation`) are given."""


def registration_for(kind: object) -> KindRegistration | None:
    return BY_KIND.get(kind) if isinstance(kind, str) else None


def all_versions() -> list[KindInfo]:
    """Every served version of every registered kind, storage versions first within a kind."""
    return [info for reg in REGISTRY for info in reg.versions]


def reconciled_versions() -> list[KindInfo]:
    """Every served version of the kinds the operator reconciles (the job history's kinds)."""
    return [info for reg in REGISTRY if reg.reconciled for info in reg.versions]


def counter_families() -> list[CounterFamily]:
    """The upstream counter families of every registered kind, each once, in registry order (all
    of them, served or not: a scrape shows the same families whatever `--enable-scheme` says)."""
    out: list[CounterFamily] = []
    for reg in REGISTRY:
        out.extend(family for family in reg.counters if family not in out)
    return out


def webhook_kinds() -> list[KindInfo]:
    """The kinds the admission webhook validates."""
    return [reg.info for reg in REGISTRY if reg.webhook]


def admission_reads(kinds: Iterable[KindInfo]) -> list[KindInfo]:
    """The kinds the webhook rules of `kinds` look up, each once."""
    out: list[KindInfo] = []
    for info in kinds:
        reg = BY_KIND.get(info.kind)
        out.extend(read for read in (reg.admission_reads if reg else ()) if read not in out)
    return out


def unreconciled_webhook_kinds() -> list[KindInfo]:
    """The webhook kinds the operator does not reconcile: its webhook serves them whatever
    `--enable-scheme` says (which names reconciled kinds only), as the webhook configuration
    lists them and fails their writes (`failurePolicy: Fail`) when no one answers."""
    return [reg.info for reg in REGISTRY if reg.webhook and not reg.reconciled]


def crd_manifests(kinds: Iterable[str] | None = None) -> list[JsonDict]:
    """The CRDs of these kinds (every registered kind by default), every version of each, and of
    the registered kinds they read (a TrainJob's runtimes): a TrainJob CRD alone serves no job."""
    wanted = set(REGISTERED_KINDS if kinds is None else kinds)
    wanted |= {ct.kind for reg in REGISTRY if reg.kind in wanted for ct in reg.observe.context}
    return [reg.crd() for reg in REGISTRY if reg.kind in wanted]


def installed_objects() -> list[JsonDict]:
    """What the registered kinds' installs ship besides their CRDs, each object once, in order."""
    out: list[JsonDict] = []
    for reg in REGISTRY:
        out.extend(obj for obj in reg.installs if obj not in out)
    return out


def plan(job: JsonDict, observed: Observed, now: datetime, config: ControllerConfig) -> Plan:
    """The plan of one job of any registered kind: its registration's planner."""
    reg = registration_for(job.get("kind")) if isinstance(job, dict) else None
    if reg is None:
        _, _, errors = parse_job(job, REPLICA_SPEC_KINDS)
        return reconciler.unknown_kind(job, errors)
    if reg.planner is None:  # accepted and validated, not run (no controller for it yet)
        return Plan()
    return reg.planner(job, observed, now, gang.config_for_job(job, config))


def watched_children(config: ControllerConfig, kinds: Iterable[str] | None = None) -> list[ChildType]:
    """The child kinds besides Pods and Services the runtime must cache for `Observed.others`:
    the configured gang scheduler's PodGroups (both kinds when the pods' scheduler decides) and
    autoscaling/v2 HPAs (PyTorch elastic), plus the children the registrations of `kinds` own
    (None: the generic kinds only)."""
    out = []
    if config.gang_scheduling:
        api_version, kind, plural = VOLCANO_PODGROUP if config.uses_volcano else SCHEDULER_PLUGINS_PODGROUP
        out.append(ChildType(api_version, kind, plural, None))
    elif config.gang_schedulers_named_by_pods:
        out.extend(ChildType(*group, None) for group in (VOLCANO_PODGROUP, SCHEDULER_PLUGINS_PODGROUP))
    out.append(ChildType(HPA[0], HPA[1], HPA[2], None))
    for name in kinds or ():
        reg = BY_KIND.get(name)
        for child in reg.children if reg is not None else ():
            if child not in out:
                out.append(child)
    return out


def unknown_kind_errors(doc: Any) -> ErrorList:
    """The error for a document of no registered kind, naming every kind kubetrain takes (the
    replica-spec path alone would list only its six)."""
    kind = doc.get("kind") if isinstance(doc, dict) else None
    if isinstance(kind, str) and kind in REGISTERED_KINDS:
        return ErrorList()
    if kind is None:
        return ErrorList([required("kind", f"must be one of {', '.join(REGISTERED_KINDS)}")])
    return ErrorList([not_supported("kind", kind, list(REGISTERED_KINDS))])


def has_offline_rules(doc: Any) -> bool:
    """Whether `doc` is of a kind the webhook does not validate, checked by its controller's rules."""
    reg = registration_for(doc.get("kind")) if isinstance(doc, dict) else None
    return reg is not None and reg.problems is not None


def offline_verdict(doc: Any) -> Verdict | None:
    """The verdict of a kind's own webhook rules (`admit`) on `doc` offline: without a lookup, so
    what the object itself holds (a TrainJob's runtime is checked once it is applied); None for a
    kind without such rules."""
    reg = registration_for(doc.get("kind")) if isinstance(doc, dict) else None
    if reg is None or reg.admit is None:
        return None
    return reg.admit(doc, None, None)


def is_companion(doc: Any) -> bool:
    """Whether `doc` is of a registered kind no controller runs (a Trainer runtime): what a job
    reads, applied before it when a file holds both (`kubetrain run`)."""
    reg = registration_for(doc.get("kind")) if isinstance(doc, dict) else None
    return reg is not None and not reg.reconciled


def offline_problems(doc: JsonDict) -> list[str]:
    """What the controller of a kind without a webhook would refuse in `doc` ([] if nothing)."""
    reg = registration_for(doc.get("kind"))
    if reg is None or reg.problems is None:
        return []
    job, info, errors = reg.parse(doc)
    if errors or job is None or info is None:
        return list(errors.messages())
    if not job.name:
        return ["metadata.name: Required value: name or generateName is required"]
    return reg.problems(job, info)
