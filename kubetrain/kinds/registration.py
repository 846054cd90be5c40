"""One `KindRegistration` per kind: everything the layers above need to serve it.

A kind is its identity and wire types (the `KindInfo` of every served version, storage version
first: the CRD is generated from them), how a raw object is parsed, the pure planner, the child
kinds the planner owns, and what the runtime must show the planner besides its own children.
The runtime, the webhook, the client and the CLI read these fields and never a kind's name, so a
new kind (a replica-spec framework, or an API of its own such as Trainer v2's TrainJob, whose
planner creates children of other kinds) is its package plus one line in `registry.py`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from importlib import resources
from typing import Any

import yaml

from kubetrain.api.crds import crd_for
from kubetrain.api.fielderrors import ErrorList
from kubetrain.api.kinds import LABEL_JOB_NAME, KindInfo
from kubetrain.controller.config import ChildType, ControllerConfig
from kubetrain.controller.plan import Observed, Plan
from kubetrain.frameworks.base import Framework

JsonDict = dict[str, Any]
PlanFn = Callable[[JsonDict, Observed, datetime, ControllerConfig], Plan]
ParseFn = Callable[[Any], tuple[Any, KindInfo | None, ErrorList]]
"""raw object -> (decoded job or None, the KindInfo whose mechanics apply, structural errors)."""
ProblemsFn = Callable[[Any, KindInfo], list[str]]
"""(parsed job, its KindInfo) -> what the controller would refuse, for `kubetrain validate`."""
Lookup = Callable[[str, str, str, str], JsonDict | None]
"""(apiVersion, plural, namespace, name) -> the stored object or None: how a webhook reads other
objects (upstream's webhooks read them from the manager's client cache)."""


@dataclass(frozen=True)
class Verdict:
    """A kind's own admission rules' answer: denied when `errors` or `message` is set (`message`
    is a plain error, as Go's `fmt.Errorf` in a validator, shown instead of the field errors)."""

    errors: ErrorList = field(default_factory=ErrorList)
    message: str = ""
    warnings: tuple[str, ...] = ()


AdmitFn = Callable[[JsonDict, JsonDict | None, Lookup | None], Verdict]
"""(object, the stored object on UPDATE, a lookup or None) -> the verdict of the kind's webhook."""


@dataclass(frozen=True)
class ShippedCRD:
    """An upstream CRD shipped unchanged as package data (when generating it from our own types is
    not worth it: Trainer v2's embed JobSet's and the pod template's whole schemas)."""

    package: str
    file: str
    """Upstream's file name, also the one `manifests/crds` holds."""

    def text(self) -> str:
        return resources.files(self.package).joinpath("data", self.file).read_text(encoding="utf-8")

    def manifest(self) -> JsonDict:
        """The CRD object (a fresh copy: callers may change it)."""
        return copy.deepcopy(_parsed_crd(self.package, self.file))


@cache
def _parsed_crd(package: str, file: str) -> JsonDict:
    text = ShippedCRD(package, file).text()
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # ~10x faster on these 0.5-1 MB schemas
    return dict(yaml.load(text, Loader=loader))


@dataclass(frozen=True)
class ObserveHints:
    """What the runtime adds to `Observed` for this kind, beyond the children it controls."""

    namesakes: bool = False
    """Same-named objects of a watched kind the job does not control: a planner that refuses them
    (upstream's `ErrResourceExists`) instead of adopting them must see them."""
    batch_job_pods: bool = False
    """The pods of the job's batch/v1 Jobs (their controller is the Job, not the job)."""
    priority_classes: bool = False
    """Every PriorityClass, when gang scheduling is on (a gang's minResources are ordered by them)."""
    context: tuple[ChildType, ...] = ()
    """Kinds the planner reads but does not own (a TrainJob's runtimes): every object of them the
    runtime caches is shown in `Observed.others`, whoever owns it, and a change to one plans again
    every job of the kinds that read them (none of their objects names a job as its owner)."""
    replica_specs_map: bool = True
    """Whether the replica-specs field is a map of replica specs whose `replicas` add up to the
    job's pods (the create-to-pods metric); False for kinds whose pods come from elsewhere."""


@dataclass(frozen=True)
class CounterFamily:
    """Counters an upstream operator exposes under its own names, which a kind's planner
    increments by name (`<prefix><what>_total`); kept exactly as upstream spells them so its
    dashboards keep working (docs/upstream-behaviour.md#metrics)."""

    prefix: str
    """e.g. `training_operator_jobs_`."""
    counters: tuple[str, ...]
    """The `<what>` of each counter, in the order they are registered."""
    help: str
    """The HELP text, with `{what}` for the counter's word."""
    labels: tuple[str, ...] = ()
    """The label names every increment carries (missing ones are "")."""

    def names(self) -> list[str]:
        return [f"{self.prefix}{what}_total" for what in self.counters]


@dataclass(frozen=True)
class KindRegistration:
    versions: tuple[KindInfo, ...]
    """Every served version, the storage version first (it is the one listed and watched)."""
    planner: PlanFn | None
    """None: the operator does not reconcile this kind (yet): its CRD is served and installed,
    its webhook validates it, the operator may read it, but no controller lists or plans it, and
    it is not in `SERVED_KINDS` (a kind whose controller is still to come, or one a planner only
    reads, such as Trainer v2's runtimes)."""
    parse: ParseFn
    framework_plugin: Framework | None = None
    """The framework plugin of a replica-spec kind on the generic path (None: its own planner)."""
    children: tuple[ChildType, ...] = ()
    """Child kinds besides Pods and Services the planner owns and reads from `Observed.others`."""
    observe: ObserveHints = field(default_factory=ObserveHints)
    webhook: bool = False
    """Whether the admission webhook validates this kind (upstream serves one for it)."""
    admission_warning: str = ""
    """A warning the webhook adds to every CREATE/UPDATE (a deprecated kind)."""
    problems: ProblemsFn | None = None
    """Offline validation for a kind the webhook does not validate (None: the webhook's rules)."""
    version_of: Callable[[JsonDict], str] | None = None
    """Which served version's mechanics a stored object follows (None: the storage version's)."""
    counters: tuple[CounterFamily, ...] = ()
    """The upstream counter families its planner increments (the manager registers them)."""
    admit: AdmitFn | None = None
    """The kind's own webhook rules (with `webhook=True`); None: the v1 replica-spec rules of
    `kubetrain.api.validation`."""
    shipped_crd: ShippedCRD | None = None
    """Upstream's CRD, served as it is (None: generated from `versions`)."""
    admission_reads: tuple[KindInfo, ...] = ()
    """The kinds `admit` looks up (a TrainJob's runtimes): the operator's webhook caches them."""
    pod_job_label: str = LABEL_JOB_NAME
    """The label holding the job's name on its pods, how the client and CLI find them (a
    TrainJob's pods are its JobSet's: `jobset.sigs.k8s.io/jobset-name`, the same name)."""
    installs: tuple[JsonDict, ...] = ()
    """Objects besides the CRD that upstream's install ships for this kind and clients read
    (Trainer's `kubeflow-trainer-public` ConfigMap, which the Kubeflow SDK checks): the local
    plane creates them with the CRDs."""

    @property
    def reconciled(self) -> bool:
        return self.planner is not None

    def crd(self) -> JsonDict:
        """The CRD serving every version of this kind."""
        return self.shipped_crd.manifest() if self.shipped_crd is not None else crd_for(self.versions)

    @property
    def info(self) -> KindInfo:
        return self.versions[0]

    @property
    def kind(self) -> str:
        return self.info.kind

    @property
    def plural(self) -> str:
        return self.info.plural

    @property
    def api_version(self) -> str:
        return self.info.api_version

    @property
    def controller_name(self) -> str:
        return self.info.controller_name

    @property
    def framework(self) -> str:
        return self.info.framework

    def owner_api_versions(self) -> frozenset[str]:
        """The apiVersions a child's controller reference may name for a job of this kind."""
        return frozenset(v.api_version for v in self.versions)

    def mechanics(self, job: JsonDict) -> KindInfo:
        """The KindInfo whose wire facts apply to `job` (the version it was written in)."""
        if self.version_of is None:
            return self.info
        wanted = self.version_of(job)
        return next((v for v in self.versions if v.version == wanted), self.info)

    def controller_name_for(self, job: JsonDict) -> str:
        """The events' `source.component`: the version's event source, else its controller name."""
        mechanics = self.mechanics(job)
        return mechanics.event_source or mechanics.controller_name

    def event_api_version(self, job: JsonDict) -> str:
        """The apiVersion an event's involvedObject names."""
        if self.version_of is not None:
            return self.mechanics(job).api_version
        return str(job.get("apiVersion") or self.info.api_version)


def unregistered(info: Any) -> KindRegistration:
    """A registration for a kind that only names itself (tests that inject their own planner)."""

    def no_plan(job: JsonDict, observed: Observed, now: datetime, config: ControllerConfig) -> Plan:
        return Plan()

    def no_parse(raw: Any) -> tuple[Any, KindInfo | None, ErrorList]:
        return None, None, ErrorList()

    return KindRegistration(versions=(info,), planner=no_plan, parse=no_parse)
