"""CustomResourceDefinitions: establishing, schema defaulting/pruning/validation, CEL, versions."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from .helpers import (
    CEL_SKIPPED,
    CRDS,
    NS,
    WIDGET_VERSION,
    Cleanup,
    Http,
    WidgetKind,
    eventually,
    install_widget_crd,
    wait_served,
)


async def test_crd_is_established_with_accepted_names(http: Http, widget_kind: WidgetKind) -> None:
    status, _, _ = await http.post(CRDS, widget_kind.crd())
    assert status == 201
    crd = await wait_served(http, widget_kind)
    conds = {c["type"]: c for c in crd["status"]["conditions"]}
    assert conds["NamesAccepted"]["status"] == "True" and conds["NamesAccepted"]["reason"] == "NoConflicts"
    assert (
        conds["Established"]["status"] == "True" and conds["Established"]["reason"] == "InitialNamesAccepted"
    )
    assert crd["status"]["acceptedNames"]["kind"] == "Widget"
    assert crd["status"]["acceptedNames"]["listKind"] == "WidgetList"
    assert crd["status"]["storedVersions"] == ["v1"]
    assert crd["spec"]["conversion"] == {"strategy": "None"}


@pytest.mark.deliberate_difference(
    "the embedded server establishes a CRD while creating it: its create response already has the names"
)
async def test_crd_status_is_set_by_a_controller_after_create(http: Http, widget_kind: WidgetKind) -> None:
    status, created, _ = await http.post(CRDS, widget_kind.crd())
    assert status == 201
    assert created["status"]["acceptedNames"] == {"plural": "", "kind": ""}
    assert created["status"].get("conditions") is None


async def test_crd_via_apiextensions_client(
    api: client.ApiClient, http: Http, widget_kind: WidgetKind
) -> None:
    ext = client.ApiextensionsV1Api(api)
    created = await ext.create_custom_resource_definition(widget_kind.crd())
    assert created.metadata.name == widget_kind.crd_name
    await wait_served(http, widget_kind)
    got = await ext.read_custom_resource_definition(widget_kind.crd_name)
    assert any(c.type == "Established" and c.status == "True" for c in got.status.conditions)


async def test_invalid_crd_is_rejected(http: Http, widget_kind: WidgetKind) -> None:
    bad = widget_kind.crd()
    wrong = f"wrong.{widget_kind.group}"
    bad["metadata"]["name"] = wrong
    status, body, _ = await http.post(CRDS, bad)
    assert status == 422
    assert body["message"] == (
        f'CustomResourceDefinition.apiextensions.k8s.io "{wrong}" is '
        f'invalid: metadata.name: Invalid value: "{wrong}": '
        'must be spec.names.plural+"."+spec.group'
    )


async def test_custom_objects_crud_like_the_training_sdk(
    http: Http, custom: client.CustomObjectsApi, widgets: WidgetKind
) -> None:
    group, version, plural = widgets.group, "v1", "widgets"
    created = await custom.create_namespaced_custom_object(
        group, version, widgets.namespace, plural, widgets.obj("w1")
    )
    assert created["metadata"]["uid"] and created["kind"] == "Widget"
    got = await custom.get_namespaced_custom_object(group, version, widgets.namespace, plural, "w1")
    assert got["spec"]["size"] == 2
    listed = await custom.list_namespaced_custom_object(group, version, widgets.namespace, plural)
    assert listed["kind"] == "WidgetList" and [i["metadata"]["name"] for i in listed["items"]] == ["w1"]
    assert listed["items"][0]["kind"] == "Widget"
    got["spec"]["size"] = 5
    patched = await custom.patch_namespaced_custom_object(
        group, version, widgets.namespace, plural, "w1", got, _content_type="application/merge-patch+json"
    )
    assert patched["spec"]["size"] == 5
    await custom.patch_namespaced_custom_object_status(
        group,
        version,
        widgets.namespace,
        plural,
        "w1",
        {"status": {"phase": "Done"}},
        _content_type="application/merge-patch+json",
    )
    await custom.delete_namespaced_custom_object(group, version, widgets.namespace, plural, "w1")
    with pytest.raises(ApiException) as err:
        await custom.get_namespaced_custom_object(group, version, widgets.namespace, plural, "w1")
    assert err.value.status == 404


async def test_defaulting_at_every_depth(http: Http, widgets: WidgetKind) -> None:
    status, body, _ = await http.post(widgets.collection, widgets.obj("d"))
    assert status == 201, body
    assert body["spec"]["replicas"] == 1 and body["spec"]["mode"] == "fast"
    assert body["spec"]["policy"] == {"backoff": 3}
    _, body, _ = await http.put(f"{widgets.collection}/d", {**body, "spec": {"size": 3, "replicas": None}})
    assert body["spec"]["replicas"] == 1  # null of a non-nullable field is dropped, then defaulted


async def test_pruning_respects_preserve_unknown_and_embedded(http: Http, widgets: WidgetKind) -> None:
    obj = widgets.obj(
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
    status, body, _ = await http.post(widgets.collection, obj)
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


async def test_int_or_string(http: Http, widgets: WidgetKind) -> None:
    assert (await http.post(widgets.collection, widgets.obj("a", port=80)))[0] == 201
    assert (await http.post(widgets.collection, widgets.obj("b", port="http")))[0] == 201
    status, _, _ = await http.post(widgets.collection, widgets.obj("c", port=1.5))
    assert status == 422


async def test_integral_floats_are_integers_and_read_back_as_such(http: Http, widgets: WidgetKind) -> None:
    """kube-openapi takes 1.0 where a schema asks for an integer (isFloatInt), and what Go stores
    as JSON (`1`) reads back as an integer everywhere in the object: the Kubeflow SDK sends a
    TrainJob's resourcesPerNode as floats (`cpu: 1.0`, quantities are int-or-string)."""
    obj = widgets.obj("f", size=2.0, port=80.0, template={"ratio": 3.0, "half": 0.5, "list": [4.0]})
    status, created, _ = await http.post(widgets.collection, obj)
    assert status == 201, created
    _, stored, _ = await http.get(f"{widgets.collection}/f")
    for body in (created, stored):
        spec = body["spec"]
        assert (spec["size"], spec["port"], spec["template"]) == (
            2,
            80,
            {"ratio": 3, "half": 0.5, "list": [4]},
        )
        assert [type(v) for v in (spec["size"], spec["port"], spec["template"]["list"][0])] == [int] * 3

    status, body, _ = await http.post(widgets.collection, widgets.obj("g", size=2.5))
    assert status == 422 and 'spec.size in body must be of type integer: "number"' in body["message"]
    status, body, _ = await http.post(widgets.collection, widgets.obj("h", mode=1.0))
    assert status == 422 and 'spec.mode in body must be of type string: "number"' in body["message"]


