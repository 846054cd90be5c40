"""The four patch content types, with kube-apiserver's semantics and errors."""

from __future__ import annotations

from typing import Any

from kubernetes_asyncio import client

from .helpers import NS, Http, WidgetKind, configmap, pod

SMP = "application/strategic-merge-patch+json"


async def test_merge_patch(http: Http, ns: NS) -> None:
    await http.post(ns.configmaps, configmap("m", {"a": "1", "b": "2"}, labels={"x": "1"}))
    status, body, _ = await http.patch(
        f"{ns.configmaps}/m", {"data": {"a": "9", "b": None}, "metadata": {"labels": {"y": "2"}}}
    )
    assert status == 200
    assert body["data"] == {"a": "9"}
    assert body["metadata"]["labels"] == {"x": "1", "y": "2"}


async def test_merge_patch_with_stale_resource_version_conflicts(http: Http, ns: NS) -> None:
    _, created, _ = await http.post(ns.configmaps, configmap("rv", {"a": "1"}))
    await http.patch(f"{ns.configmaps}/rv", {"data": {"a": "2"}})
    status, body, _ = await http.patch(
        f"{ns.configmaps}/rv",
        {"metadata": {"resourceVersion": created["metadata"]["resourceVersion"]}, "data": {"a": "3"}},
    )
    assert status == 409 and body["reason"] == "Conflict"


async def test_json_patch_ops(http: Http, ns: NS) -> None:
    await http.post(ns.configmaps, configmap("j", {"a": "1", "b": "2"}))
    ops = [
        {"op": "test", "path": "/data/a", "value": "1"},
        {"op": "replace", "path": "/data/a", "value": "10"},
        {"op": "add", "path": "/data/c", "value": "3"},
        {"op": "remove", "path": "/data/b"},
        {"op": "copy", "from": "/data/c", "path": "/data/d"},
        {"op": "move", "from": "/data/d", "path": "/data/e"},
        {"op": "add", "path": "/metadata/annotations", "value": {"a.io/k": "v"}},
    ]
    status, body, _ = await http.patch(f"{ns.configmaps}/j", ops, content_type="application/json-patch+json")
    assert status == 200, body
    assert body["data"] == {"a": "10", "c": "3", "e": "3"}
    status, body, _ = await http.patch(
        f"{ns.configmaps}/j",
        [{"op": "remove", "path": "/metadata/annotations/a.io~1k"}],
        content_type="application/json-patch+json",
    )
    assert status == 200 and "annotations" not in body["metadata"]


async def test_json_patch_failed_test_op_is_422_and_changes_nothing(http: Http, ns: NS) -> None:
    await http.post(ns.configmaps, configmap("t", {"a": "1"}))
    ops = [
        {"op": "replace", "path": "/data/a", "value": "2"},
        {"op": "test", "path": "/data/a", "value": "1"},
    ]
    status, body, _ = await http.patch(f"{ns.configmaps}/t", ops, content_type="application/json-patch+json")
    assert status == 422
    assert body["reason"] == "Invalid"
    assert body["message"] == "the server rejected our request due to an error in our request"
    _, body, _ = await http.get(f"{ns.configmaps}/t")
    assert body["data"] == {"a": "1"}


async def test_json_patch_list_append(http: Http, ns: NS) -> None:
    await http.post(ns.pods, pod("jp"))
    ops = [
        {"op": "add", "path": "/metadata/finalizers", "value": ["a/b"]},
        {"op": "add", "path": "/metadata/finalizers/-", "value": "c/d"},
    ]
    _, body, _ = await http.patch(f"{ns.pods}/jp", ops, content_type="application/json-patch+json")
    assert body["metadata"]["finalizers"] == ["a/b", "c/d"]


def deployment(name: str, containers: list[dict[str, Any]], **meta: Any) -> dict[str, Any]:
    """A Deployment with no replicas: its pod template takes any strategic merge patch."""
    return {
        "metadata": {"name": name, **meta},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": containers, "volumes": [{"name": "v", "emptyDir": {}}]},
            },
        },
    }


