"""Object semantics and error bodies for the basic verbs."""

from __future__ import annotations

import json
import re

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from kubetrain.embedded.apiserver import EmbeddedAPIServer

from .helpers import NS, Http, Unique, configmap, pod


def status_of(exc: ApiException) -> dict:
    return json.loads(exc.body)


async def test_create_sets_system_metadata(core: client.CoreV1Api, ns: NS) -> None:
    created = await core.create_namespaced_pod(ns.name, pod("a", labels={"app": "x"}))
    meta = created.metadata
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}", meta.uid)
    assert int(meta.resource_version) > 0
    assert meta.generation == 1
    assert meta.namespace == ns.name
    assert meta.creation_timestamp is not None
    assert created.status.phase == "Pending"
    assert created.spec.restart_policy == "Always"


async def test_creation_timestamp_format(http: Http, ns: NS) -> None:
    status, body, _ = await http.post(ns.pods, pod("ts"))
    assert status == 201
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", body["metadata"]["creationTimestamp"])


async def test_resource_version_is_global_and_monotonic(http: Http, ns: NS) -> None:
    rvs = []
    for i in range(3):
        _, body, _ = await http.post(ns.configmaps, configmap(f"c{i}"))
        rvs.append(int(body["metadata"]["resourceVersion"]))
    _, body, _ = await http.post(ns.pods, pod("p"))
    rvs.append(int(body["metadata"]["resourceVersion"]))
    assert rvs == sorted(rvs) and len(set(rvs)) == 4


async def test_generate_name(core: client.CoreV1Api, ns: NS) -> None:
    names = set()
    for _ in range(20):
        created = await core.create_namespaced_config_map(ns.name, {"metadata": {"generateName": "job-"}})
        assert re.fullmatch(r"job-[a-z0-9]{5}", created.metadata.name)
        names.add(created.metadata.name)
    assert len(names) == 20


async def test_namespace_defaults_from_url(http: Http, ns: NS) -> None:
    status, body, _ = await http.post(ns.configmaps, configmap("x"))
    assert status == 201 and body["metadata"]["namespace"] == ns.name
    status, body, _ = await http.post(ns.configmaps, configmap("y", namespace="kube-system"))
    assert status == 400
    assert (
        body["message"]
        == "the namespace of the provided object does not match the namespace sent on the request"
    )


async def test_already_exists(core: client.CoreV1Api, ns: NS) -> None:
    await core.create_namespaced_pod(ns.name, pod("dup"))
    with pytest.raises(ApiException) as err:
        await core.create_namespaced_pod(ns.name, pod("dup"))
    assert err.value.status == 409
    assert status_of(err.value) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'pods "dup" already exists',
        "reason": "AlreadyExists",
        "details": {"name": "dup", "kind": "pods"},
        "code": 409,
    }


async def test_not_found(core: client.CoreV1Api, http: Http, ns: NS) -> None:
    with pytest.raises(ApiException) as err:
        await core.read_namespaced_pod("missing", ns.name)
    assert err.value.status == 404
    body = status_of(err.value)
    assert body["message"] == 'pods "missing" not found' and body["reason"] == "NotFound"
    assert body["details"] == {"name": "missing", "kind": "pods"}
    status, body, _ = await http.get(f"/apis/apps/v1/namespaces/{ns}/deployments/nope")
    assert status == 404
    assert body["message"] == 'deployments.apps "nope" not found'
    assert body["details"] == {"name": "nope", "group": "apps", "kind": "deployments"}


async def test_update_with_stale_resource_version_conflicts(core: client.CoreV1Api, ns: NS) -> None:
    cm = await core.create_namespaced_config_map(ns.name, configmap("cm", {"a": "1"}))
    cm.data = {"a": "2"}
    updated = await core.replace_namespaced_config_map("cm", ns.name, cm)
    assert int(updated.metadata.resource_version) > int(cm.metadata.resource_version)
    cm.data = {"a": "3"}  # still carries the old resourceVersion
    with pytest.raises(ApiException) as err:
        await core.replace_namespaced_config_map("cm", ns.name, cm)
    assert err.value.status == 409
    body = status_of(err.value)
    assert body["reason"] == "Conflict"
    assert body["message"] == (
        'Operation cannot be fulfilled on configmaps "cm": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )
    assert body["details"] == {"name": "cm", "kind": "configmaps"}


async def test_update_without_resource_version_is_unconditional(http: Http, ns: NS) -> None:
    await http.post(ns.configmaps, configmap("u", {"a": "1"}))
    status, body, _ = await http.put(f"{ns.configmaps}/u", configmap("u", {"a": "9"}))
    assert status == 200 and body["data"] == {"a": "9"}


async def test_noop_update_keeps_resource_version(http: Http, ns: NS) -> None:
    _, created, _ = await http.post(ns.configmaps, configmap("n", {"a": "1"}))
    status, body, _ = await http.put(f"{ns.configmaps}/n", created)
    assert status == 200 and body["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


async def test_update_of_missing_object_is_404_and_name_mismatch_400(http: Http, ns: NS) -> None:
    status, body, _ = await http.put(f"{ns.configmaps}/zz", configmap("zz"))
    assert status == 404 and body["message"] == 'configmaps "zz" not found'
    await http.post(ns.configmaps, configmap("zz"))
    status, body, _ = await http.put(f"{ns.configmaps}/zz", configmap("other"))
    assert status == 400
    assert body["message"] == "the name of the object (other) does not match the name on the URL (zz)"


async def test_generation_bumps_only_on_spec_change_for_kinds_with_status(http: Http, ns: NS) -> None:
    dep = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"a": "b"}},
            "template": {
                "metadata": {"labels": {"a": "b"}},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]},
            },
        },
    }
    path = f"/apis/apps/v1/namespaces/{ns}/deployments/d"
    _, body, _ = await http.post(f"/apis/apps/v1/namespaces/{ns}/deployments", dep)
    assert body["metadata"]["generation"] == 1
    _, body, _ = await http.patch(path, {"metadata": {"labels": {"x": "y"}}})
    assert body["metadata"]["generation"] == 1
    _, body, _ = await http.patch(path, {"spec": {"replicas": 3}})
    assert body["metadata"]["generation"] == 2
    _, body, _ = await http.patch(path + "/status", {"status": {"replicas": 3}})
    assert body["metadata"]["generation"] == 2 and body["status"]["replicas"] == 3


