"""Server-side field validation (``fieldValidation=Strict|Warn|Ignore``) as kube-apiserver does it.

Every assertion holds against the real kube-apiserver too: the texts are apimachinery's strict
decoding errors, the warnings its ``Warning: 299`` headers.
"""

from __future__ import annotations

import json
from typing import Any

from .helpers import NS, Http, WidgetKind, configmap, pod


def warnings(headers: Any) -> list[str]:
    """The texts of the response's ``Warning: 299 - "..."`` headers, unescaped."""
    out = []
    for value in headers.getall("Warning", []):
        assert value.startswith('299 - "') and value.endswith('"'), value
        out.append(value[7:-1].replace('\\"', '"').replace("\\\\", "\\"))
    return out


async def post(http: Http, path: str, body: Any, **params: str) -> tuple[int, Any, list[str]]:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    async with http.session.post(
        http.base + path, data=raw, params=params, headers={"Content-Type": "application/json"}
    ) as resp:
        return resp.status, await resp.json(), warnings(resp.headers)


async def send(
    http: Http, method: str, path: str, body: Any, content_type: str, **params: str
) -> tuple[int, Any, list[str]]:
    async with http.session.request(
        method,
        http.base + path,
        data=json.dumps(body).encode(),
        params=params,
        headers={"Content-Type": content_type},
    ) as resp:
        return resp.status, await resp.json(), warnings(resp.headers)


def typo_pod(name: str) -> dict[str, Any]:
    body = pod(name)
    body["metadata"]["labelz"] = {"a": "b"}
    body["spec"]["containers"][0]["imagee"] = "x"
    return body


async def test_strict_rejects_unknown_fields_of_a_builtin_kind(http: Http, ns: NS) -> None:
    status, body, warned = await post(http, ns.pods, typo_pod("s"), fieldValidation="Strict")
    assert status == 400, body
    assert body["reason"] == "BadRequest"
    assert body["message"] == (
        'Pod in version "v1" cannot be handled as a Pod: strict decoding error: '
        'unknown field "metadata.labelz", unknown field "spec.containers[0].imagee"'
    )
    assert warned == []
    status, _, _ = await http.get(f"{ns.pods}/s")
    assert status == 404


async def test_warn_is_the_default_and_drops_the_fields(http: Http, ns: NS) -> None:
    expected = ['unknown field "metadata.labelz"', 'unknown field "spec.containers[0].imagee"']
    for name, params in (("w", {"fieldValidation": "Warn"}), ("d", {})):
        status, body, warned = await post(http, ns.pods, typo_pod(name), **params)
        assert status == 201, body
        assert warned == expected
        assert "labelz" not in body["metadata"] and "imagee" not in body["spec"]["containers"][0]


async def test_ignore_drops_silently(http: Http, ns: NS) -> None:
    status, body, warned = await post(http, ns.pods, typo_pod("i"), fieldValidation="Ignore")
    assert status == 201, body
    assert warned == []
    assert "imagee" not in body["spec"]["containers"][0]


async def test_known_fields_pass_strict_without_warnings(http: Http, ns: NS) -> None:
    cm = configmap("ok", {"k": "v"}, labels={"a": "b"}, annotations={"x": "y"})
    status, body, warned = await post(http, ns.configmaps, cm, fieldValidation="Strict")
    assert status == 201 and warned == [], body


async def test_duplicate_fields(http: Http, ns: NS) -> None:
    raw = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dup"},"data":{"a":"1","a":"2"}}'
    status, body, _ = await post(http, ns.configmaps, raw, fieldValidation="Strict")
    assert status == 400, body
    assert body["message"] == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: '
        'duplicate field "data.a"'
    )
    status, body, warned = await post(http, ns.configmaps, raw)
    assert status == 201 and warned == ['duplicate field "data.a"'], body
    assert body["data"] == {"a": "2"}


async def test_duplicate_and_unknown_fields_in_document_order(http: Http, ns: NS) -> None:
    """Go's decoder reports as it reads: a repeated object's first value too, unknown fields among them."""
    raw = (
        b'{"apiVersion":"v1","kind":"ConfigMap","data":{"a":"1","a":"2"},'
        b'"metadata":{"name":"dd","labels":{"x":"1","x":"1"}},"data":{"b":"1","b":"1"},"bogus":1}'
    )
    status, body, _ = await post(http, ns.configmaps, raw, fieldValidation="Strict")
    assert status == 400, body
    assert body["message"] == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: '
        'duplicate field "data.a", duplicate field "metadata.labels.x", duplicate field "data", '
        'duplicate field "data.b", unknown field "bogus"'
    )


async def test_unsupported_directive_is_invalid(http: Http, ns: NS) -> None:
    status, body, _ = await post(http, ns.configmaps, configmap("bad"), fieldValidation="Loose")
    assert status == 422, body
    assert body["message"] == (
        'CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "Loose": '
        'supported values: "", "Ignore", "Strict", "Warn"'
    )


