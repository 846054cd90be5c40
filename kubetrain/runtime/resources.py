"""The kinds the operator talks to: Kubernetes' built-ins plus the custom kinds it manages.

A static, extensible table is cheaper and more predictable than discovery; `register` adds kinds
(e.g. from the CRDs we install). The built-in part is `kubetrain.kube.resources`, shared with the
embedded API server; the job kinds are every served version of each registration
(`kubetrain.kinds.registry`).
"""

from __future__ import annotations

from kubetrain.kinds import registry as kind_registry
from kubetrain.kube.resources import BUILTIN_TYPES, ResourceRegistry, ResourceType

_GANG: tuple[tuple[str, str, str, bool], ...] = (
    ("scheduling.volcano.sh/v1beta1", "PodGroup", "podgroups", True),
    ("scheduling.x-k8s.io/v1alpha1", "PodGroup", "podgroups", True),
)
"""The gang schedulers' PodGroups (Volcano, scheduler-plugins)."""


def default_registry() -> ResourceRegistry:
    """A fresh registry of the built-ins and the custom kinds (callers register more into it)."""
    kinds = tuple(
        ResourceType(i.api_version, i.kind, i.plural, i.namespaced) for i in kind_registry.all_versions()
    )
    return ResourceRegistry(BUILTIN_TYPES + tuple(ResourceType(*row) for row in _GANG) + kinds)
