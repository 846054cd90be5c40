"""Kubernetes' built-in resources: (apiVersion, kind) -> plural and scope, without discovery.

Both sides need the same facts: the operator's client turns a kind into a URL, the embedded API
server serves exactly these kinds under these plurals and scopes. One table keeps them from
drifting apart; `ResourceRegistry.register` adds kinds that are not built in (from CRDs).
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote


class UnknownResource(KeyError):
    """The registry has no entry for an (apiVersion, kind-or-plural) pair."""


@dataclass(frozen=True)
class ResourceType:
    api_version: str
    kind: str
    plural: str
    namespaced: bool = True

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    @property
    def version(self) -> str:
        return self.api_version.rpartition("/")[2]

    @property
    def key(self) -> str:
        """ "<apiVersion>/<Kind>", the key `Observed.others` uses."""
        return f"{self.api_version}/{self.kind}"

    def path(
        self, namespace: str | None = None, name: str | None = None, subresource: str | None = None
    ) -> str:
        """The REST path; `namespace` None on a namespaced kind means all namespaces."""
        base = f"/api/{self.api_version}" if "/" not in self.api_version else f"/apis/{self.api_version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{quote(namespace, safe='')}"
        base += f"/{self.plural}"
        if name is not None:
            base += f"/{quote(name, safe='')}"
            if subresource:
                base += f"/{subresource}"
        return base


_CLUSTER = False
BUILTIN_TYPES: tuple[ResourceType, ...] = tuple(
    ResourceType(*row)
    for row in (
        ("v1", "Namespace", "namespaces", _CLUSTER),
        ("v1", "Pod", "pods"),
        ("v1", "Service", "services"),
        ("v1", "Binding", "bindings"),
        ("v1", "ConfigMap", "configmaps"),
        ("v1", "Secret", "secrets"),
        ("v1", "Event", "events"),
        ("v1", "ServiceAccount", "serviceaccounts"),
        ("v1", "Node", "nodes", _CLUSTER),
        ("v1", "Endpoints", "endpoints"),
        ("v1", "PersistentVolumeClaim", "persistentvolumeclaims"),
        ("apps/v1", "Deployment", "deployments"),
        ("apps/v1", "StatefulSet", "statefulsets"),
        ("apps/v1", "ReplicaSet", "replicasets"),
        ("apps/v1", "DaemonSet", "daemonsets"),
        ("apps/v1", "ControllerRevision", "controllerrevisions"),
        ("batch/v1", "Job", "jobs"),
        ("batch/v1", "CronJob", "cronjobs"),
        ("coordination.k8s.io/v1", "Lease", "leases"),
        ("rbac.authorization.k8s.io/v1", "Role", "roles"),
        ("rbac.authorization.k8s.io/v1", "RoleBinding", "rolebindings"),
        ("rbac.authorization.k8s.io/v1", "ClusterRole", "clusterroles", _CLUSTER),
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "clusterrolebindings", _CLUSTER),
        ("autoscaling/v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers"),
        ("autoscaling/v1", "HorizontalPodAutoscaler", "horizontalpodautoscalers"),
        ("policy/v1", "PodDisruptionBudget", "poddisruptionbudgets"),
        ("scheduling.k8s.io/v1", "PriorityClass", "priorityclasses", _CLUSTER),
        (
            "admissionregistration.k8s.io/v1",
            "ValidatingWebhookConfiguration",
            "validatingwebhookconfigurations",
            _CLUSTER,
        ),
        (
            "admissionregistration.k8s.io/v1",
            "MutatingWebhookConfiguration",
            "mutatingwebhookconfigurations",
            _CLUSTER,
        ),
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition", "customresourcedefinitions", _CLUSTER),
        ("events.k8s.io/v1", "Event", "events"),
    )
)


class ResourceRegistry:
    """Maps (apiVersion, kind) and (apiVersion, plural) to a ResourceType."""

    def __init__(self, types: tuple[ResourceType, ...] | list[ResourceType] = ()) -> None:
        self._by_kind: dict[tuple[str, str], ResourceType] = {}
        self._by_plural: dict[tuple[str, str], ResourceType] = {}
        for rt in types:
            self.register(rt)

    def register(self, rt: ResourceType) -> ResourceType:
        self._by_kind[(rt.api_version, rt.kind)] = rt
        self._by_plural[(rt.api_version, rt.plural)] = rt
        return rt

    def register_crd(self, crd: dict) -> list[ResourceType]:
        """Register every served version of a CustomResourceDefinition manifest."""
        spec = crd["spec"]
        names = spec["names"]
        namespaced = spec.get("scope", "Namespaced") == "Namespaced"
        return [
            self.register(
                ResourceType(f"{spec['group']}/{v['name']}", names["kind"], names["plural"], namespaced)
            )
            for v in spec.get("versions", ())
            if v.get("served", True)
        ]

    def lookup(self, api_version: str, kind_or_plural: str) -> ResourceType:
        rt = self._by_kind.get((api_version, kind_or_plural)) or self._by_plural.get(
            (api_version, kind_or_plural)
        )
        if rt is None:
            raise UnknownResource(f"no resource {kind_or_plural!r} in {api_version!r}")
        return rt

    def __contains__(self, item: tuple[str, str]) -> bool:
        return item in self._by_kind or item in self._by_plural


BUILTINS = ResourceRegistry(BUILTIN_TYPES)
"""The built-in table as a registry, for lookups only (never register into it)."""


def builtin_type(api_version: str, kind: str) -> ResourceType:
    """The built-in resource of that kind; UnknownResource when Kubernetes has none."""
    return BUILTINS.lookup(api_version, kind)