async def test_strategic_merge_containers_by_name(api: client.ApiClient, ns: NS) -> None:
    apps = client.AppsV1Api(api)
    containers = [
        {
            "name": "a",
            "image": "img:1",
            "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}],
            "ports": [{"containerPort": 80, "name": "http"}],
            "volumeMounts": [{"name": "v", "mountPath": "/v"}],
        },
        {"name": "b", "image": "img:1"},
    ]
    await apps.create_namespaced_deployment(ns.name, deployment("smp", containers))
    patch = {
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {"name": "b", "image": "img:2"},
                        {
                            "name": "a",
                            "env": [{"name": "Y", "value": "20"}, {"name": "Z", "value": "3"}],
                            "ports": [{"containerPort": 8080, "name": "alt"}],
                        },
                        {"name": "c", "image": "new:1"},
                    ]
                }
            }
        }
    }
    patched = await apps.patch_namespaced_deployment("smp", ns.name, patch)
    spec = patched.spec.template.spec
    by_name = {c.name: c for c in spec.containers}
    # normalizeElementOrder: patch items in patch order, server-only items where the server had them
    assert [c.name for c in spec.containers] == ["b", "a", "c"]
    assert by_name["b"].image == "img:2"
    assert by_name["a"].image == "img:1"
    assert [(e.name, e.value) for e in by_name["a"].env] == [("X", "1"), ("Y", "20"), ("Z", "3")]
    assert [p.container_port for p in by_name["a"].ports] == [8080, 80]
    assert [m.mount_path for m in by_name["a"].volume_mounts] == ["/v"]


async def test_strategic_merge_directives(http: Http, ns: NS) -> None:
    containers = [
        {"name": "a", "image": "i", "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]},
        {"name": "b", "image": "i"},
    ]
    deployments = ns.path("deployments", "apps/v1")
    await http.post(deployments, deployment("dir", containers, finalizers=["x/y"]))
    patch = {
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {"name": "b", "$patch": "delete"},
                        {"name": "a", "env": [{"name": "X", "$patch": "delete"}]},
                    ]
                }
            }
        },
        "metadata": {"finalizers": ["z/w"], "$deleteFromPrimitiveList/finalizers": ["x/y"]},
    }
    status, body, _ = await http.patch(f"{deployments}/dir", patch, content_type=SMP)
    assert status == 200, body
    got = body["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in got] == ["a"]
    assert got[0]["env"] == [{"name": "Y", "value": "2"}]
    assert body["metadata"]["finalizers"] == ["z/w"]
    await http.patch(f"{deployments}/dir", {"metadata": {"finalizers": None}})


async def test_strategic_merge_primitive_list_order(http: Http, ns: NS) -> None:
    await http.post(ns.configmaps, configmap("fin", finalizers=["a.io/x", "b.io/y"]))
    patch = {"metadata": {"finalizers": ["c.io/z", "b.io/y"]}}
    status, body, _ = await http.patch(f"{ns.configmaps}/fin", patch, content_type=SMP)
    assert status == 200 and body["metadata"]["finalizers"] == ["c.io/z", "a.io/x", "b.io/y"]
    await http.patch(f"{ns.configmaps}/fin", {"metadata": {"finalizers": None}})


async def test_strategic_merge_replace_and_retain_keys(http: Http, ns: NS) -> None:
    await http.post(ns.pods, pod("rk", labels={"a": "1", "b": "2"}))
    patch = {"metadata": {"labels": {"$patch": "replace", "c": "3"}}}
    _, body, _ = await http.patch(
        f"{ns.pods}/rk", patch, content_type="application/strategic-merge-patch+json"
    )
    assert body["metadata"]["labels"] == {"c": "3"}
    patch = {"metadata": {"annotations": {"x": "1", "y": "2"}}}
    await http.patch(f"{ns.pods}/rk", patch, content_type="application/strategic-merge-patch+json")
    patch = {"metadata": {"annotations": {"$retainKeys": ["y"], "y": "3"}}}
    _, body, _ = await http.patch(
        f"{ns.pods}/rk", patch, content_type="application/strategic-merge-patch+json"
    )
    assert body["metadata"]["annotations"] == {"y": "3"}


async def test_strategic_merge_owner_references_by_uid(http: Http, ns: NS) -> None:
    _, o1, _ = await http.post(ns.configmaps, configmap("o1"))
    _, o2, _ = await http.post(ns.configmaps, configmap("o2"))
    u1, u2 = o1["metadata"]["uid"], o2["metadata"]["uid"]
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "o1", "uid": u1}
    await http.post(ns.configmaps, configmap("owner-test", ownerReferences=[ref]))
    patch = {"metadata": {"ownerReferences": [{**ref, "uid": u2, "name": "o2"}]}}
    _, body, _ = await http.patch(
        f"{ns.configmaps}/owner-test", patch, content_type="application/strategic-merge-patch+json"
    )
    assert [r["uid"] for r in body["metadata"]["ownerReferences"]] == [u2, u1]  # new items first


