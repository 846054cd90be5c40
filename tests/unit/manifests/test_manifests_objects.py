"""What the rendered objects must say, checked against the code that serves them.

Every cross-reference is followed: webhook paths exist in the webhook server's routes, the
Service's ports reach the container's, the probes hit the health server's paths on its port, RBAC
covers each thing the operator does and nothing it should not be able to do.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from kustomize_lite import render

from kubetrain.api.validation import webhook_name
from kubetrain.cli import operator as cli_operator
from kubetrain.cli.main import build_parser
from kubetrain.controller.config import ControllerConfig
from kubetrain.controller.plan import CreateObject, Observed
from kubetrain.kinds.chainerjob import planner as chainer
from kubetrain.kinds.mpijob import planner as mpi
from kubetrain.kinds.registry import REGISTERED_KINDS, webhook_kinds
from kubetrain.runtime.health import BindAddress
from kubetrain.runtime.leaderelection import DEFAULT_LEASE_NAME
from kubetrain.webhook.handler import routes
from kubetrain.webhook.provisioner import (
    DEFAULT_SECRET_NAME,
    DEFAULT_SERVICE_NAME,
    DEFAULT_WEBHOOK_CONFIGURATION,
)
from kubetrain.webhook.server import DEFAULT_CERT_DIR, DEFAULT_PORT

MANIFESTS = Path(__file__).resolve().parents[3] / "manifests"
OVERLAYS = ["cluster-wide", "single-namespace"]
CLUSTER_SCOPED = {
    ("scheduling.k8s.io", "priorityclasses"),
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations"),
    *((i.group, i.plural) for i in REGISTERED_KINDS.values() if not i.namespaced),
}
"""(group, resource) of the cluster-scoped resources the manifests name."""
Obj = dict[str, Any]


@pytest.fixture(scope="module", params=OVERLAYS)
def rendered(request: pytest.FixtureRequest) -> tuple[str, list[Obj]]:
    return request.param, render(MANIFESTS / "overlays" / request.param)


def one(objects: list[Obj], kind: str, name: str | None = None) -> Obj:
    found = [o for o in objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]
    assert len(found) == 1, (kind, name, [o["metadata"]["name"] for o in found])
    return found[0]


def container_of(objects: list[Obj]) -> Obj:
    (container,) = one(objects, "Deployment", "training-operator")["spec"]["template"]["spec"]["containers"]
    return container


def flag(container: Obj, name: str) -> str | None:
    for arg in container.get("args") or ():
        if arg == f"--{name}":
            return ""
        if arg.startswith(f"--{name}="):
            return arg.split("=", 1)[1]
    return None


# -- names shared with upstream -----------------------------------------------------------------


def test_upstream_names_make_it_a_drop_in_replacement(rendered: tuple[str, list[Obj]]) -> None:
    _, objects = rendered
    one(objects, "Namespace", "kubeflow")
    one(objects, "ServiceAccount", "training-operator")
    one(objects, "Service", DEFAULT_SERVICE_NAME)
    one(objects, "Secret", DEFAULT_SECRET_NAME)
    one(objects, "ValidatingWebhookConfiguration", DEFAULT_WEBHOOK_CONFIGURATION)
    deployment = one(objects, "Deployment", "training-operator")
    assert deployment["spec"]["selector"] == {"matchLabels": {"control-plane": "kubeflow-training-operator"}}
    template = deployment["spec"]["template"]
    assert template["metadata"]["labels"]["control-plane"] == "kubeflow-training-operator"
    assert template["metadata"]["annotations"]["sidecar.istio.io/inject"] == "false"
    assert template["spec"]["serviceAccountName"] == "training-operator"


# -- webhook -----------------------------------------------------------------------------------


def test_one_webhook_per_kind_on_a_path_the_server_serves(rendered: tuple[str, list[Obj]]) -> None:
    overlay, objects = rendered
    config = one(objects, "ValidatingWebhookConfiguration")
    served = routes()
    hooks = {h["name"]: h for h in config["webhooks"]}
    assert set(hooks) == {webhook_name(info) for info in webhook_kinds()}
    service = one(objects, "Service", DEFAULT_SERVICE_NAME)
    for info in webhook_kinds():
        hook = hooks[webhook_name(info)]
        ref = hook["clientConfig"]["service"]
        assert served[ref["path"]] is info
        assert (ref["name"], ref["namespace"]) == (
            service["metadata"]["name"],
            service["metadata"]["namespace"],
        )
        assert "caBundle" not in hook["clientConfig"]  # injected at run time
        assert hook["failurePolicy"] == "Fail"
        assert hook["sideEffects"] == "None"
        assert hook["admissionReviewVersions"] == ["v1"]
        assert hook["rules"] == [
            {
                "apiGroups": [info.group],
                "apiVersions": [info.version],
                "operations": ["CREATE", "UPDATE"],
                "resources": [info.plural],
                "scope": "Namespaced" if info.namespaced else "Cluster",
            }
        ]
        if overlay == "single-namespace":
            assert hook["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": "kubeflow"}}
        else:
            assert "namespaceSelector" not in hook


def test_service_ports_reach_the_webhook_and_metrics_listeners(rendered: tuple[str, list[Obj]]) -> None:
    _, objects = rendered
    service = one(objects, "Service", DEFAULT_SERVICE_NAME)
    container = container_of(objects)
    container_ports = {p["containerPort"] for p in container["ports"]}
    ports = {p["name"]: p for p in service["spec"]["ports"]}
    assert ports["webhook-server"]["port"] == 443
    assert (
        ports["webhook-server"]["targetPort"]
        == DEFAULT_PORT
        == int(flag(container, "webhook-server-port") or 0)
    )
    metrics_port = BindAddress.parse(flag(container, "metrics-bind-address") or "").port
    assert ports["monitoring-port"]["targetPort"] == metrics_port == 8080
    assert {DEFAULT_PORT, metrics_port} <= container_ports
    pod_labels = one(objects, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= pod_labels.items()
    assert service["metadata"]["annotations"]["prometheus.io/port"] == str(metrics_port)


# -- the pod -----------------------------------------------------------------------------------


def test_probes_hit_the_health_servers_paths_and_port(rendered: tuple[str, list[Obj]]) -> None:
    _, objects = rendered
    container = container_of(objects)
    probe_port = BindAddress.parse(flag(container, "health-probe-bind-address") or "").port
    assert probe_port == 8081
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": probe_port}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": probe_port}


def test_the_pod_listens_on_every_interface(rendered: tuple[str, list[Obj]]) -> None:
    """The operator binds loopback by default; in the pod the kubelet's probes and the Services
    reach it on the pod IP, so the Deployment's args must ask for every interface."""
    _, objects = rendered
    args = build_parser().parse_args(["operator", *container_of(objects)["args"]])
    options = cli_operator.operator_options(args)
    webhook = cli_operator.webhook_options(args)
    assert BindAddress.parse(options.metrics_address).host is None
    assert BindAddress.parse(options.probe_address).host is None
    assert webhook is not None and webhook.host is None


