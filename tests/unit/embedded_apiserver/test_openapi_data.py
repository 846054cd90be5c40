"""The captured kube-apiserver OpenAPI data covers every built-in kind the embedded server serves."""

from __future__ import annotations

import pytest

from kubetrain.embedded.apiserver import fieldvalidation
from kubetrain.embedded.apiserver.openapi import builtin_data, gv_key
from kubetrain.embedded.apiserver.openapi_proto import parse, to_protobuf, to_yaml
from kubetrain.embedded.apiserver.resources import BUILTINS

REGENERATE = (
    "run python -m kubetrain.embedded.apiserver.openapi_gen $(go env GOMODCACHE)/k8s.io/kubernetes@v1.36.3"
)


@pytest.mark.parametrize("rt", BUILTINS, ids=lambda rt: f"{rt.api_version}/{rt.plural}")
def test_every_builtin_kind_has_its_schema_and_paths(rt) -> None:  # type: ignore[no-untyped-def]
    gv = builtin_data()["groupVersions"].get(gv_key(rt.group, rt.version))
    assert gv is not None, f"no OpenAPI data for {rt.api_version}: {REGENERATE}"
    assert fieldvalidation._kind_schema(rt.group, rt.version, rt.kind), (
        f"no schema for {rt.kind}: {REGENERATE}"
    )
    assert any(f"/{rt.plural}" in path for path in gv["paths"]), f"no paths for {rt.plural}: {REGENERATE}"


def test_unknown_fields_of_a_pod_in_decoding_order() -> None:
    pods = next(rt for rt in BUILTINS if rt.plural == "pods")
    obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "labels": {"any": "label"}, "bogus": 1},
        "spec": {
            "containers": [{"name": "c", "image": "i", "env": [{"name": "A", "vaule": "x"}]}],
            "volumes": [{"name": "v", "emptyDir": {"medium": "", "sizeLimit": "1Gi", "x": 1}}],
        },
        "status": {"phase": "Pending"},
    }
    assert fieldvalidation.unknown_fields(pods, obj) == [
        "metadata.bogus",
        "spec.containers[0].env[0].vaule",
        "spec.volumes[0].emptyDir.x",
    ]
    assert "bogus" not in obj["metadata"] and obj["spec"]["containers"][0]["env"][0] == {"name": "A"}


def test_duplicate_fields() -> None:
    assert fieldvalidation.duplicate_fields(b'{"a":1,"b":{"c":1}}') == []
    assert fieldvalidation.duplicate_fields(b'{"a":"x\\":","b":1}') == []  # a `":` inside a string
    assert fieldvalidation.duplicate_fields(b'{"a":1,"b":{"c":1,"c":2},"l":[{"d":1,"d":1}],"a":2}') == [
        "b.c",
        "l[0].d",
        "a",
    ]  # in the order the decoder meets them


@pytest.mark.parametrize(
    "value",
    [
        [{"group": "", "kind": "Pod", "version": "v1"}],
        "merge",
        ["name", "protocol"],
        True,
        {"a": {"b": [1, "x: y"]}},
        "",
    ],
)
def test_vendor_extensions_are_yaml_that_reads_back(value: object) -> None:
    import yaml

    assert yaml.safe_load(to_yaml(value)) == value


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ([{"group": "", "kind": "Pod", "version": "v1"}], '- group: ""\n  kind: Pod\n  version: v1\n'),
        ("*", "'*'\n"),
        (
            [{"rule": "self == oldSelf", "message": "x is immutable"}],
            "- rule: self == oldSelf\n  message: x is immutable\n",
        ),
        (
            [{"discriminator": "type", "fields-to-discriminateBy": {"localhostProfile": "LocalhostProfile"}}],
            "- discriminator: type\n  fields-to-discriminateBy:\n    localhostProfile: LocalhostProfile\n",
        ),
        ({"a": {"b": 1}}, "a:\n    b: 1\n"),
        ("get", "get\n"),
        (True, "true\n"),
    ],
)
def test_vendor_extensions_as_yaml_v3_writes_them(value: object, text: str) -> None:
    """The forms kube-apiserver's protobuf documents have (checked byte for byte against 1.36.3)."""
    assert to_yaml(value) == text


def test_protobuf_round_trip_of_a_small_document() -> None:
    doc = {
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": "unversioned"},
        "paths": {
            "/api/v1/pods": {
                "get": {
                    "operationId": "listCoreV1PodForAllNamespaces",
                    "parameters": [{"in": "query", "name": "limit", "type": "integer", "uniqueItems": True}],
                    "responses": {"200": {"description": "OK", "schema": {"$ref": "#/definitions/x"}}},
                    "x-kubernetes-action": "list",
                }
            }
        },
        "definitions": {
            "x": {
                "type": "object",
                "properties": {"a": {"type": "string"}, "m": {"additionalProperties": True}},
                "x-kubernetes-group-version-kind": [{"group": "", "kind": "X", "version": "v1"}],
            }
        },
    }
    parsed = parse(to_protobuf(doc))
    (path,) = parsed.paths.path
    op = path.value.get
    assert path.name == "/api/v1/pods" and op.operation_id == "listCoreV1PodForAllNamespaces"
    param = op.parameters[0].parameter.non_body_parameter.query_parameter_sub_schema
    assert (param.name, param.type, param.unique_items) == ("limit", "integer", True)
    (definition,) = parsed.definitions.additional_properties
    props = {p.name: p.value for p in definition.value.properties.additional_properties}
    assert props["a"].type.value == ["string"] and props["m"].additional_properties.boolean is True
    assert definition.value.vendor_extension[0].value.yaml == '- group: ""\n  kind: X\n  version: v1\n'
