"""Which URL serves a kind: (apiVersion, kind) -> plural and scope, without a discovery round trip.

The operator talks to a fixed set of kinds, so a static, extensible table is cheaper and more
predictable than discovery; `register` adds kinds (e.g. from the CRDs we install).
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


_BUILTIN: tuple[tuple[str, str, str, bool], ...] = (
    ("v1", "Pod", "pods", True),
    ("v1", "Service", "services", True),
    ("v1", "ConfigMap", "configmaps", True),
    ("v1", "Secret", "secrets", True),
    ("v1", "Event", "events", True),
    ("v1", "ServiceAccount", "serviceaccounts", True),
    ("v1", "Endpoints", "endpoints", True),
    ("v1", "PersistentVolumeClaim", "persistentvolumeclaims", True),
    ("v1", "Namespace", "namespaces", False),
    ("v1", "Node", "nodes", False),
    ("events.k8s.io/v1", "Event", "events", True),
    ("apps/v1", "StatefulSet", "statefulsets", True),
    ("apps/v1", "Deployment", "deployments", True),
    ("batch/v1", "Job", "jobs", True),
    ("coordination.k8s.io/v1", "Lease", "leases", True),
    ("rbac.authorization.k8s.io/v1", "Role", "roles", True),
    ("rbac.authorization.k8s.io/v1", "RoleBinding", "rolebindings", True),
    ("rbac.authorization.k8s.io/v1", "ClusterRole", "clusterroles", False),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "clusterrolebindings", False),
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition", "customresourcedefinitions", False),
    (
        "admissionregistration.k8s.io/v1",
        "ValidatingWebhookConfiguration",
        "validatingwebhookconfigurations",
        False,
    ),
    ("scheduling.k8s.io/v1", "PriorityClass", "priorityclasses", False),
    ("autoscaling/v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", True),
    ("autoscaling/v1", "HorizontalPodAutoscaler", "horizontalpodautoscalers", True),
    ("scheduling.volcano.sh/v1beta1", "PodGroup", "podgroups", True),
    ("scheduling.x-k8s.io/v1alpha1", "PodGroup", "podgroups", True),
    ("kubeflow.org/v1", "TFJob", "tfjobs", True),
    ("kubeflow.org/v1", "PyTorchJob", "pytorchjobs", True),
    ("kubeflow.org/v1", "XGBoostJob", "xgboostjobs", True),
    ("kubeflow.org/v1", "PaddleJob", "paddlejobs", True),
    ("kubeflow.org/v1", "JAXJob", "jaxjobs", True),
    ("kubeflow.org/v1", "MXJob", "mxjobs", True),
    ("kubeflow.org/v1", "MPIJob", "mpijobs", True),
    ("kubeflow.org/v2beta1", "MPIJob", "mpijobs", True),
    ("kubeflow.org/v1alpha1", "ChainerJob", "chainerjobs", True),
    ("kubeflow.org/v1alpha1", "Caffe2Job", "caffe2jobs", True),
)


class ResourceRegistry:
    """Maps (apiVersion, kind) and (apiVersion, plural) to a ResourceType."""

    def __init__(self, types: tuple[ResourceType, ...] | list[ResourceType] = ()) -> None:
        self._by_kind: dict[tuple[str, str], ResourceType] = {}
        self._by_plural: dict[tuple[str, str], ResourceType] = {}
        for rt in types:
            self.register(rt)

    @classmethod
    def default(cls) -> ResourceRegistry:
        return cls(tuple(ResourceType(*row) for row in _BUILTIN))

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
