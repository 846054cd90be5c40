"""RBAC authorization of service-account requests, as kube-apiserver's RBAC authorizer decides.

Only service accounts (tokens of `serviceaccounts.TokenIssuer`) are authorized here; the
holder of the server's own token is ``system:masters`` and allowed everything. A resource
request is allowed when a ClusterRoleBinding, or a RoleBinding of the request's namespace,
binds the user (``ServiceAccount`` subject by namespace and name, ``User`` by name, ``Group`` by
one of its groups) to a Role or ClusterRole with a rule matching the verb, API group, resource
(``<resource>/<subresource>`` for a subresource, ``*``, ``*/<subresource>``) and, when the rule
lists ``resourceNames``, the object's name (k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac).
Non-resource requests (discovery, /version, /healthz) are allowed to authenticated users, as the
default ``system:discovery``, ``system:basic-user`` and ``system:public-info-viewer`` bindings
allow them; no other default ClusterRoles are bootstrapped.

A denial is kube-apiserver's ``responsewriters.Forbidden``: 403 ``<resource>.<group> "<name>" is
forbidden: User "<user>" cannot <verb> resource "<resource>[/<sub>]" in API group "<group>" in
the namespace "<ns>"`` (or ``at the cluster scope``), which kubectl prints after
``Error from server (Forbidden): ``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from . import errors
from .serviceaccounts import UserInfo
from .store import Store

JsonDict = dict[str, Any]

ROLES, ROLE_BINDINGS = "roles.rbac.authorization.k8s.io", "rolebindings.rbac.authorization.k8s.io"
CLUSTER_ROLES = "clusterroles.rbac.authorization.k8s.io"
CLUSTER_ROLE_BINDINGS = "clusterrolebindings.rbac.authorization.k8s.io"


def _subject_matches(subject: JsonDict, user: UserInfo, binding_ns: str) -> bool:
    kind = subject.get("kind")
    name = subject.get("name")
    if kind == "ServiceAccount":
        sa = user.service_account
        return sa is not None and (subject.get("namespace") or binding_ns, name) == sa
    if kind == "User":
        return name == user.name
    if kind == "Group":
        return name in user.groups
    return False


def rule_matches(rule: JsonDict, verb: str, group: str, resource: str, sub: str | None, name: str) -> bool:
    verbs = rule.get("verbs") or []
    if "*" not in verbs and verb not in verbs:
        return False
    groups = rule.get("apiGroups") or []
    if "*" not in groups and group not in groups:
        return False
    combined = f"{resource}/{sub}" if sub else resource
    resources = rule.get("resources") or []
    if not any(r == "*" or r == combined or (sub and r == f"*/{sub}") for r in resources):
        return False
    names = rule.get("resourceNames") or []
    return not names or name in names


def _rules(store: Store, ref: JsonDict, namespace: str) -> Iterable[JsonDict]:
    kind, name = ref.get("kind"), ref.get("name") or ""
    role = store.get(ROLES, namespace, name) if kind == "Role" else store.get(CLUSTER_ROLES, "", name)
    return (role or {}).get("rules") or []


def allowed(
    store: Store,
    user: UserInfo,
    verb: str,
    group: str,
    resource: str,
    sub: str | None,
    namespace: str,
    name: str,
) -> bool:
    bindings: list[tuple[JsonDict, str]] = [(b, "") for b in store.iter(CLUSTER_ROLE_BINDINGS)]
    if namespace:
        bindings += [(b, namespace) for b in store.iter(ROLE_BINDINGS, namespace)]
    for binding, ns in bindings:
        if not any(_subject_matches(s, user, ns) for s in binding.get("subjects") or []):
            continue
        ref = binding.get("roleRef") or {}
        if not ns and ref.get("kind") != "ClusterRole":
            continue
        for rule in _rules(store, ref, ns):
            if rule_matches(rule, verb, group, resource, sub, name):
                return True
    return False


def forbidden(
    user: UserInfo, verb: str, group: str, resource: str, sub: str | None, namespace: str, name: str
) -> errors.APIError:
    combined = f"{resource}/{sub}" if sub else resource
    scope = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
    message = f'User "{user.name}" cannot {verb} resource "{combined}" in API group "{group}" {scope}'
    qualified = errors.qualified(group, resource)
    text = f'{qualified} "{name}" is forbidden: {message}' if name else f"{qualified} is forbidden: {message}"
    err = errors.forbidden(group, resource, name, message)
    err.message = text
    return err
