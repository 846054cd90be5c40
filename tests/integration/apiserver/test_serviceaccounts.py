"""Service accounts for in-cluster clients: both servers give every namespace a `default`
ServiceAccount and a `kube-root-ca.crt` ConfigMap, add the `kube-api-access-<5>` projected volume
to new pods (unless automountServiceAccountToken is false or a mount exists at the path), issue
TokenRequest tokens, and authorize those tokens' requests with RBAC (the same 403 text)."""

from __future__ import annotations

import re
import ssl
from typing import Any

import aiohttp

from .conftest import Target
from .helpers import NS, Http, eventually, pod

MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
NAMESPACE_FILE = {"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}
READ_HOLDER = {"apiGroups": [""], "verbs": ["get"], "resources": ["pods"], "resourceNames": ["holder"]}


async def _has(http: Http, path: str) -> bool:
    status, _, _ = await http.get(path)
    return status == 200


async def test_every_namespace_has_default_account_and_root_ca(http: Http, ns: NS, target: Target) -> None:
    await eventually(lambda: _has(http, ns.path("serviceaccounts") + "/default"), timeout=30)
    await eventually(lambda: _has(http, ns.configmaps + "/kube-root-ca.crt"), timeout=30)
    _, cm, _ = await http.get(ns.configmaps + "/kube-root-ca.crt")
    assert list(cm["data"]) == ["ca.crt"]
    assert "-----BEGIN CERTIFICATE-----" in cm["data"]["ca.crt"]
    assert cm["metadata"]["annotations"]["kubernetes.io/description"].startswith("Contains a CA bundle")
    # the CA in it is the one that verifies the server's serving certificate
    ssl.create_default_context(cadata=cm["data"]["ca.crt"])
    if target.server is not None:
        assert cm["data"]["ca.crt"] == target.server.ca_pem.decode()


def _shape(created: dict[str, Any]) -> tuple[list[Any], list[Any]]:
    spec = created["spec"]
    volumes = [v for v in spec.get("volumes") or [] if v["name"].startswith("kube-api-access-")]
    mounts = [
        [m for m in c.get("volumeMounts") or [] if m["mountPath"] == MOUNT]
        for c in [*(spec.get("initContainers") or []), *spec["containers"]]
    ]
    return volumes, mounts


async def test_new_pods_get_the_kube_api_access_volume(http: Http, ns: NS) -> None:
    body = pod("sa-volume")
    body["spec"]["initContainers"] = [{"name": "init", "image": "busybox:1.36"}]
    status, created, _ = await http.post(ns.pods, body)
    assert status == 201, created
    assert created["spec"]["serviceAccountName"] == "default"
    volumes, mounts = _shape(created)
    assert len(volumes) == 1
    name = volumes[0]["name"]
    assert re.fullmatch(r"kube-api-access-[bcdfghjklmnpqrstvwxz2456789]{5}", name), name
    assert volumes[0]["projected"] == {
        "defaultMode": 420,
        "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {
                "downwardAPI": {
                    "items": [
                        {
                            "path": "namespace",
                            "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                        }
                    ]
                }
            },
        ],
    }
    assert mounts == [[{"name": name, "readOnly": True, "mountPath": MOUNT}]] * 2


async def test_no_volume_when_automount_is_off_or_the_path_is_mounted(http: Http, ns: NS) -> None:
    off = pod("sa-off")
    off["spec"]["automountServiceAccountToken"] = False
    status, created, _ = await http.post(ns.pods, off)
    assert status == 201, created
    assert _shape(created) == ([], [[]])

    status, sa, _ = await http.post(
        ns.path("serviceaccounts"), {"metadata": {"name": "quiet"}, "automountServiceAccountToken": False}
    )
    assert status == 201, sa
    quiet = pod("sa-quiet")
    quiet["spec"]["serviceAccountName"] = "quiet"
    status, created, _ = await http.post(ns.pods, quiet)
    assert status == 201, created
    assert _shape(created) == ([], [[]])

    own = pod("sa-own")
    own["spec"]["volumes"] = [{"name": "mine", "emptyDir": {}}]
    own["spec"]["containers"][0]["volumeMounts"] = [{"name": "mine", "mountPath": MOUNT}]
    status, created, _ = await http.post(ns.pods, own)
    assert status == 201, created
    assert [v["name"] for v in created["spec"]["volumes"]] == ["mine"]


