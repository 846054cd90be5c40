"""CustomResourceDefinitions: establishing, schema defaulting/pruning/validation, CEL, versions."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from .helpers import TFJOB_CRD, WIDGETS, Http, eventually, install_widget_crd, widget

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


async def test_crd_is_established_with_accepted_names(http: Http) -> None:
    crd = await install_widget_crd(http)
    conds = {c["type"]: c for c in crd["status"]["conditions"]}
    assert conds["NamesAccepted"]["status"] == "True" and conds["NamesAccepted"]["reason"] == "NoConflicts"
    assert (
        conds["Established"]["status"] == "True" and conds["Established"]["reason"] == "InitialNamesAccepted"
    )
    assert crd["status"]["acceptedNames"]["kind"] == "Widget"
    assert crd["status"]["acceptedNames"]["listKind"] == "WidgetList"
    assert crd["status"]["storedVersions"] == ["v1"]
    assert crd["spec"]["conversion"] == {"strategy": "None"}


async def test_crd_via_apiextensions_client(api: client.ApiClient) -> None:
    ext = client.ApiextensionsV1Api(api)
    created = await ext.create_custom_resource_definition(TFJOB_CRD)
    assert created.metadata.name == "widgets.example.kubetrain.io"
    got = await ext.read_custom_resource_definition("widgets.example.kubetrain.io")
    assert any(c.type == "Established" and c.status == "True" for c in got.status.conditions)


async def test_invalid_crd_is_rejected(http: Http) -> None:
    bad = copy.deepcopy(TFJOB_CRD)
    bad["metadata"]["name"] = "wrong.example.kubetrain.io"
    status, body, _ = await http.post(CRDS, bad)
    assert status == 422
    assert body["message"] == (
        'CustomResourceDefinition.apiextensions.k8s.io "wrong.example.kubetrain.io" is '
        'invalid: metadata.name: Invalid value: "wrong.example.kubetrain.io": '
        'must be spec.names.plural+"."+spec.group'
    )


async def test_custom_objects_crud_like_the_training_sdk(http: Http, custom: client.CustomObjectsApi) -> None:
    await install_widget_crd(http)
    group, version, plural = "example.kubetrain.io", "v1", "widgets"
    created = await custom.create_namespaced_custom_object(group, version, "default", plural, widget("w1"))
    assert created["metadata"]["uid"] and created["kind"] == "Widget"
    got = await custom.get_namespaced_custom_object(group, version, "default", plural, "w1")
    assert got["spec"]["size"] == 2
    listed = await custom.list_namespaced_custom_object(group, version, "default", plural)
    assert listed["kind"] == "WidgetList" and [i["metadata"]["name"] for i in listed["items"]] == ["w1"]
    assert listed["items"][0]["kind"] == "Widget"
    got["spec"]["size"] = 5
    patched = await custom.patch_namespaced_custom_object(
        group, version, "default", plural, "w1", got, _content_type="application/merge-patch+json"
    )
    assert patched["spec"]["size"] == 5
    await custom.patch_namespaced_custom_object_status(
        group,
        version,
        "default",
        plural,
        "w1",
        {"status": {"phase": "Done"}},
        _content_type="application/merge-patch+json",
    )
    await custom.delete_namespaced_custom_object(group, version, "default", plural, "w1")
    with pytest.raises(ApiException) as err:
        await custom.get_namespaced_custom_object(group, version, "default", plural, "w1")
    assert err.value.status == 404


async def test_defaulting_at_every_depth(http: Http) -> None:
    await install_widget_crd(http)
    status, body, _ = await http.post(WIDGETS, widget("d"))
    assert status == 201, body
    assert body["spec"]["replicas"] == 1 and body["spec"]["mode"] == "fast"
    assert body["spec"]["policy"] == {"backoff": 3}
    _, body, _ = await http.put(f"{WIDGETS}/d", {**body, "spec": {"size": 3, "replicas": None}})
    assert body["spec"]["replicas"] == 1  # null of a non-nullable field is dropped, then defaulted


async def test_pruning_respects_preserve_unknown_and_embedded(http: Http) -> None:
    await install_widget_crd(http)
    obj = widget(
        "p",
        unknown="drop me",
        template={"anything": {"goes": True}},
        embedded={
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "x", "bogus": 1},
            "spec": {},
            "extra": 1,
        },
    )
    obj["topLevelJunk"] = 1
    obj["metadata"]["notAMetaField"] = "x"
    status, body, _ = await http.post(WIDGETS, obj)
    assert status == 201, body
    assert "unknown" not in body["spec"] and "topLevelJunk" not in body
    assert body["spec"]["template"] == {"anything": {"goes": True}}
    assert body["spec"]["embedded"] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "x"},
        "spec": {},
    }
    assert "notAMetaField" not in body["metadata"]


async def test_int_or_string(http: Http) -> None:
    await install_widget_crd(http)
    assert (await http.post(WIDGETS, widget("a", port=80)))[0] == 201
    assert (await http.post(WIDGETS, widget("b", port="http")))[0] == 201
    status, _, _ = await http.post(WIDGETS, widget("c", port=1.5))
    assert status == 422


@pytest.mark.parametrize(
    ("spec", "message", "cause"),
    [
        (
            {"size": "big"},
            'spec.size: Invalid value: "string": spec.size in body must be of type integer: "string"',
            {"reason": "FieldValueTypeInvalid", "field": "spec.size"},
        ),
        (
            {"size": 0},
            "spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1",
            {"reason": "FieldValueInvalid", "field": "spec.size"},
        ),
        (
            {"size": 11},
            "spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10",
            {"reason": "FieldValueInvalid", "field": "spec.size"},
        ),
        (
            {"size": 1, "mode": "medium"},
            'spec.mode: Unsupported value: "medium": supported values: "fast", "slow"',
            {"reason": "FieldValueNotSupported", "field": "spec.mode"},
        ),
        ({}, "spec.size: Required value", {"reason": "FieldValueRequired", "field": "spec.size"}),
    ],
)
async def test_validation_errors(
    http: Http, spec: dict[str, Any], message: str, cause: dict[str, str]
) -> None:
    await install_widget_crd(http)
    obj = widget("v")
    obj["spec"] = spec
    status, body, _ = await http.post(WIDGETS, obj)
    assert status == 422
    assert body["reason"] == "Invalid"
    assert body["message"] == f'Widget.example.kubetrain.io "v" is invalid: {message}'
    assert body["details"]["group"] == "example.kubetrain.io" and body["details"]["kind"] == "Widget"
    assert {k: body["details"]["causes"][0][k] for k in cause} == cause


async def test_multiple_errors_are_aggregated(http: Http) -> None:
    await install_widget_crd(http)
    obj = widget("m")
    obj["spec"] = {"size": 0, "mode": "x"}
    _, body, _ = await http.post(WIDGETS, obj)
    assert body["message"].startswith('Widget.example.kubetrain.io "m" is invalid: [spec.size: ')
    assert len(body["details"]["causes"]) == 2


async def test_cel_self_equals_old_self(http: Http) -> None:
    await install_widget_crd(http)
    await http.post(WIDGETS, widget("c", immutableName="first"))
    status, body, _ = await http.patch(f"{WIDGETS}/c", {"spec": {"immutableName": "second"}})
    assert status == 422
    assert body["message"] == (
        'Widget.example.kubetrain.io "c" is invalid: spec.immutableName: Invalid value: '
        '"string": immutableName is immutable'
    )
    status, _, _ = await http.patch(f"{WIDGETS}/c", {"spec": {"size": 4}})
    assert status == 200
    await http.post(WIDGETS, widget("late"))  # transition rules only apply when the old value exists
    status, _, _ = await http.patch(f"{WIDGETS}/late", {"spec": {"immutableName": "set-later"}})
    assert status == 200


async def test_cluster_scoped_custom_resource(http: Http) -> None:
    crd = copy.deepcopy(TFJOB_CRD)
    crd["metadata"]["name"] = "gadgets.example.kubetrain.io"
    crd["spec"]["scope"] = "Cluster"
    crd["spec"]["names"] = {"plural": "gadgets", "kind": "Gadget"}
    status, _, _ = await http.post(CRDS, crd)
    assert status == 201
    obj = {
        "apiVersion": "example.kubetrain.io/v1",
        "kind": "Gadget",
        "metadata": {"name": "g"},
        "spec": {"size": 1},
    }
    status, body, _ = await http.post("/apis/example.kubetrain.io/v1/gadgets", obj)
    assert status == 201 and "namespace" not in body["metadata"]
    status, _, _ = await http.get("/apis/example.kubetrain.io/v1/namespaces/default/gadgets")
    assert status == 404


async def test_multiple_versions_rewrite_api_version(http: Http) -> None:
    crd = copy.deepcopy(TFJOB_CRD)
    v1 = crd["spec"]["versions"][0]
    v1beta1 = copy.deepcopy(v1)
    v1beta1["name"] = "v1beta1"
    v1beta1["storage"] = False
    crd["spec"]["versions"] = [v1, v1beta1]
    await http.post(CRDS, crd)
    obj = widget("mv")
    obj["apiVersion"] = "example.kubetrain.io/v1beta1"
    status, body, _ = await http.post("/apis/example.kubetrain.io/v1beta1/namespaces/default/widgets", obj)
    assert status == 201 and body["apiVersion"] == "example.kubetrain.io/v1"  # stored at the storage version
    _, got, _ = await http.get("/apis/example.kubetrain.io/v1beta1/namespaces/default/widgets/mv")
    assert got["apiVersion"] == "example.kubetrain.io/v1beta1"
    _, got, _ = await http.get(f"{WIDGETS}/mv")
    assert got["apiVersion"] == "example.kubetrain.io/v1"
    _, listed, _ = await http.get("/apis/example.kubetrain.io/v1beta1/namespaces/default/widgets")
    assert listed["apiVersion"] == "example.kubetrain.io/v1beta1"
    assert listed["items"][0]["apiVersion"] == "example.kubetrain.io/v1beta1"
    w = await http.watch("/apis/example.kubetrain.io/v1beta1/namespaces/default/widgets", {})
    try:
        (ev,) = await w.take(1)
        assert ev["object"]["apiVersion"] == "example.kubetrain.io/v1beta1"
        await http.patch(f"{WIDGETS}/mv", {"spec": {"size": 3}})
        (ev,) = await w.take(1)
        assert ev["type"] == "MODIFIED" and ev["object"]["apiVersion"] == "example.kubetrain.io/v1beta1"
    finally:
        await w.close()


async def test_crd_update_adds_default_visible_on_existing_objects(http: Http) -> None:
    crd = await install_widget_crd(http)
    await http.post(WIDGETS, widget("old"))
    props = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    props["color"] = {"type": "string", "default": "blue"}
    status, updated, _ = await http.put(f"{CRDS}/widgets.example.kubetrain.io", crd)
    assert status == 200, updated
    assert updated["metadata"]["generation"] == 2
    _, got, _ = await http.get(f"{WIDGETS}/old")
    assert got["spec"]["color"] == "blue"


async def test_deleting_crd_removes_kind_and_objects(http: Http) -> None:
    await install_widget_crd(http)
    await http.post(WIDGETS, widget("a"))
    await http.post(WIDGETS, widget("b"))
    status, body, _ = await http.delete(f"{CRDS}/widgets.example.kubetrain.io")
    assert status == 200

    async def gone() -> bool:
        s, _, _ = await http.get(f"{CRDS}/widgets.example.kubetrain.io")
        return s == 404

    await eventually(gone)
    status, body, _ = await http.get(WIDGETS)
    assert status == 404
    status, _, _ = await http.get("/apis/example.kubetrain.io/v1")
    assert status == 404
    await install_widget_crd(http)  # reinstalling starts empty
    _, body, _ = await http.get(WIDGETS)
    assert body["items"] == []


async def test_crd_deletion_waits_for_instance_finalizers(http: Http) -> None:
    await install_widget_crd(http)
    held = widget("held")
    held["metadata"]["finalizers"] = ["example.com/hold"]
    await http.post(WIDGETS, held)
    await http.delete(f"{CRDS}/widgets.example.kubetrain.io")

    async def terminating() -> bool:
        _, crd, _ = await http.get(f"{CRDS}/widgets.example.kubetrain.io")
        return any(c["type"] == "Terminating" for c in crd["status"]["conditions"])

    await eventually(terminating)
    status, body, _ = await http.post(WIDGETS, widget("new"))
    assert status == 405 and body["reason"] == "MethodNotAllowed"
    await http.patch(f"{WIDGETS}/held", {"metadata": {"finalizers": None}})

    async def gone() -> bool:
        s, _, _ = await http.get(f"{CRDS}/widgets.example.kubetrain.io")
        return s == 404

    await eventually(gone)


async def test_kubeflow_style_crd_with_status_and_scale(http: Http, custom: client.CustomObjectsApi) -> None:
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "pytorchjobs.kubeflow.org"},
        "spec": {
            "group": "kubeflow.org",
            "scope": "Namespaced",
            "names": {"kind": "PyTorchJob", "plural": "pytorchjobs", "singular": "pytorchjob"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "subresources": {
                        "status": {},
                        "scale": {
                            "specReplicasPath": ".spec.pytorchReplicaSpecs.Worker.replicas",
                            "statusReplicasPath": ".status.replicaStatuses.Worker.active",
                            "labelSelectorPath": ".status.replicaStatuses.Worker.selector",
                        },
                    },
                    "schema": {
                        "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                    },
                }
            ],
        },
    }
    status, _, _ = await http.post(CRDS, crd)
    assert status == 201
    job = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "pt"},
        "spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": 2, "template": {}}}},
    }
    await custom.create_namespaced_custom_object("kubeflow.org", "v1", "default", "pytorchjobs", job)
    scale = await custom.get_namespaced_custom_object_scale(
        "kubeflow.org", "v1", "default", "pytorchjobs", "pt"
    )
    assert scale["spec"]["replicas"] == 2


async def test_webhook_conversion_uses_the_registered_converter() -> None:
    from kubetrain.embedded.apiserver import EmbeddedAPIServer

    def convert(obj: dict[str, Any], api_version: str) -> dict[str, Any]:
        spec = dict(obj.get("spec") or {})
        if api_version.endswith("/v2"):
            spec["sizeV2"] = spec.pop("size", None)
        else:
            spec["size"] = spec.pop("sizeV2", None)
        return {**obj, "apiVersion": api_version, "spec": spec}

    crd = copy.deepcopy(TFJOB_CRD)
    v1 = crd["spec"]["versions"][0]
    v2 = {
        "name": "v2",
        "served": True,
        "storage": False,
        "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
    }
    crd["spec"]["versions"] = [v1, v2]
    crd["spec"]["conversion"] = {"strategy": "Webhook"}
    srv = EmbeddedAPIServer(converters={"Webhook": convert})
    await srv.start()
    try:
        import aiohttp

        async with aiohttp.ClientSession() as session:
            http = Http(srv.url, session)
            assert (await http.post(CRDS, crd))[0] == 201
            assert (await http.post(WIDGETS, widget("w", replicas=1)))[0] == 201
            status, body, _ = await http.get("/apis/example.kubetrain.io/v2/namespaces/default/widgets/w")
            assert status == 200 and body["spec"]["sizeV2"] == 2 and "size" not in body["spec"]
    finally:
        await srv.stop()