def test_pod_is_locked_down_with_writable_scratch_for_certificates(rendered: tuple[str, list[Obj]]) -> None:
    _, objects = rendered
    pod = one(objects, "Deployment")["spec"]["template"]["spec"]
    container = container_of(objects)
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    sc = container["securityContext"]
    assert sc["readOnlyRootFilesystem"] is True
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"] == {"drop": ["ALL"]}
    assert not pod.get("hostNetwork") and not pod.get("hostPID")
    resources = container["resources"]
    assert set(resources["requests"]) == {"cpu", "memory"} and "memory" in resources["limits"]
    mounts = [m["mountPath"] for m in container["volumeMounts"]]
    assert any(DEFAULT_CERT_DIR.is_relative_to(Path(m)) for m in mounts), mounts
    emptydirs = {v["name"] for v in pod["volumes"] if "emptyDir" in v}
    assert {m["name"] for m in container["volumeMounts"]} <= emptydirs
    env = {e["name"]: e for e in container["env"]}
    assert env["MY_POD_NAMESPACE"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace"
    assert flag(container, "leader-elect") == ""


def test_single_namespace_overlay_restricts_the_watch(rendered: tuple[str, list[Obj]]) -> None:
    overlay, objects = rendered
    container = container_of(objects)
    if overlay == "single-namespace":
        assert flag(container, "namespace") == "kubeflow"
    else:
        assert flag(container, "namespace") is None
    base_args = [a for a in container["args"] if not a.startswith("--namespace")]
    other = render(
        MANIFESTS / "overlays" / ("cluster-wide" if overlay != "cluster-wide" else "single-namespace")
    )
    assert base_args == [a for a in container_of(other)["args"] if not a.startswith("--namespace")]


# -- RBAC --------------------------------------------------------------------------------------


def bound_rules(objects: list[Obj]) -> list[tuple[Obj, Obj]]:
    """(role, rule) for every rule granted to the operator's ServiceAccount."""
    out = []
    for binding in (o for o in objects if o["kind"] in ("RoleBinding", "ClusterRoleBinding")):
        subjects = binding["subjects"]
        assert subjects == [{"kind": "ServiceAccount", "name": "training-operator", "namespace": "kubeflow"}]
        ref = binding["roleRef"]
        role = one(objects, ref["kind"], ref["name"])
        if binding["kind"] == "RoleBinding":
            assert (
                role["kind"] == "ClusterRole"
                or role["metadata"]["namespace"] == binding["metadata"]["namespace"]
            )
        out.extend((role, rule) for rule in role["rules"])
    return out


def grants(
    objects: list[Obj],
    group: str,
    resource: str,
    verb: str,
    *,
    name: str | None = None,
    namespace: str | None = None,
) -> bool:
    """Whether the operator may `verb` `resource` (in `namespace`; None = every namespace). As
    Kubernetes' authorizer does, a Role's rule grants nothing on a cluster-scoped resource."""
    for role, rule in bound_rules(objects):
        if group not in rule["apiGroups"] or resource not in rule["resources"] or verb not in rule["verbs"]:
            continue
        if role["kind"] == "Role" and (group, resource.partition("/")[0]) in CLUSTER_SCOPED:
            continue
        names = rule.get("resourceNames")
        if names is not None and name not in names:
            continue
        role_ns = role["metadata"].get("namespace") if role["kind"] == "Role" else None
        if role_ns is None or role_ns == namespace:
            return True
    return False


def test_rbac_has_no_wildcards_escalation_or_exec(rendered: tuple[str, list[Obj]]) -> None:
    _, objects = rendered
    for role, rule in bound_rules(objects):
        where = role["metadata"]["name"]
        assert "*" not in rule["verbs"] and "*" not in rule["resources"] and "*" not in rule["apiGroups"], (
            where
        )
        assert not {"escalate", "bind", "impersonate", "deletecollection"} & set(rule["verbs"]), where
        assert not {
            "pods/exec",
            "pods/attach",
            "pods/portforward",
            "nodes",
            "roles",
            "rolebindings",
            "clusterroles",
            "clusterrolebindings",
            "customresourcedefinitions",
            "mutatingwebhookconfigurations",
            "serviceaccounts/token",
        } & set(rule["resources"]), where
        assert set(rule["verbs"]) <= {"get", "list", "watch", "create", "update", "patch", "delete"}, where


def test_secrets_are_never_updated_or_deleted_except_the_certificate(
    rendered: tuple[str, list[Obj]],
) -> None:
    """MPIJob v2beta1 keeps an SSH key Secret per job, in the job's namespace: the operator may
    read Secrets and create or patch them (as mpi-operator does), never update or delete one
    other than its own certificate Secret, which it may not create (it is shipped)."""
    overlay, objects = rendered
    scope = "kubeflow" if overlay == "single-namespace" else "any"
    for role, rule in bound_rules(objects):
        if "secrets" not in rule["resources"]:
            continue
        if rule.get("resourceNames") is not None:
            assert role["kind"] == "Role" and role["metadata"]["namespace"] == "kubeflow"
            assert rule["resourceNames"] == [DEFAULT_SECRET_NAME]
            assert set(rule["verbs"]) <= {"get", "update", "patch"}
        else:
            assert set(rule["verbs"]) <= {"get", "list", "watch", "create", "patch"}, rule
    for verb in ("get", "list", "watch", "create", "patch"):
        assert grants(objects, "", "secrets", verb, name="pi-ssh", namespace=scope), verb
    for verb in ("update", "delete", "deletecollection"):
        assert not grants(objects, "", "secrets", verb, name="pi-ssh", namespace=scope), verb
    assert grants(objects, "", "secrets", "update", name=DEFAULT_SECRET_NAME, namespace="kubeflow")
    one(objects, "Secret", DEFAULT_SECRET_NAME)  # shipped, so no `create` is needed


def test_configmaps_only_through_the_cache(rendered: tuple[str, list[Obj]]) -> None:
    """The operator reads ConfigMaps only through its informer (list/watch); no `get`, no update
    or delete (owner references clean them up)."""
    overlay, objects = rendered
    scope = "kubeflow" if overlay == "single-namespace" else "any"
    for verb in ("list", "watch", "create", "patch"):
        assert grants(objects, "", "configmaps", verb, name="pi-config", namespace=scope), verb
    for verb in ("get", "update", "delete"):
        assert not grants(objects, "", "configmaps", verb, name="pi-config", namespace=scope), verb


def test_webhook_configuration_and_lease_only_by_name(rendered: tuple[str, list[Obj]]) -> None:
    _, objects = rendered
    vwc = ("admissionregistration.k8s.io", "validatingwebhookconfigurations")
    assert grants(objects, *vwc, "get", name=DEFAULT_WEBHOOK_CONFIGURATION)
    assert grants(objects, *vwc, "update", name=DEFAULT_WEBHOOK_CONFIGURATION)
    assert not grants(objects, *vwc, "update", name="gatekeeper-validating-webhook-configuration")
    assert not grants(objects, *vwc, "list")
    lease = ("coordination.k8s.io", "leases")
    assert grants(objects, *lease, "create", namespace="kubeflow")
    for verb in ("get", "update"):
        assert grants(objects, *lease, verb, name=DEFAULT_LEASE_NAME, namespace="kubeflow")
        assert not grants(objects, *lease, verb, name="kube-scheduler", namespace="kube-system")


def test_rbac_covers_what_the_operator_does(rendered: tuple[str, list[Obj]]) -> None:
    overlay, objects = rendered
    scope = "kubeflow" if overlay == "single-namespace" else None
    written = ("get", "list", "watch", "create", "patch")
    needed: list[tuple[str, str, tuple[str, ...]]] = [
        ("", "pods", ("get", "list", "watch", "create", "delete", "patch")),
        ("", "services", ("get", "list", "watch", "create", "delete", "patch")),
        ("", "events", ("create", "patch")),
        ("autoscaling", "horizontalpodautoscalers", ("get", "list", "watch", "create", "update", "delete")),
        ("scheduling.volcano.sh", "podgroups", ("get", "list", "watch", "create", "update", "delete")),
        ("scheduling.x-k8s.io", "podgroups", ("get", "list", "watch", "create", "update", "delete")),
        # MPIJob (hostfile ConfigMaps, SSH Secrets, launcher Jobs) and ChainerJob (StatefulSets).
        ("", "configmaps", ("list", "watch", "create", "patch")),
        ("", "secrets", written),
        ("batch", "jobs", written),
        ("apps", "statefulsets", written),
    ]
    if overlay == "cluster-wide":
        needed.append(("scheduling.k8s.io", "priorityclasses", ("get", "list", "watch")))
    for info in REGISTERED_KINDS.values():
        if not info.namespaced:  # read (runtimes); no namespace to confine them to
            for verb in ("get", "list", "watch"):
                assert grants(objects, info.group, info.plural, verb), (info.plural, verb)
            continue
        needed.append((info.group, info.plural, ("get", "list", "watch", "update", "patch", "delete")))
        needed.append((info.group, f"{info.plural}/status", ("get", "update", "patch")))
    for group, resource, verbs in needed:
        for verb in verbs:
            assert grants(objects, group, resource, verb, namespace=scope or "any"), (resource, verb)
            if overlay == "single-namespace":
                assert not grants(objects, group, resource, verb, namespace="other"), (resource, verb)


def test_single_namespace_has_no_cluster_wide_workload_access(rendered: tuple[str, list[Obj]]) -> None:
    overlay, objects = rendered
    cluster_rules = [rule for role, rule in bound_rules(objects) if role["kind"] == "ClusterRole"]
    if overlay == "single-namespace":
        # The webhook configuration's caBundle, and reading the cluster-scoped kinds: nothing else.
        cluster_kinds = {(i.group, i.plural) for i in REGISTERED_KINDS.values() if not i.namespaced}
        assert [
            r["resources"] for r in cluster_rules if r["apiGroups"] == ["admissionregistration.k8s.io"]
        ] == [["validatingwebhookconfigurations"]]
        for rule in (r for r in cluster_rules if r["apiGroups"] != ["admissionregistration.k8s.io"]):
            assert {(g, r) for g in rule["apiGroups"] for r in rule["resources"]} <= cluster_kinds, rule
            assert rule["verbs"] == ["get", "list", "watch"], rule
    else:
        assert any("pods" in r["resources"] for r in cluster_rules)


# -- the opt-in launcher RBAC component ------------------------------------------------------------


def launcher_roles() -> list[Obj]:
    """The Roles the MPIJob v1 and ChainerJob planners create for their launchers."""
    v1_job = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "MPIJob",
        "metadata": {"name": "tf", "namespace": "team", "uid": "u1"},
        "spec": {
            "mpiReplicaSpecs": {
                rtype: {"replicas": n, "template": {"spec": {"containers": [{"name": "mpi", "image": "x"}]}}}
                for rtype, n in (("Launcher", 1), ("Worker", 2))
            }
        },
    }
    chainer_job = {
        "apiVersion": "kubeflow.org/v1alpha1",
        "kind": "ChainerJob",
        "metadata": {"name": "ch", "namespace": "team", "uid": "u2"},
        "spec": {
            "master": {"template": {"spec": {"containers": [{"name": "chainer", "image": "x"}]}}},
            "workerSets": {
                "ws": {
                    "replicas": 2,
                    "template": {"spec": {"containers": [{"name": "chainer", "image": "x"}]}},
                }
            },
        },
    }
    now = datetime(2024, 1, 1, tzinfo=UTC)
    plans = [
        mpi.plan(v1_job, Observed(), now, ControllerConfig()),
        chainer.plan(chainer_job, Observed(), now, ControllerConfig()),
    ]
    roles = [
        a.obj for p in plans for a in p.actions if isinstance(a, CreateObject) and a.obj["kind"] == "Role"
    ]
    assert len(roles) == 2
    return roles