async def test_strategic_merge_on_custom_resource_is_415(http: Http, widgets: WidgetKind) -> None:
    await http.post(widgets.collection, widgets.obj("w"))
    status, body, _ = await http.patch(
        f"{widgets.collection}/w",
        {"spec": {"size": 3}},
        content_type="application/strategic-merge-patch+json",
    )
    assert status == 415
    assert body["reason"] == "UnsupportedMediaType"
    assert body["message"] == (
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json-patch+json, application/merge-patch+json, "
        "application/apply-patch+yaml"
    )


async def test_unknown_patch_type_is_415(http: Http, ns: NS) -> None:
    """The router refuses a media type no patch route consumes, with go-restful's message."""
    await http.post(ns.configmaps, configmap("u"))
    status, body, _ = await http.patch(f"{ns.configmaps}/u", {"data": {}}, content_type="application/json")
    assert status == 415 and body["reason"] == "UnsupportedMediaType"
    assert body["message"] == "415: Unsupported Media Type" and body["details"] == {}


async def test_patch_of_missing_object_is_404(http: Http, ns: NS) -> None:
    status, body, _ = await http.patch(f"{ns.configmaps}/none", {"data": {}})
    assert status == 404 and body["message"] == 'configmaps "none" not found'


APPLY = "application/apply-patch+yaml"


async def test_server_side_apply_create_then_update(http: Http, ns: NS) -> None:
    manifest = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: ssa
  labels: {team: a}
data:
  key: one