async def test_kinds_without_spec_have_no_generation(http: Http, ns: NS, unique: Unique) -> None:
    """kube-apiserver sets metadata.generation only for kinds whose strategy tracks it."""
    path = f"{ns.configmaps}/g"
    _, body, _ = await http.post(ns.configmaps, configmap("g", {"a": "1"}))
    assert "generation" not in body["metadata"]
    _, body, _ = await http.patch(path, {"data": {"a": "2"}})
    assert "generation" not in body["metadata"]
    svc = {"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}}
    _, body, _ = await http.post(ns.path("services"), svc)
    assert "generation" not in body["metadata"]
    lease = {"metadata": {"name": "l"}, "spec": {"holderIdentity": "me"}}
    _, body, _ = await http.post(ns.path("leases", "coordination.k8s.io/v1"), lease)
    assert "generation" not in body["metadata"]
    _, body, _ = await http.get(f"/api/v1/namespaces/{ns}")
    assert "generation" not in body["metadata"]
    event = {"metadata": {"name": "e"}, "involvedObject": {"kind": "Pod", "name": "p", "namespace": ns.name}}
    _, body, _ = await http.post(ns.path("events"), event)
    assert "generation" not in body["metadata"]


async def test_missing_name_is_invalid(http: Http, ns: NS) -> None:
    status, body, _ = await http.post(ns.configmaps, {"metadata": {}})
    assert status == 422
    assert body["reason"] == "Invalid"
    assert (
        body["message"]
        == 'ConfigMap "" is invalid: metadata.name: Required value: name or generateName is required'
    )
    assert body["details"] == {
        "kind": "ConfigMap",
        "causes": [
            {
                "reason": "FieldValueRequired",
                "message": "Required value: name or generateName is required",
                "field": "metadata.name",
            }
        ],
    }


async def test_invalid_name(http: Http, ns: NS) -> None:
    status, body, _ = await http.post(ns.configmaps, configmap("Bad_Name"))
    assert status == 422
    assert body["message"].startswith(
        'ConfigMap "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": '
        "a lowercase RFC 1123 subdomain must consist of"
    )


async def test_malformed_json_is_400(http: Http, ns: NS) -> None:
    status, body, _ = await http.request(
        "POST", ns.pods, raw=b'{"metadata": {', content_type="application/json"
    )
    assert status == 400 and body["reason"] == "BadRequest" and body["kind"] == "Status"


async def test_unsupported_verbs_are_405(http: Http, ns: NS) -> None:
    status, body, _ = await http.post(f"{ns.pods}/x", pod("x"))
    assert status == 405
    assert body["reason"] == "MethodNotAllowed"
    status, body, _ = await http.request("PUT", ns.pods, pod("x"))
    assert status == 405
    status, body, _ = await http.request("POST", "/api/v1/pods", pod("x"))
    assert status == 405


async def test_namespace_must_exist(core: client.CoreV1Api, ns: NS) -> None:
    with pytest.raises(ApiException) as err:
        await core.create_namespaced_pod("nope", pod("x"))
    assert err.value.status == 404
    assert status_of(err.value)["message"] == 'namespaces "nope" not found'


async def test_initial_namespaces_exist(core: client.CoreV1Api, ns: NS) -> None:
    names = {n.metadata.name for n in (await core.list_namespace()).items}
    assert {"default", "kube-system", ns.name} <= names
    got = await core.read_namespace("default")
    assert got.status.phase == "Active"


async def test_dry_run_create_and_delete_change_nothing(http: Http, ns: NS) -> None:
    status, body, _ = await http.post(ns.pods, pod("dry"), params={"dryRun": "All"})
    assert status == 201 and body["metadata"]["uid"]
    status, _, _ = await http.get(f"{ns.pods}/dry")
    assert status == 404
    await http.post(ns.pods, pod("keep"))
    status, _, _ = await http.delete(f"{ns.pods}/keep", params={"dryRun": "All"})
    assert status == 200
    status, _, _ = await http.get(f"{ns.pods}/keep")
    assert status == 200


async def test_cluster_scoped_objects_have_no_namespace(http: Http, unique: Unique) -> None:
    name = unique("n1", cleanup="/api/v1/nodes")
    status, body, _ = await http.post("/api/v1/nodes", {"metadata": {"name": name, "namespace": "default"}})
    assert status == 201 and "namespace" not in body["metadata"]
    status, body, _ = await http.get(f"/api/v1/nodes/{name}")
    assert status == 200


@pytest.mark.embedded_only("reads the server's store directly")
async def test_callers_cannot_mutate_stored_state(server: EmbeddedAPIServer, http: Http, ns: NS) -> None:
    await http.post(ns.configmaps, configmap("m", {"a": "1"}))
    snap = server.store.snapshot("configmaps", ns.name)
    snap[0]["data"]["a"] = "changed"
    _, body, _ = await http.get(f"{ns.configmaps}/m")
    assert body["data"] == {"a": "1"}


async def test_list_items_omit_kind_for_builtin_lists(http: Http, ns: NS) -> None:
    await http.post(ns.pods, pod("l1"))
    _, body, _ = await http.get(ns.pods)
    assert body["kind"] == "PodList" and body["apiVersion"] == "v1"
    assert "kind" not in body["items"][0]
    assert int(body["metadata"]["resourceVersion"]) >= int(body["items"][0]["metadata"]["resourceVersion"])


async def test_services_get_cluster_ip_and_defaults(core: client.CoreV1Api, ns: NS) -> None:
    svc = await core.create_namespaced_service(
        ns.name, {"metadata": {"name": "s"}, "spec": {"selector": {"a": "b"}, "ports": [{"port": 80}]}}
    )
    assert svc.spec.cluster_ip.startswith("10.")
    assert svc.spec.type == "ClusterIP" and svc.spec.ports[0].protocol == "TCP"
    assert svc.spec.ports[0].target_port == 80
    headless = await core.create_namespaced_service(
        ns.name, {"metadata": {"name": "h"}, "spec": {"clusterIP": "None", "selector": {"a": "b"}}}
    )
    assert headless.spec.cluster_ip == "None"


async def test_many_builtin_kinds_round_trip(http: Http, ns: NS, unique: Unique) -> None:
    template = {
        "metadata": {"labels": {"app": "x"}},
        "spec": {"containers": [{"name": "c", "image": "busybox"}], "restartPolicy": "Never"},
    }
    sts_template = {**template, "spec": {**template["spec"], "restartPolicy": "Always"}}
    clusterrole = unique("r", cleanup="/apis/rbac.authorization.k8s.io/v1/clusterroles")
    webhooks = unique("v", cleanup="/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations")
    hpa_spec = {
        "scaleTargetRef": {"kind": "Deployment", "name": "d", "apiVersion": "apps/v1"},
        "maxReplicas": 3,
    }
    objects = {
        f"/apis/batch/v1/namespaces/{ns}/jobs": {"metadata": {"name": "j"}, "spec": {"template": template}},
        f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases": {
            "metadata": {"name": "l"},
            "spec": {"holderIdentity": "me"},
        },
        "/apis/rbac.authorization.k8s.io/v1/clusterroles": {"metadata": {"name": clusterrole}, "rules": []},
        f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings": {
            "metadata": {"name": "rb"},
            "roleRef": {"kind": "Role", "name": "r", "apiGroup": "rbac.authorization.k8s.io"},
        },
        f"/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers": {
            "metadata": {"name": "h"},
            "spec": hpa_spec,
        },
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations": {
            "metadata": {"name": webhooks}
        },
        f"/apis/events.k8s.io/v1/namespaces/{ns}/events": {
            "metadata": {"name": "e"},
            "note": "hi",
            "eventTime": "2026-01-01T00:00:00.000000Z",
            "reportingController": "example.com/c",
            "reportingInstance": "i",
            "action": "Act",
            "reason": "Because",
            "type": "Normal",
            "regarding": {"kind": "Pod", "name": "p", "namespace": ns.name},
        },
        f"/api/v1/namespaces/{ns}/secrets": {"metadata": {"name": "s"}, "stringData": {"a": "b"}},
        f"/api/v1/namespaces/{ns}/serviceaccounts": {"metadata": {"name": "sa"}},
        f"/api/v1/namespaces/{ns}/endpoints": {"metadata": {"name": "ep"}},
        f"/apis/apps/v1/namespaces/{ns}/statefulsets": {
            "metadata": {"name": "ss"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "x"}}, "template": sts_template},
        },
    }
    for path, obj in objects.items():
        status, body, _ = await http.post(path, obj)
        assert status == 201, (path, body)
        status, got, _ = await http.get(f"{path}/{obj['metadata']['name']}")
        assert status == 200 and got["metadata"]["uid"] == body["metadata"]["uid"]
