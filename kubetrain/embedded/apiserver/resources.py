"""What the server serves: resource types, the built-in table, and the catalog of served kinds.

Built-in kinds are declared in one table so adding a kind is one line. Custom kinds enter the
catalog when their CustomResourceDefinition is established (see ``crd.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubetrain.kube.resources import builtin_type

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")

# Fields every kind can be selected by.
META_FIELDS = ("metadata.name", "metadata.namespace")


@dataclass(frozen=True)
class ScalePaths:
    """Where a kind keeps the numbers its ``scale`` subresource exposes (dotted JSON paths)."""

    spec_replicas: str = ".spec.replicas"
    status_replicas: str = ".status.replicas"
    label_selector: str | None = None
    selector_from_spec: bool = False  # built-ins: status.selector is derived from spec.selector


@dataclass(frozen=True)
class CustomInfo:
    """The CRD-specific part of a custom resource type (one per served version)."""

    crd_name: str
    schema: dict[str, Any] | None
    storage_version: str
    printer_columns: tuple[dict[str, Any], ...] = ()
    conversion: str = "None"


@dataclass(frozen=True)
class ResourceType:
    """One (group, version, resource) the server answers for."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool = True
    short_names: tuple[str, ...] = ()
    subresources: frozenset[str] = frozenset()
    categories: tuple[str, ...] = ()
    scale: ScalePaths | None = None
    field_selectors: tuple[str, ...] = ()
    default_propagation: str = "Background"
    return_deleted_object: bool = False
    verbs: tuple[str, ...] = ALL_VERBS
    singular: str = ""
    list_kind: str = ""
    custom: CustomInfo | None = None
    generation: bool = False  # whether the kind's strategy keeps metadata.generation

    @property
    def tracks_generation(self) -> bool:
        """kube-apiserver sets metadata.generation only for kinds with a spec its strategy tracks."""
        return self.generation or self.custom is not None

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def key(self) -> str:
        """Storage key: shared by every version of one group/resource."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def strategic(self) -> bool:
        """Built-in kinds have Go struct tags, so strategic merge patch applies to them."""
        return self.custom is None

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources

    @property
    def singular_name(self) -> str:
        return self.singular or self.kind.lower()

    @property
    def list_kind_name(self) -> str:
        return self.list_kind or f"{self.kind}List"

    @property
    def selectable_fields(self) -> tuple[str, ...]:
        return META_FIELDS + self.field_selectors


def _b(
    api_version: str, kind: str, short: tuple[str, ...] = (), sub: tuple[str, ...] = (), **kw: Any
) -> ResourceType:
    """A served built-in: its plural and scope are Kubernetes' (`kube.resources`), the rest is ours."""
    rt = builtin_type(api_version, kind)
    return ResourceType(rt.group, rt.version, kind, rt.plural, rt.namespaced, short, frozenset(sub), **kw)


_POD_FIELDS = (
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.schedulerName",
    "spec.serviceAccountName",
    "spec.hostNetwork",
    "status.phase",
    "status.podIP",
    "status.nominatedNodeName",
)
_EVENT_FIELDS = (
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
)
_EVENTS_V1_FIELDS = (
    "regarding.kind",
    "regarding.namespace",
    "regarding.name",
    "regarding.uid",
    "regarding.apiVersion",
    "regarding.resourceVersion",
    "regarding.fieldPath",
    "reason",
    "reportingController",
    "type",
)
_REPLICAS = ScalePaths(label_selector=".status.selector", selector_from_spec=True)