async def test_scale_paths_take_no_float(http: Http, widgets: WidgetKind) -> None:
    """The scale subresource's paths are read as int64 and string after the schema (apiextensions'
    ValidateScaleSpec/ValidateScaleStatus): there 3.0 is still a float64, and refused."""
    status, body, _ = await http.post(widgets.collection, widgets.obj("s", replicas=3.0))
    assert status == 422
    assert body["message"] == (
        f'{widgets.qualified} "s" is invalid: .spec.replicas: Invalid value: 0: '
        ".spec.replicas accessor error: 3 is of the type float64, expected int64"
    )
    detail = ".spec.replicas accessor error: 3 is of the type float64, expected int64"
    assert body["details"]["causes"] == [
        {"reason": "FieldValueInvalid", "message": f"Invalid value: 0: {detail}", "field": ".spec.replicas"}
    ]
    assert (await http.post(widgets.collection, widgets.obj("s", replicas=3)))[0] == 201
    status, body, _ = await http.patch(f"{widgets.collection}/s/status", {"status": {"replicas": 2.0}})
    assert status == 422
    assert ".status.replicas accessor error: 2 is of the type float64, expected int64" in body["message"]
    status, body, _ = await http.patch(f"{widgets.collection}/s/status", {"status": {"replicas": -1}})
    assert status == 422
    assert body["message"].endswith(".status.replicas: Invalid value: -1: should be a non-negative integer")
    status, body, _ = await http.patch(
        f"{widgets.collection}/s/status", {"status": {"replicas": 2, "selector": "app=w"}}
    )
    assert status == 200 and body["status"] == {"replicas": 2, "selector": "app=w"}


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
    http: Http, spec: dict[str, Any], message: str, cause: dict[str, str], widgets: WidgetKind
) -> None:
    obj = widgets.obj("v")
    obj["spec"] = spec
    status, body, _ = await http.post(widgets.collection, obj)
    assert status == 422
    assert body["reason"] == "Invalid"
    assert body["details"]["group"] == widgets.group and body["details"]["kind"] == "Widget"
    assert {k: body["details"]["causes"][0][k] for k in cause} == cause
    if cause["reason"] == "FieldValueInvalid":  # not a blocking error: the CEL rules ran
        assert body["message"] == f'{widgets.qualified} "v" is invalid: {message}'
        return
    # a blocking error kept the CRD's x-kubernetes-validations rule from running: one more cause
    assert body["message"] == f'{widgets.qualified} "v" is invalid: [{message}, {CEL_SKIPPED}]'
    assert body["details"]["causes"][1] == {
        "reason": "FieldValueInvalid",
        "message": CEL_SKIPPED.removeprefix("<nil>: "),
        "field": "<nil>",
    }


