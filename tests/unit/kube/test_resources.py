"""The built-in resource table: URLs, lookups by kind or plural, CRD registration."""

from __future__ import annotations

import pytest

from kubetrain.embedded.apiserver.resources import BUILTINS as SERVED
from kubetrain.kube.resources import BUILTIN_TYPES, ResourceRegistry, UnknownResource, builtin_type
from kubetrain.runtime.resources import default_registry


def test_paths_follow_group_scope_and_subresource() -> None:
    pods = builtin_type("v1", "Pod")
    assert pods.path("ns 1", "a/b", "status") == "/api/v1/namespaces/ns%201/pods/a%2Fb/status"
    assert pods.path() == "/api/v1/pods"
    nodes = builtin_type("v1", "Node")
    assert nodes.path("ignored", "n1") == "/api/v1/nodes/n1"
    lease = builtin_type("coordination.k8s.io/v1", "Lease")
    assert (lease.group, lease.version) == ("coordination.k8s.io", "v1")
    assert lease.path("kube-node-lease") == "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"


def test_lookup_by_kind_or_plural_and_unknown() -> None:
    registry = ResourceRegistry(BUILTIN_TYPES)
    assert registry.lookup("apps/v1", "statefulsets") is registry.lookup("apps/v1", "StatefulSet")
    assert ("v1", "configmaps") in registry and ("v1", "Widget") not in registry
    with pytest.raises(UnknownResource, match="no resource 'Widget' in 'v1'"):
        registry.lookup("v1", "Widget")


def test_register_crd_adds_only_served_versions() -> None:
    registry = ResourceRegistry()
    crd = {
        "spec": {
            "group": "example.com",
            "names": {"kind": "Widget", "plural": "widgets"},
            "scope": "Cluster",
            "versions": [{"name": "v1"}, {"name": "v2", "served": False}],
        }
    }
    [widget] = registry.register_crd(crd)
    assert widget.path(name="w") == "/apis/example.com/v1/widgets/w"
    assert ("example.com/v2", "Widget") not in registry


def test_operator_and_embedded_server_agree_on_every_builtin() -> None:
    operator = default_registry()
    for served in SERVED:
        rt = operator.lookup(served.api_version, served.kind)
        assert (rt.plural, rt.namespaced) == (served.plural, served.namespaced)
    assert ("kubeflow.org/v1", "PyTorchJob") in operator