BUILTINS: tuple[ResourceType, ...] = (
    _b(
        "v1",
        "Namespace",
        ("ns",),
        ("status", "finalize"),
        field_selectors=("status.phase",),
        return_deleted_object=True,
        verbs=tuple(v for v in ALL_VERBS if v != "deletecollection"),  # namespaces are never bulk-deleted
    ),
    _b(
        "v1",
        "Pod",
        ("po",),
        ("status", "log", "binding"),
        categories=("all",),
        field_selectors=_POD_FIELDS,
        return_deleted_object=True,
        generation=True,
    ),
    _b(
        "v1",
        "Service",
        ("svc",),
        ("status",),
        categories=("all",),
        field_selectors=("spec.clusterIP", "spec.type"),
        return_deleted_object=True,
    ),
    _b("v1", "Binding", verbs=("create",)),
    _b("v1", "ConfigMap", ("cm",)),
    _b("v1", "Secret", (), field_selectors=("type",)),
    _b("v1", "Event", ("ev",), field_selectors=_EVENT_FIELDS),
    _b("v1", "ServiceAccount", ("sa",), ("token",)),
    _b("v1", "Node", ("no",), ("status",), field_selectors=("spec.unschedulable",)),
    _b("v1", "Endpoints", ("ep",)),
    _b("v1", "PersistentVolumeClaim", ("pvc",), ("status",)),
    _b(
        "apps/v1",
        "Deployment",
        ("deploy",),
        ("status", "scale"),
        categories=("all",),
        scale=_REPLICAS,
        generation=True,
    ),
    _b(
        "apps/v1",
        "StatefulSet",
        ("sts",),
        ("status", "scale"),
        categories=("all",),
        scale=_REPLICAS,
        generation=True,
    ),
    _b(
        "apps/v1",
        "ReplicaSet",
        ("rs",),
        ("status", "scale"),
        categories=("all",),
        scale=_REPLICAS,
        generation=True,
        field_selectors=("status.replicas",),
    ),
    _b(
        "apps/v1",
        "DaemonSet",
        ("ds",),
        ("status",),
        categories=("all",),
        generation=True,
    ),
    _b("apps/v1", "ControllerRevision"),
    # batch/v1 Jobs orphan their pods by default when deleted through the REST API.
    _b(
        "batch/v1",
        "Job",
        (),
        ("status",),
        categories=("all",),
        field_selectors=("status.successful",),
        default_propagation="Orphan",
        generation=True,
    ),
    _b("batch/v1", "CronJob", ("cj",), ("status",), categories=("all",), generation=True),
    _b("coordination.k8s.io/v1", "Lease"),
    _b("rbac.authorization.k8s.io/v1", "Role"),
    _b("rbac.authorization.k8s.io/v1", "RoleBinding"),
    _b("rbac.authorization.k8s.io/v1", "ClusterRole"),
    _b("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
    _b(
        "autoscaling/v2",
        "HorizontalPodAutoscaler",
        ("hpa",),
        ("status",),
        categories=("all",),
        generation=True,
    ),
    _b(
        "policy/v1",
        "PodDisruptionBudget",
        ("pdb",),
        ("status",),
        generation=True,
    ),
    _b("scheduling.k8s.io/v1", "PriorityClass", ("pc",)),
    _b(
        "admissionregistration.k8s.io/v1",
        "ValidatingWebhookConfiguration",
        categories=("api-extensions",),
        generation=True,
    ),
    _b(
        "admissionregistration.k8s.io/v1",
        "MutatingWebhookConfiguration",
        categories=("api-extensions",),
        generation=True,
    ),
    _b(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        ("crd", "crds"),
        ("status",),
        categories=("api-extensions",),
        generation=True,
    ),
    _b("events.k8s.io/v1", "Event", ("ev",), field_selectors=_EVENTS_V1_FIELDS),
)

CRD_KEY = "customresourcedefinitions.apiextensions.k8s.io"
NAMESPACE_KEY = "namespaces"
POD_KEY = "pods"


@dataclass
class _Group:
    versions: list[str] = field(default_factory=list)
    preferred: str = ""


class ResourceCatalog:
    """The served (group, version, resource) triples, in registration order for discovery."""

    def __init__(self) -> None:
        self._by_gvr: dict[tuple[str, str, str], ResourceType] = {}
        self._storage: dict[str, ResourceType] = {}
        self._groups: dict[str, _Group] = {}
        self._terminating: set[str] = set()
        self._listeners: list[Callable[[], None]] = []
        for rt in BUILTINS:
            self.add(rt, storage=True)

    def add(self, rt: ResourceType, storage: bool) -> None:
        self._by_gvr[(rt.group, rt.version, rt.plural)] = rt
        grp = self._groups.setdefault(rt.group, _Group())
        if rt.version not in grp.versions:
            grp.versions.append(rt.version)
        if storage:
            self._storage[rt.key] = rt
        if not grp.preferred:
            grp.preferred = rt.version

    def replace_custom(self, key: str, types: list[ResourceType], storage: ResourceType | None) -> None:
        """Swap every served version of one custom resource for ``types`` (empty: stop serving)."""
        group = None
        for gvr, rt in list(self._by_gvr.items()):
            if rt.key == key and rt.custom is not None:
                group = rt.group
                del self._by_gvr[gvr]
        self._storage.pop(key, None)
        self._terminating.discard(key)
        for rt in types:
            group = rt.group
            self._by_gvr[(rt.group, rt.version, rt.plural)] = rt
        if storage is not None:
            self._storage[key] = storage
        if group is not None:
            self._rebuild_group(group, types[0].version if types else "")

    def _rebuild_group(self, group: str, preferred: str) -> None:
        versions: list[str] = []
        for g, v, _ in self._by_gvr:
            if g == group and v not in versions:
                versions.append(v)
        if not versions:
            self._groups.pop(group, None)
            return
        versions.sort(key=version_priority, reverse=True)
        pref = preferred if preferred in versions else versions[0]
        self._groups[group] = _Group(versions, pref)

    def set_terminating(self, key: str, terminating: bool) -> None:
        if terminating:
            self._terminating.add(key)
        else:
            self._terminating.discard(key)

    def is_terminating(self, key: str) -> bool:
        return key in self._terminating

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._by_gvr.get((group, version, plural))

    def storage_type(self, key: str) -> ResourceType | None:
        return self._storage.get(key)

    def storage_types(self) -> list[ResourceType]:
        return list(self._storage.values())

    def group_names(self) -> list[str]:
        return list(self._groups)

    def group_versions(self, group: str) -> tuple[list[str], str] | None:
        grp = self._groups.get(group)
        return (list(grp.versions), grp.preferred) if grp else None

    def types_in(self, group: str, version: str) -> list[ResourceType]:
        return [rt for (g, v, _), rt in self._by_gvr.items() if g == group and v == version]

    def plural_taken(self, group: str, plural: str, kind: str, except_key: str) -> bool:
        """Whether another resource of ``group`` already uses this plural or kind."""
        return any(
            rt.group == group and rt.key != except_key and (rt.plural == plural or rt.kind == kind)
            for rt in self._by_gvr.values()
        )


def version_priority(version: str) -> tuple[int, int, int]:
    """Kubernetes version ordering: GA > beta > alpha, higher numbers first, others last."""
    import re

    m = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", version)
    if not m:
        return (0, 0, 0)
    major = int(m.group(1))
    stage = {"alpha": 1, "beta": 2}.get(m.group(2) or "", 3)
    minor = int(m.group(3) or 0)
    return (stage, major, minor)
