"""The status and scale subresources."""

from __future__ import annotations

from typing import Any

from kubernetes_asyncio import client

from .helpers import NS, Http, WidgetKind, pod, put_fresh


async def test_main_resource_writes_ignore_status(http: Http, ns: NS) -> None:
    await http.post(ns.pods, pod("s"))

    def change(current: dict[str, Any]) -> None:
        current["status"] = {"phase": "Running"}
        current["metadata"]["labels"] = {"changed": "yes"}

    status, body = await put_fresh(http, f"{ns.pods}/s", change)
    assert status == 200
    assert body["status"]["phase"] == "Pending" and body["metadata"]["labels"] == {"changed": "yes"}
    _, body, _ = await http.patch(f"{ns.pods}/s", {"status": {"phase": "Failed"}})
    assert body["status"]["phase"] == "Pending"


async def test_status_writes_change_only_status(http: Http, ns: NS) -> None:
    _, created, _ = await http.post(ns.pods, pod("st"))
    for _ in range(5):  # a real scheduler writes the pod's status (Unschedulable) meanwhile
        _, current, _ = await http.get(f"{ns.pods}/st")
        body = dict(current)
        body["status"] = {"phase": "Running", "podIP": "10.0.0.1"}
        body["spec"] = {"containers": [{"name": "other", "image": "x"}]}
        body["metadata"] = {**current["metadata"], "labels": {"sneaky": "1"}}
        status, out, _ = await http.put(f"{ns.pods}/st/status", body)
        if status != 409:
            break
    assert status == 200, out
    assert out["status"]["phase"] == "Running" and out["status"]["podIP"] == "10.0.0.1"
    assert out["spec"]["containers"][0]["name"] == "main"
    assert out["metadata"]["labels"] == {"sneaky": "1"}  # core/v1 keeps metadata changes through status
    assert out["metadata"]["generation"] == 1
    assert int(out["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])


async def test_status_writes_of_other_groups_reset_metadata(http: Http, ns: NS) -> None:
    deployments = ns.path("deployments", "apps/v1")
    template = {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    spec = {"replicas": 0, "selector": {"matchLabels": {"a": "b"}}, "template": template}
    await http.post(deployments, {"metadata": {"name": "d"}, "spec": spec})
    status, out, _ = await http.patch(f"{deployments}/d/status", {"metadata": {"labels": {"x": "y"}}})
    assert status == 200 and "labels" not in out["metadata"]


async def test_status_update_with_stale_resource_version_conflicts(http: Http, ns: NS) -> None:
    _, created, _ = await http.post(ns.pods, pod("c"))
    await http.patch(f"{ns.pods}/c/status", {"status": {"phase": "Running"}})
    created["status"] = {"phase": "Failed"}
    status, body, _ = await http.put(f"{ns.pods}/c/status", created)
    assert status == 409 and body["reason"] == "Conflict"


async def test_status_via_typed_client(core: client.CoreV1Api, ns: NS) -> None:
    await core.create_namespaced_pod(ns.name, pod("tc"))
    out = await core.patch_namespaced_pod_status("tc", ns.name, {"status": {"phase": "Succeeded"}})
    assert out.status.phase == "Succeeded"
    got = await core.read_namespaced_pod_status("tc", ns.name)
    assert got.status.phase == "Succeeded"


async def test_custom_resource_status_subresource(http: Http, widgets: WidgetKind) -> None:
    body = widgets.obj("w")
    body["status"] = {"phase": "ignored-on-create"}
    _, created, _ = await http.post(widgets.collection, body)
    assert "status" not in created
    _, out, _ = await http.patch(
        f"{widgets.collection}/w/status", {"status": {"phase": "Ready"}, "spec": {"size": 9}}
    )
    assert (
        out["status"] == {"phase": "Ready"}
        and out["spec"]["size"] == 2
        and out["metadata"]["generation"] == 1
    )
    _, out, _ = await http.patch(f"{widgets.collection}/w", {"spec": {"size": 3}, "status": {"phase": "x"}})
    assert out["status"] == {"phase": "Ready"} and out["metadata"]["generation"] == 2


async def test_custom_resource_scale_subresource(http: Http, widgets: WidgetKind) -> None:
    await http.post(widgets.collection, widgets.obj("w", replicas=2))
    await http.patch(f"{widgets.collection}/w/status", {"status": {"replicas": 1, "selector": "app=w"}})
    status, scale, _ = await http.get(f"{widgets.collection}/w/scale")
    assert status == 200
    assert scale["kind"] == "Scale" and scale["apiVersion"] == "autoscaling/v1"
    assert scale["spec"] == {"replicas": 2} and scale["status"] == {"replicas": 1, "selector": "app=w"}
    scale["spec"]["replicas"] = 5
    status, out, _ = await http.put(f"{widgets.collection}/w/scale", scale)
    assert status == 200 and out["spec"]["replicas"] == 5
    _, obj, _ = await http.get(f"{widgets.collection}/w")
    assert obj["spec"]["replicas"] == 5 and obj["metadata"]["generation"] == 2
    status, out, _ = await http.patch(f"{widgets.collection}/w/scale", {"spec": {"replicas": 7}})
    assert status == 200 and out["spec"]["replicas"] == 7
    scale["spec"]["replicas"] = 1  # stale resourceVersion
    status, out, _ = await http.put(f"{widgets.collection}/w/scale", scale)
    assert status == 409


async def test_custom_objects_scale_via_client(
    http: Http, custom: client.CustomObjectsApi, widgets: WidgetKind
) -> None:
    await http.post(widgets.collection, widgets.obj("w"))
    out = await custom.patch_namespaced_custom_object_scale(
        widgets.group,
        "v1",
        widgets.namespace,
        widgets.plural,
        "w",
        {"spec": {"replicas": 4}},
        _content_type="application/merge-patch+json",
    )
    assert out["spec"]["replicas"] == 4


async def test_deployment_scale(api: client.ApiClient, ns: NS) -> None:
    apps = client.AppsV1Api(api)
    dep = {
        "metadata": {"name": "d"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "d"}},
            "template": {
                "metadata": {"labels": {"app": "d"}},
                "spec": {"containers": [{"name": "c", "image": "i"}]},
            },
        },
    }
    await apps.create_namespaced_deployment(ns.name, dep)
    scale = await apps.read_namespaced_deployment_scale("d", ns.name)
    assert scale.spec.replicas == 1 and scale.status.selector == "app=d"
    await apps.patch_namespaced_deployment_scale("d", ns.name, {"spec": {"replicas": 3}})
    got = await apps.read_namespaced_deployment("d", ns.name)
    assert got.spec.replicas == 3


async def test_json_patch_with_object_body_is_400(http: Http, ns: NS) -> None:
    await http.post(ns.pods, pod("jp"))
    status, body, _ = await http.patch(
        f"{ns.pods}/jp", {"metadata": {}}, content_type="application/json-patch+json"
    )
    assert status == 400 and body["reason"] == "BadRequest"


async def test_scale_404_for_kind_without_scale(http: Http, ns: NS) -> None:
    await http.post(ns.pods, pod("p"))
    status, _, _ = await http.get(f"{ns.pods}/p/scale")
    assert status == 404