def test_launcher_rbac_component_lets_the_operator_grant_what_launchers_get(tmp_path: Path) -> None:
    """RBAC escalation prevention: the operator may only create a Role whose every permission it
    holds itself; the component adds exactly the launcher objects and pods/exec."""
    from test_manifests_render import with_launcher_rbac

    base = render(MANIFESTS / "overlays" / "cluster-wide")
    objects = render(with_launcher_rbac(tmp_path))
    for group, resource in (
        ("", "serviceaccounts"),
        ("rbac.authorization.k8s.io", "roles"),
        ("rbac.authorization.k8s.io", "rolebindings"),
    ):
        for verb in ("get", "list", "watch", "create", "patch"):
            assert grants(objects, group, resource, verb, namespace="team"), (resource, verb)
            assert not grants(base, group, resource, verb, namespace="team"), (resource, verb)
    for role in launcher_roles():
        for rule in role["rules"]:
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    for verb in rule["verbs"]:
                        for name in rule.get("resourceNames") or [None]:
                            assert grants(objects, group, resource, verb, name=name, namespace="team"), (
                                role["metadata"]["name"],
                                resource,
                                verb,
                            )
    assert not grants(base, "", "pods/exec", "create", namespace="team")
    added = [
        rule
        for role, rule in bound_rules(objects)
        if role["metadata"]["name"] == "training-operator-launcher-rbac"
    ]
    assert all(set(r["verbs"]) <= {"get", "list", "watch", "create", "patch"} for r in added)