async def test_multiple_errors_are_aggregated(http: Http, widgets: WidgetKind) -> None:
    obj = widgets.obj("m")
    obj["spec"] = {"size": 0, "mode": "x"}
    _, body, _ = await http.post(widgets.collection, obj)
    assert body["message"].startswith(f'{widgets.qualified} "m" is invalid: [spec.')  # in map order
    assert {c["field"] for c in body["details"]["causes"]} == {"spec.size", "spec.mode", "<nil>"}


async def test_cel_self_equals_old_self(http: Http, widgets: WidgetKind) -> None:
    await http.post(widgets.collection, widgets.obj("c", immutableName="first"))
    status, body, _ = await http.patch(f"{widgets.collection}/c", {"spec": {"immutableName": "second"}})
    assert status == 422
    assert body["message"] == (
        f'{widgets.qualified} "c" is invalid: spec.immutableName: Invalid value: '
        '"second": immutableName is immutable'
    )
    status, _, _ = await http.patch(f"{widgets.collection}/c", {"spec": {"size": 4}})
    assert status == 200
    await http.post(
        widgets.collection, widgets.obj("late")
    )  # transition rules only apply when the old value exists
    status, _, _ = await http.patch(f"{widgets.collection}/late", {"spec": {"immutableName": "set-later"}})
    assert status == 200


async def test_cluster_scoped_custom_resource(
    http: Http, ns: NS, widget_kind: WidgetKind, cleanup: Cleanup
) -> None:
    gadgets = WidgetKind(widget_kind.group, ns.name, plural="gadgets", kind="Gadget", scope="Cluster")
    cleanup(f"{CRDS}/{gadgets.crd_name}")
    await install_widget_crd(http, gadgets)
    status, body, _ = await http.post(gadgets.collection, gadgets.obj("g", size=1))
    assert status == 201 and "namespace" not in body["metadata"]
    status, _, _ = await http.get(f"/apis/{gadgets.group}/v1/namespaces/{ns}/gadgets")
    assert status == 404


async def test_multiple_versions_answer_in_the_requested_version(http: Http, widget_kind: WidgetKind) -> None:
    kind = widget_kind
    v1 = copy.deepcopy(WIDGET_VERSION)
    v1beta1 = {**copy.deepcopy(v1), "name": "v1beta1", "storage": False}
    await install_widget_crd(http, kind, kind.crd([v1, v1beta1]))
    beta = kind.path("v1beta1")
    status, body, _ = await http.post(beta, kind.obj("mv", version="v1beta1"))
    assert status == 201 and body["apiVersion"] == f"{kind.group}/v1beta1"  # the version requested
    _, got, _ = await http.get(f"{beta}/mv")
    assert got["apiVersion"] == f"{kind.group}/v1beta1"
    _, got, _ = await http.get(kind.path("v1", "mv"))
    assert got["apiVersion"] == f"{kind.group}/v1"
    _, listed, _ = await http.get(beta)
    assert listed["apiVersion"] == f"{kind.group}/v1beta1"
    assert listed["items"][0]["apiVersion"] == f"{kind.group}/v1beta1"
    status, body, _ = await http.patch(f"{beta}/mv", {"spec": {"size": 4}})
    assert status == 200 and body["apiVersion"] == f"{kind.group}/v1beta1"
    w = await http.watch(beta, {})
    try:
        (ev,) = await w.take(1)
        assert ev["object"]["apiVersion"] == f"{kind.group}/v1beta1"
        await http.patch(kind.path("v1", "mv"), {"spec": {"size": 3}})
        (ev,) = await w.take(1)
        assert ev["type"] == "MODIFIED" and ev["object"]["apiVersion"] == f"{kind.group}/v1beta1"
    finally:
        await w.close()