async def _token(http: Http, ns: NS, account: str, pod_body: dict[str, Any] | None = None) -> str:
    spec: dict[str, Any] = {"expirationSeconds": 3607}
    if pod_body is not None:
        meta = pod_body["metadata"]
        spec["boundObjectRef"] = {"apiVersion": "v1", "kind": "Pod", "name": meta["name"], "uid": meta["uid"]}
    status, answer, _ = await http.post(
        f"{ns.path('serviceaccounts')}/{account}/token",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec},
    )
    assert status == 201, answer
    assert answer["kind"] == "TokenRequest" and answer["status"]["expirationTimestamp"]
    return str(answer["status"]["token"])


async def test_tokens_are_authorized_by_rbac(http: Http, ns: NS, target: Target) -> None:
    status, body, _ = await http.post(ns.path("serviceaccounts"), {"metadata": {"name": "reader"}})
    assert status == 201, body
    status, body, _ = await http.post(ns.pods, pod("other"))  # runs as `default`
    assert status == 201, body
    status, body, _ = await http.post(
        f"{ns.path('serviceaccounts')}/reader/token",
        {"spec": {"boundObjectRef": {"kind": "Pod", "name": "other", "uid": body["metadata"]["uid"]}}},
    )
    assert (status, body["reason"]) == (400, "BadRequest"), body
    assert body["message"] == (
        'cannot bind token for serviceaccount "reader" to pod running with different serviceaccount name.'
    )
    holder = pod("holder")
    holder["spec"]["serviceAccountName"] = "reader"
    status, bound_pod, _ = await http.post(ns.pods, holder)
    assert status == 201, bound_pod
    token = await _token(http, ns, "reader", bound_pod)
    user = f"system:serviceaccount:{ns.name}:reader"
    connector = aiohttp.TCPConnector(ssl=target.anonymous_ssl)
    async with aiohttp.ClientSession(connector=connector, headers={"Authorization": f"Bearer {token}"}) as s:
        as_sa = Http(target.url, s)
        status, denied, _ = await as_sa.get(ns.pods + "/holder")
        assert status == 403, denied
        assert denied["reason"] == "Forbidden"
        assert denied["message"] == (
            f'pods "holder" is forbidden: User "{user}" cannot get resource "pods" in API group "" '
            f'in the namespace "{ns.name}"'
        )
        assert denied["details"] == {"name": "holder", "kind": "pods"}
        status, denied, _ = await as_sa.get(ns.path("statefulsets", "apps/v1"))
        assert status == 403
        assert denied["message"] == (
            f'statefulsets.apps is forbidden: User "{user}" cannot list resource "statefulsets" in API '
            f'group "apps" in the namespace "{ns.name}"'
        )
        role = {
            "metadata": {"name": "read-holder"},
            "rules": [
                {"apiGroups": [""], "verbs": ["get"], "resources": ["pods"], "resourceNames": ["holder"]}
            ],
        }
        binding = {
            "metadata": {"name": "read-holder"},
            "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": ns.name}],
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "read-holder"},
        }
        for resource, obj in (("roles", role), ("rolebindings", binding)):
            status, body, _ = await http.post(ns.path(resource, "rbac.authorization.k8s.io/v1"), obj)
            assert status == 201, body

        async def can_read() -> bool:
            status, _, _ = await as_sa.get(ns.pods + "/holder")
            return status == 200

        await eventually(can_read, timeout=30)
        status, body, _ = await as_sa.get(ns.pods)  # resourceNames do not grant list
        assert status == 403, body
        # the discovery documents are open to every authenticated user
        status, _, _ = await as_sa.get("/api/v1")
        assert status == 200
        status, _, _ = await http.delete(ns.pods + "/holder", {"gracePeriodSeconds": 0})
        assert status == 200

        async def token_dead() -> bool:
            status, _, _ = await as_sa.get(ns.pods + "/holder")
            return status == 401

        await eventually(token_dead, timeout=30)  # a bound token ends with its pod


async def test_token_request_validation(http: Http, ns: NS) -> None:
    status, body, _ = await http.post(
        f"{ns.path('serviceaccounts')}/missing/token",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}},
    )
    assert status == 404, body
    assert body["message"] == 'serviceaccounts "missing" not found'
    await eventually(lambda: _has(http, ns.path("serviceaccounts") + "/default"), timeout=30)
    status, body, _ = await http.post(
        f"{ns.path('serviceaccounts')}/default/token",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 60}},
    )
    assert status == 422, body
    assert "may not specify a duration less than 10 minutes" in body["message"]