"""
    status, body, _ = await http.patch(
        f"{ns.configmaps}/ssa", manifest, content_type=APPLY, params={"fieldManager": "me"}
    )
    assert status == 201, body
    assert body["data"] == {"key": "one"}
    managed = body["metadata"]["managedFields"]
    assert managed[0]["manager"] == "me" and managed[0]["operation"] == "Apply"
    assert managed[0]["fieldsType"] == "FieldsV1"
    assert managed[0]["fieldsV1"] == {"f:data": {"f:key": {}}, "f:metadata": {"f:labels": {"f:team": {}}}}
    update = manifest.replace("one", "two") + "  other: x\n"
    status, body, _ = await http.patch(
        f"{ns.configmaps}/ssa", update, content_type=APPLY, params={"fieldManager": "me", "force": "true"}
    )
    assert status == 200
    assert body["data"] == {"key": "two", "other": "x"}
    assert len(body["metadata"]["managedFields"]) == 1


async def test_server_side_apply_requires_field_manager(http: Http, ns: NS) -> None:
    status, body, _ = await http.patch(
        f"{ns.configmaps}/ssa", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ssa}\n", content_type=APPLY
    )
    assert status == 422 and body["reason"] == "Invalid"
    assert body["message"] == (
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch'
    )


async def test_server_side_apply_merges_containers_by_name(http: Http, ns: NS) -> None:
    containers = [{"name": "a", "image": "i:1"}, {"name": "b", "image": "i:1"}]
    await http.post(ns.pods, pod("sp", containers=containers))
    manifest = (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: sp}\nspec:\n  containers:\n  - {name: b, image: 'i:2'}\n"
    )
    status, body, _ = await http.patch(
        f"{ns.pods}/sp", manifest, content_type=APPLY, params={"fieldManager": "m", "force": "true"}
    )
    assert status == 200, body
    assert [(c["name"], c["image"]) for c in body["spec"]["containers"]] == [("a", "i:1"), ("b", "i:2")]
    fields = body["metadata"]["managedFields"][0]["fieldsV1"]
    assert 'k:{"name":"b"}' in fields["f:spec"]["f:containers"]


async def test_server_side_apply_on_custom_resource(http: Http, widgets: WidgetKind) -> None:
    manifest = f"apiVersion: {widgets.group}/v1\nkind: Widget\nmetadata: {{name: w}}\nspec: {{size: 4}}\n"
    status, body, _ = await http.patch(
        f"{widgets.collection}/w", manifest, content_type=APPLY, params={"fieldManager": "kubectl"}
    )
    assert status == 201, body
    assert body["spec"]["size"] == 4 and body["spec"]["replicas"] == 1


async def test_patch_via_typed_client(core: client.CoreV1Api, ns: NS) -> None:
    await core.create_namespaced_config_map(ns.name, configmap("typed", {"a": "1"}))
    out = await core.patch_namespaced_config_map("typed", ns.name, {"data": {"b": "2"}})
    assert out.data == {"a": "1", "b": "2"}


async def test_pod_spec_is_immutable_but_images(http: Http, ns: NS) -> None:
    await http.post(ns.pods, pod("imm"))
    status, body, _ = await http.patch(f"{ns.pods}/imm", {"spec": {"restartPolicy": "Never"}})
    assert status == 422 and body["reason"] == "Invalid"
    assert body["message"].startswith(
        'Pod "imm" is invalid: spec: Forbidden: pod updates may not change fields other than '
        "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,"
    )
    (cause,) = body["details"]["causes"]
    assert cause["reason"] == "FieldValueForbidden" and cause["field"] == "spec"
    patch = {"spec": {"containers": [{"name": "main", "image": "busybox:1.37"}]}}
    status, body, _ = await http.patch(f"{ns.pods}/imm", patch, content_type=SMP)
    assert status == 200 and body["spec"]["containers"][0]["image"] == "busybox:1.37"
    patch = {"spec": {"containers": [{"name": "extra", "image": "busybox"}]}}
    status, body, _ = await http.patch(f"{ns.pods}/imm", patch, content_type=SMP)
    assert status == 422
    assert body["message"] == (
        'Pod "imm" is invalid: spec.containers: Forbidden: pod updates may not add or remove containers'
    )


async def test_service_cluster_ip_is_immutable(http: Http, ns: NS) -> None:
    _, svc, _ = await http.post(
        ns.path("services"), {"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}}
    )
    ip = svc["spec"]["clusterIP"]
    assert svc["spec"]["clusterIPs"] == [ip]
    status, body, _ = await http.patch(f"{ns.path('services')}/s", {"spec": {"clusterIP": "10.96.0.99"}})
    assert status == 422
    assert body["message"] == (
        'Service "s" is invalid: spec.clusterIPs[0]: Invalid value: ["10.96.0.99"]: may not change once set'
    )
    status, body, _ = await http.patch(f"{ns.path('services')}/s", {"metadata": {"labels": {"a": "b"}}})
    assert status == 200 and body["spec"]["clusterIP"] == ip


async def test_adding_finalizers_while_deleting(http: Http, ns: NS) -> None:
    """The cause is reported twice (metadata is validated twice on update), the message once."""
    await http.post(ns.configmaps, configmap("f2", finalizers=["example.com/hold"]))
    await http.delete(f"{ns.configmaps}/f2")
    patch = {"metadata": {"finalizers": ["example.com/hold", "a.io/x", "b.io/y"]}}
    status, body, _ = await http.patch(f"{ns.configmaps}/f2", patch)
    assert status == 422
    detail = (
        "Forbidden: no new finalizers can be added if the object is being deleted, "
        'found new finalizers []string{"a.io/x", "b.io/y"}'
    )
    assert body["message"] == f'ConfigMap "f2" is invalid: metadata.finalizers: {detail}'
    cause = {"reason": "FieldValueForbidden", "message": detail, "field": "metadata.finalizers"}
    assert body["details"]["causes"] == [cause, cause]
    await http.patch(f"{ns.configmaps}/f2", {"metadata": {"finalizers": None}})