async def test_update_is_checked_like_create(http: Http, ns: NS) -> None:
    status, created, _ = await post(http, ns.configmaps, configmap("u", {"k": "v"}))
    assert status == 201
    created["extra"] = 1
    status, body, _ = await send(
        http, "PUT", f"{ns.configmaps}/u", created, "application/json", fieldValidation="Strict"
    )
    assert status == 400, body
    assert body["message"] == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: '
        'unknown field "extra"'
    )


async def test_patches(http: Http, ns: NS) -> None:
    status, _, _ = await post(http, ns.configmaps, configmap("p", {"k": "v"}))
    assert status == 201
    path = f"{ns.configmaps}/p"
    patch = {"metadata": {"labelz": {"a": "b"}}}
    status, body, warned = await send(http, "PATCH", path, patch, "application/merge-patch+json")
    assert status == 200 and warned == ['unknown field "metadata.labelz"'], body
    status, body, _ = await send(
        http, "PATCH", path, patch, "application/strategic-merge-patch+json", fieldValidation="Strict"
    )
    assert status == 422, body
    assert body["reason"] == "Invalid"
    assert body["message"] == (
        ' "" is invalid: patch: Invalid value: "map[metadata:map[labelz:map[a:b]]]": '
        'strict decoding error: unknown field "metadata.labelz"'
    )
    assert body["details"]["causes"][0]["field"] == "patch"
    status, body, _ = await send(
        http, "PATCH", path, patch, "application/merge-patch+json", fieldValidation="Strict"
    )
    assert status == 422, body
    assert body["message"].startswith(' "" is invalid: patch: Invalid value: "{')
    assert body["message"].endswith('": strict decoding error: unknown field "metadata.labelz"')


async def test_custom_resources_prune_and_report_unknown_fields(http: Http, widgets: WidgetKind) -> None:
    obj = widgets.obj("w", colour="red", template={"free": {"form": 1}})
    obj["metadata"]["labelz"] = {}
    obj["spec"]["embedded"] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "e", "bogus": 1},
        "spec": {"x": 1},
        "data": {},
    }
    status, body, _ = await post(http, widgets.collection, obj, fieldValidation="Strict")
    assert status == 400, body
    assert body["message"] == (
        'Widget in version "v1" cannot be handled as a Widget: strict decoding error: '
        'unknown field "metadata.labelz", unknown field "spec.colour", unknown field "spec.embedded.data", '
        'unknown field "spec.embedded.spec.x", unknown field "spec.embedded.metadata.bogus"'
    )
    status, body, warned = await post(http, widgets.collection, obj)
    assert status == 201, body
    assert warned == [
        'unknown field "metadata.labelz"',
        'unknown field "spec.colour"',
        'unknown field "spec.embedded.data"',
        'unknown field "spec.embedded.spec.x"',
        'unknown field "spec.embedded.metadata.bogus"',
    ]
    assert body["spec"]["template"] == {"free": {"form": 1}}  # x-kubernetes-preserve-unknown-fields
    assert "colour" not in body["spec"] and "labelz" not in body["metadata"]


async def test_custom_resource_typo_names_the_path(http: Http, widgets: WidgetKind) -> None:
    """The issue's case: `replcas` under a map of objects is named with its full path."""
    obj = widgets.obj("t", replcas=2)
    status, body, _ = await post(http, widgets.collection, obj, fieldValidation="Strict")
    assert status == 400
    assert body["message"].endswith('strict decoding error: unknown field "spec.replcas"')


async def test_server_side_apply_rejects_undeclared_fields_whatever_the_directive(
    http: Http, ns: NS, widgets: WidgetKind
) -> None:
    manifest = (
        f"apiVersion: v1\nkind: Pod\nmetadata: {{name: sp, namespace: {ns.name}}}\n"
        "spec:\n  containers: [{name: c, image: busybox, imagee: x}]\n"
    )
    for params in ({"fieldManager": "t"}, {"fieldManager": "t", "fieldValidation": "Ignore"}):
        async with http.session.patch(
            f"{http.base}{ns.pods}/sp",
            data=manifest.encode(),
            params=params,
            headers={"Content-Type": "application/apply-patch+yaml"},
        ) as resp:
            body = await resp.json()
        assert resp.status == 500, body
        assert body["message"] == (
            f"failed to create typed patch object ({ns.name}/sp; /v1, Kind=Pod): "
            '.spec.containers[name="c"].imagee: field not declared in schema'
        )
    obj = widgets.obj("sa", colour="red", replcas=1)
    async with http.session.patch(
        f"{http.base}{widgets.path(name='sa')}",
        data=json.dumps(obj).encode(),
        params={"fieldManager": "t"},
        headers={"Content-Type": "application/apply-patch+yaml"},
    ) as resp:
        body = await resp.json()
    assert resp.status == 500, body
    prefix = f"failed to create typed patch object (/sa; {widgets.group}/v1, Kind=Widget): "
    assert body["message"] in (  # only the first found, in no fixed order
        f"{prefix}.spec.colour: field not declared in schema",
        f"{prefix}.spec.replcas: field not declared in schema",
    )