async def test_crd_update_adds_default_visible_on_existing_objects(http: Http, widgets: WidgetKind) -> None:
    crd = await wait_served(http, widgets)
    await http.post(widgets.collection, widgets.obj("old"))
    props = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    props["color"] = {"type": "string", "default": "blue"}
    status, updated, _ = await http.put(f"{CRDS}/{widgets.crd_name}", crd)
    assert status == 200, updated["message"]
    assert updated["metadata"]["generation"] == 2

    async def defaulted() -> bool:  # the new schema reaches the serving handler asynchronously
        _, got, _ = await http.get(f"{widgets.collection}/old")
        return bool(got["spec"].get("color") == "blue")

    await eventually(defaulted)


async def test_deleting_crd_removes_kind_and_objects(http: Http, widgets: WidgetKind) -> None:
    await http.post(widgets.collection, widgets.obj("a"))
    await http.post(widgets.collection, widgets.obj("b"))
    status, body, _ = await http.delete(f"{CRDS}/{widgets.crd_name}")
    assert status == 200

    async def gone() -> bool:
        s, _, _ = await http.get(f"{CRDS}/{widgets.crd_name}")
        return s == 404

    await eventually(gone)

    async def not_served() -> bool:  # the handler drops the kind asynchronously
        s1, _, _ = await http.get(widgets.collection)
        s2, _, _ = await http.get(f"/apis/{widgets.group}/v1")
        return s1 == s2 == 404

    await eventually(not_served)
    await install_widget_crd(http, widgets)  # reinstalling starts empty
    _, body, _ = await http.get(widgets.collection)
    assert body["items"] == []


async def test_crd_deletion_waits_for_instance_finalizers(http: Http, widgets: WidgetKind) -> None:
    held = widgets.obj("held")
    held["metadata"]["finalizers"] = ["example.com/hold"]
    await http.post(widgets.collection, held)
    await http.delete(f"{CRDS}/{widgets.crd_name}")

    async def terminating() -> bool:
        _, crd, _ = await http.get(f"{CRDS}/{widgets.crd_name}")
        return any(c["type"] == "Terminating" for c in crd["status"]["conditions"])

    await eventually(terminating)
    status, body, _ = await http.post(widgets.collection, widgets.obj("new"))
    assert status == 403 and body["reason"] == "Forbidden"
    assert body["message"] == (
        f'widgets.{widgets.group} "new" is forbidden: create not allowed while custom resource '
        "definition is terminating"
    )
    await http.patch(f"{widgets.collection}/held", {"metadata": {"finalizers": None}})

    async def gone() -> bool:
        s, _, _ = await http.get(f"{CRDS}/{widgets.crd_name}")
        return s == 404

    await eventually(gone)


async def test_kubeflow_style_crd_with_status_and_scale(
    http: Http, custom: client.CustomObjectsApi, ns: NS, widget_kind: WidgetKind, cleanup: Cleanup
) -> None:
    group = widget_kind.group  # a group of this test's own: the real kubeflow.org may be installed
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"pytorchjobs.{group}"},
        "spec": {
            "group": group,
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
    cleanup(f"{CRDS}/pytorchjobs.{group}")
    await install_widget_crd(http, WidgetKind(group, ns.name, plural="pytorchjobs", kind="PyTorchJob"), crd)
    job = {
        "apiVersion": f"{group}/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "pt"},
        "spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": 2, "template": {}}}},
    }
    await custom.create_namespaced_custom_object(group, "v1", ns.name, "pytorchjobs", job)
    scale = await custom.get_namespaced_custom_object_scale(group, "v1", ns.name, "pytorchjobs", "pt")
    assert scale["spec"]["replicas"] == 2


@pytest.mark.embedded_only("a converter function registered in process instead of a webhook")
async def test_webhook_conversion_uses_the_registered_converter() -> None:
    from kubetrain.embedded.apiserver import EmbeddedAPIServer

    def convert(obj: dict[str, Any], api_version: str) -> dict[str, Any]:
        spec = dict(obj.get("spec") or {})
        if api_version.endswith("/v2"):
            spec["sizeV2"] = spec.pop("size", None)
        else:
            spec["size"] = spec.pop("sizeV2", None)
        return {**obj, "apiVersion": api_version, "spec": spec}

    kind = WidgetKind("example.kubetrain.io", "default")
    crd = kind.crd()
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

        async with aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(ssl=srv.client_ssl_context()),
            headers={"Authorization": f"Bearer {srv.token}"},
        ) as session:
            http = Http(srv.url, session)
            await install_widget_crd(http, kind, crd)
            assert (await http.post(kind.collection, kind.obj("w", replicas=1)))[0] == 201
            status, body, _ = await http.get(kind.path("v2", "w"))
            assert status == 200 and body["spec"]["sizeV2"] == 2 and "size" not in body["spec"]
    finally:
        await srv.stop()
