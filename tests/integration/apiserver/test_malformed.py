"""Malformed bodies: what kube-apiserver's decoder refuses is a 4xx with its message before anything
is stored, and what it accepts (odd strings, nesting up to 10,000 levels) stays readable (issue #17).

Each answer here was read from a live kube-apiserver 1.36.3 (``scripts/k8s-control-plane``).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from .helpers import NS, Http, WidgetKind, names

UNRECOGNIZED = "the object provided is unrecognized (must be of type ConfigMap): "
PARSE = UNRECOGNIZED + "couldn't get version/kind; json parse error: "


async def post_raw(
    http: Http, path: str, raw: bytes, content_type: str = "application/json"
) -> tuple[int, Any]:
    status, body, _ = await http.request("POST", path, raw=raw, content_type=content_type)
    return status, body


async def status_of(http: Http, method: str, path: str, raw: bytes | None = None, **kw: Any) -> int:
    """The status of a request whose answer may nest deeper than a test's JSON parser reaches."""
    async with http.session.request(method, http.base + path, data=raw, **kw) as resp:
        await resp.read()
        return resp.status


async def assert_nothing_stored(http: Http, ns: NS) -> None:
    status, listed, _ = await http.get(ns.configmaps)
    assert status == 200 and names(listed["items"]) == []


def deep_list(depth: int) -> str:
    return "[" * depth + "]" * depth


async def test_invalid_utf8_in_strings_decodes_byte_by_byte_to_replacement_characters(
    http: Http, ns: NS
) -> None:
    """Go's decoder turns every byte of an invalid UTF-8 sequence into one U+FFFD (a truncated
    3-byte sequence is two, an encoded surrogate three) and stores the result."""
    status, body = await post_raw(
        http, ns.configmaps, b'{"metadata": {"name": "u1"}, "data": {"a": "\xff\xe2\x82x\xed\xa0\x80"}}'
    )
    assert status == 201, body
    want = "\ufffd" * 3 + "x" + "\ufffd" * 3
    assert body["data"] == {"a": want}
    status, got, _ = await http.get(f"{ns.configmaps}/u1")
    assert status == 200 and got["data"] == {"a": want}
    assert (await http.get(ns.configmaps))[0] == 200


async def test_invalid_utf8_or_surrogate_in_a_data_key_is_invalid(http: Http, ns: NS) -> None:
    for name, key in (("k1", b"\xff"), ("k2", b"\\ud800")):
        status, body = await post_raw(
            http, ns.configmaps, b'{"metadata": {"name": "%s"}, "data": {"%s": "x"}}' % (name.encode(), key)
        )
        assert status == 422, body
        assert body["message"].startswith(
            f'ConfigMap "{name}" is invalid: data[\ufffd]: Invalid value: "\ufffd": a valid config key must '
        )
    await assert_nothing_stored(http, ns)


async def test_invalid_utf8_outside_a_string_is_a_syntax_error(http: Http, ns: NS) -> None:
    status, body = await post_raw(http, ns.configmaps, b'{"metadata": {"name": "u3"}, \xff"data": {}}')
    assert status == 400 and body["reason"] == "BadRequest"
    assert body["message"].startswith(PARSE + "invalid character ")
    assert body["message"].endswith(' ({"metadata": {"name": "u3"}, \ufffd ...)')
    await assert_nothing_stored(http, ns)


async def test_nesting_up_to_ten_thousand_levels_is_stored_and_one_more_is_refused(
    http: Http, ns: NS
) -> None:
    """encoding/json's maxNestingDepth is 10,000 containers, the body's own object included."""
    head = '{"metadata": {"name": "deep"}, "extra": '
    status, body = await post_raw(http, ns.configmaps, (head + deep_list(9_999) + "}").encode())
    assert status == 201, body
    status, _, _ = await http.get(f"{ns.configmaps}/deep")
    assert status == 200
    raw = ('{"metadata": {"name": "too-deep"}, "extra": ' + deep_list(10_000) + "}").encode()
    status, body = await post_raw(http, ns.configmaps, raw)
    assert status == 400 and body["reason"] == "BadRequest"
    assert body["message"] == f"{PARSE}invalid character '[' exceeded max depth ({raw[:30].decode()} ...)"
    status, listed, _ = await http.get(ns.configmaps)
    assert status == 200 and names(listed["items"]) == ["deep"]


async def test_a_custom_resource_nested_ten_thousand_deep_reads_patches_and_applies(
    http: Http, widgets: WidgetKind
) -> None:
    """``x-kubernetes-preserve-unknown-fields`` keeps what a client nests: every verb keeps working
    on it (the embedded server walks such objects without recursion)."""
    depth = 9_990  # + the object, spec, template and the patch's own levels stay within 10,000
    deep_dict = '{"k":' * 2_000 + "1" + "}" * 2_000  # kube-apiserver patches 9,990 levels in > 60 s
    obj = widgets.obj("deep")
    text = json.dumps(obj)[:-2] + f', "template": {{"d": {deep_list(depth)}}}}}}}'
    json_type = {"Content-Type": "application/json"}
    assert await status_of(http, "POST", widgets.collection, text.encode(), headers=json_type) == 201
    path = widgets.path(name="deep")
    assert await status_of(http, "GET", path) == 200
    assert await status_of(http, "GET", widgets.collection) == 200
    merge = {"Content-Type": "application/merge-patch+json"}
    patch = f'{{"spec": {{"template": {{"m": {deep_dict}}}}}}}'.encode()
    assert await status_of(http, "PATCH", path, patch, headers=merge) == 200
    assert await status_of(http, "PATCH", path, patch, headers=merge) == 200  # a no-op, compared deep
    applied = json.dumps({**widgets.obj("deep"), "metadata": {"name": "deep"}})[:-2]
    applied += f', "template": {{"a": {deep_dict}}}}}}}'
    status = await status_of(
        http,
        "PATCH",
        path,
        applied.encode(),
        headers={"Content-Type": "application/apply-patch+yaml"},
        params={"fieldManager": "fuzz", "force": "true"},
    )
    assert status == 200
    assert await status_of(http, "DELETE", path) == 200


