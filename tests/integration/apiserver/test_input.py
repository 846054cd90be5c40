"""Input kube-apiserver refuses before storing anything (400 from the decoder, 422 from validation),
and input it accepts that a naive server would choke on."""

from __future__ import annotations

import json

import pytest

from .helpers import NS, Http, WidgetKind, names

DECODE = 'ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal'


async def post_raw(http: Http, path: str, raw: bytes) -> tuple[int, object]:
    status, body, _ = await http.request("POST", path, raw=raw)
    return status, body


@pytest.mark.parametrize(
    ("metadata", "message"),
    [
        ('{"name": 5}', "number into Go struct field ObjectMeta.metadata.name of type string"),
        ('{"name": [1]}', "array into Go struct field ObjectMeta.metadata.name of type string"),
        ('{"name": {}}', "object into Go struct field ObjectMeta.metadata.name of type string"),
        ('{"name": true}', "bool into Go struct field ObjectMeta.metadata.name of type string"),
        (
            '{"generateName": 5}',
            "number into Go struct field ObjectMeta.metadata.generateName of type string",
        ),
        (
            '{"name": "l", "labels": [1]}',
            "array into Go struct field ObjectMeta.metadata.labels of type map[string]string",
        ),
        (
            '{"name": "l", "labels": {"a": 1}}',
            "number into Go struct field ObjectMeta.metadata.labels of type string",
        ),
        (
            '{"name": "f", "finalizers": "x"}',
            "string into Go struct field ObjectMeta.metadata.finalizers of type []string",
        ),
    ],
)
async def test_wrongly_typed_metadata_is_400_and_stores_nothing(
    http: Http, ns: NS, metadata: str, message: str
) -> None:
    status, body = await post_raw(http, ns.configmaps, f'{{"metadata": {metadata}}}'.encode())
    assert status == 400 and isinstance(body, dict) and body["reason"] == "BadRequest"
    assert body["message"] == f"{DECODE} {message}"
    status, listed, _ = await http.get(ns.configmaps)
    assert status == 200 and names(listed["items"]) == []


async def test_wrongly_typed_data_is_400(http: Http, ns: NS) -> None:
    status, body = await post_raw(http, ns.configmaps, b'{"metadata": {"name": "d"}, "data": {"a": 1}}')
    assert status == 400
    assert (
        isinstance(body, dict)
        and body["message"] == f"{DECODE} number into Go struct field ConfigMap.data of type string"
    )
    deep = '{"x":' * 900 + "1" + "}" * 900
    status, body = await post_raw(
        http, ns.configmaps, f'{{"metadata": {{"name": "d"}}, "data": {deep}}}'.encode()
    )
    assert status == 400
    assert (
        isinstance(body, dict)
        and body["message"] == f"{DECODE} object into Go struct field ConfigMap.data of type string"
    )


async def test_custom_resource_metadata_types(http: Http, widgets: WidgetKind) -> None:
    status, body = await post_raw(
        http,
        widgets.collection,
        json.dumps(
            {
                "apiVersion": f"{widgets.group}/v1",
                "kind": "Widget",
                "metadata": {"name": 5},
                "spec": {"size": 1},
            }
        ).encode(),
    )
    assert status == 400 and isinstance(body, dict)
    assert body["message"] == (
        'Widget in version "v1" cannot be handled as a Widget: json: cannot unmarshal number into Go struct '
        "field ObjectMeta.name of type string"
    )


async def test_lone_surrogate_decodes_to_replacement_character(http: Http, ns: NS) -> None:
    """Go's decoder turns an unpaired UTF-16 surrogate into U+FFFD; every later read still works."""
    status, body = await post_raw(
        http, ns.configmaps, b'{"metadata": {"name": "sur"}, "data": {"a": "x\\ud800y"}}'
    )
    assert status == 201, body
    assert isinstance(body, dict) and body["data"] == {"a": "x\ufffdy"}
    status, got, _ = await http.get(f"{ns.configmaps}/sur")
    assert status == 200 and got["data"] == {"a": "x\ufffdy"}
    assert (await http.get(ns.configmaps))[0] == 200
    status, body = await post_raw(
        http, ns.configmaps, b'{"metadata": {"name": "sur2", "labels": {"a": "\\udc00x"}}}'
    )
    assert status == 422 and isinstance(body, dict)
    assert body["message"].startswith(
        'ConfigMap "sur2" is invalid: metadata.labels: Invalid value: "\ufffdx": a valid label must be'
    )


async def test_deep_nesting_in_unknown_fields_is_accepted_and_readable(http: Http, ns: NS) -> None:
    deep = '{"x":' * 900 + "1" + "}" * 900
    status, _ = await post_raw(
        http, ns.configmaps, f'{{"metadata": {{"name": "deep"}}, "extra": {deep}}}'.encode()
    )
    assert status == 201
    status, got, _ = await http.get(f"{ns.configmaps}/deep")
    assert status == 200 and "extra" not in got
    assert (await http.get(ns.configmaps))[0] == 200


QUALIFIED = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
    "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
PREFIXED = "with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"


@pytest.mark.parametrize(
    ("labels", "message"),
    [
        (
            {"a/b/c": "x"},
            f'metadata.labels: Invalid value: "a/b/c": a valid label key {QUALIFIED} {PREFIXED}',
        ),
        ({"-a": "x"}, f'metadata.labels: Invalid value: "-a": name part {QUALIFIED}'),
        ({"ok": "v" * 64}, f'metadata.labels: Invalid value: "{"v" * 64}": must be no more than 63 bytes'),
    ],
)
async def test_label_validation(http: Http, ns: NS, labels: dict[str, str], message: str) -> None:
    status, body, _ = await http.post(ns.configmaps, {"metadata": {"name": "lv", "labels": labels}})
    assert status == 422
    assert body["message"] == f'ConfigMap "lv" is invalid: {message}'


async def test_annotation_keys_are_qualified_names(http: Http, ns: NS) -> None:
    status, body, _ = await http.post(
        ns.configmaps, {"metadata": {"name": "an", "annotations": {"bad key": "v"}}}
    )
    assert status == 422
    assert body["message"].startswith(
        'ConfigMap "an" is invalid: metadata.annotations: Invalid value: "bad key": name part must consist of'
    )
    status, _, _ = await http.post(
        ns.configmaps, {"metadata": {"name": "ok", "annotations": {"Example.com/Key": "v"}}}
    )
    assert status == 201