async def test_non_string_api_version_or_kind_is_400(http: Http, ns: NS) -> None:
    cases = [
        (b'{"apiVersion":5,"kind":"ConfigMap","metadata":{"name":"a1"}}', "number", "apiVersion"),
        (b'{"apiVersion":"v1","kind":[1],"metadata":{"name":"a2"}}', "array", "kind"),
    ]
    for raw, json_type, field in cases:
        status, body = await post_raw(http, ns.configmaps, raw)
        assert status == 400 and body["reason"] == "BadRequest"
        assert body["message"] == (
            f"{PARSE}json: cannot unmarshal {json_type} into Go struct field .{field} of type string "
            f"({raw[:30].decode()} ...)"
        )
    await assert_nothing_stored(http, ns)


async def test_truncated_body_is_400(http: Http, ns: NS) -> None:
    status, body = await post_raw(http, ns.configmaps, b'{"metadata":{"name":"t1"},"data":{"a":"b"')
    assert status == 400
    assert body["message"] == PARSE + 'unexpected end of JSON input ({"metadata":{"name":"t1"},"dat ...)'
    await assert_nothing_stored(http, ns)


async def test_yaml_body_with_invalid_utf8_is_400(http: Http, ns: NS) -> None:
    raw = b'metadata:\n  name: y3\ndata:\n  a: "\xff"\n'
    status, body = await post_raw(http, ns.configmaps, raw, "application/yaml")
    assert status == 400
    assert body["message"] == f"{UNRECOGNIZED}yaml: invalid leading UTF-8 octet ({raw[:30].hex()} ...)"
    await assert_nothing_stored(http, ns)


async def test_deep_json_sent_as_yaml_is_read_like_json(http: Http, ns: NS) -> None:
    raw = ('{"metadata": {"name": "y1"}, "extra": ' + deep_list(9_999) + "}").encode()
    status, body = await post_raw(http, ns.configmaps, raw, "application/yaml")
    assert status == 201, body


async def test_a_body_over_3_mib_is_413_and_stores_nothing(http: Http, ns: NS) -> None:
    raw = json.dumps({"metadata": {"name": "big"}, "data": {"a": "x" * (3 * 1024 * 1024)}}).encode()
    status, body = await post_raw(http, ns.configmaps, raw)
    assert status == 413 and body["reason"] == "RequestEntityTooLarge"
    assert body["message"] == "Request entity too large: limit is 3145728"
    status, _, _ = await http.post(ns.configmaps, {"metadata": {"name": "small"}})
    assert status == 201
    status, body, _ = await http.request(
        "PATCH", f"{ns.configmaps}/small", raw=raw, content_type="application/merge-patch+json"
    )
    assert status == 413 and body["message"] == "Request entity too large: limit is 3145728"


async def test_configmap_data_over_1_mib_is_invalid(http: Http, ns: NS) -> None:
    raw = json.dumps({"metadata": {"name": "big"}, "data": {"a": "x" * (1024 * 1024 + 1)}}).encode()
    status, body = await post_raw(http, ns.configmaps, raw)
    assert status == 422, body
    assert body["message"] == 'ConfigMap "big" is invalid: []: Too long: may not be more than 1048576 bytes'
    await assert_nothing_stored(http, ns)


@pytest.mark.deliberate_difference(
    "no etcd behind the embedded server: it stores objects up to the 3 MiB request limit"
)
async def test_an_object_over_etcds_request_limit_is_refused(http: Http, widgets: WidgetKind) -> None:
    """kube-apiserver hands etcd a serialized object over its 1.5 MiB --max-request-bytes and
    answers etcd's refusal as a 500; nothing is stored."""
    obj = widgets.obj("huge", template={"blob": "x" * (1536 * 1024)})
    status, body, _ = await http.post(widgets.collection, obj)
    assert status == 500 and body["message"] == "etcdserver: request is too large"
    status, _, _ = await http.get(widgets.path(name="huge"))
    assert status == 404


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            '{"gracePeriodSeconds":"x"}',
            "string into Go struct field DeleteOptions.gracePeriodSeconds of type int64",
        ),
        (
            '{"gracePeriodSeconds":1.5}',
            "number 1.5 into Go struct field DeleteOptions.gracePeriodSeconds of type int64",
        ),
        ('{"dryRun":5}', "number into Go struct field DeleteOptions.dryRun of type []string"),
        (
            '{"orphanDependents":"x"}',
            "string into Go struct field DeleteOptions.orphanDependents of type bool",
        ),
        (
            '{"preconditions":5}',
            "number into Go struct field DeleteOptions.preconditions of type v1.Preconditions",
        ),
    ],
)
async def test_wrongly_typed_delete_options_are_400_and_delete_nothing(
    http: Http, ns: NS, options: str, message: str
) -> None:
    status, _, _ = await http.post(ns.configmaps, {"metadata": {"name": "keep"}})
    assert status == 201
    status, body, _ = await http.request("DELETE", f"{ns.configmaps}/keep", raw=options.encode())
    assert status == 400 and body["message"] == f"json: cannot unmarshal {message}"
    status, _, _ = await http.get(f"{ns.configmaps}/keep")
    assert status == 200
