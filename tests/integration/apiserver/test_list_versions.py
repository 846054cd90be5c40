"""List semantics clients build on: resourceVersion/resourceVersionMatch, consistent pagination,
dry-run writes, and the field selectors each kind supports."""

from __future__ import annotations

from typing import Any

import pytest

from .helpers import NS, Http, Unique, configmap, names

LISTOPTS = 'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: '


def secret(name: str, **extra: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "stringData": {"k": "v"}, **extra}


async def test_exact_list_reads_the_past(http: Http, ns: NS) -> None:
    secrets = ns.path("secrets")
    await http.post(secrets, secret("a"))
    _, listed, _ = await http.get(secrets)
    rv = listed["metadata"]["resourceVersion"]
    await http.post(secrets, secret("b"))
    await http.patch(f"{secrets}/a", {"stringData": {"k": "changed"}})
    status, past, _ = await http.get(secrets, params={"resourceVersion": rv, "resourceVersionMatch": "Exact"})
    assert status == 200 and past["metadata"]["resourceVersion"] == rv
    assert names(past["items"]) == ["a"] and past["items"][0]["data"] == {"k": "dg=="}
    status, now, _ = await http.get(
        secrets, params={"resourceVersion": rv, "resourceVersionMatch": "NotOlderThan"}
    )
    assert status == 200 and int(now["metadata"]["resourceVersion"]) >= int(rv)
    status, now, _ = await http.get(secrets, params={"resourceVersion": "0"})
    assert status == 200


@pytest.mark.parametrize(
    ("params", "reason", "message"),
    [
        (
            {"resourceVersionMatch": "Exact"},
            "FieldValueForbidden",
            "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
        ),
        (
            {"resourceVersion": "0", "resourceVersionMatch": "Exact"},
            "FieldValueForbidden",
            'Forbidden: resourceVersionMatch "exact" is forbidden for resourceVersion "0"',
        ),
        (
            {"resourceVersion": "5", "resourceVersionMatch": "Bogus"},
            "FieldValueNotSupported",
            'Unsupported value: "Bogus": supported values: "Exact", "NotOlderThan", ""',
        ),
    ],
)
async def test_invalid_list_options(
    http: Http, ns: NS, params: dict[str, str], reason: str, message: str
) -> None:
    status, body, _ = await http.get(ns.configmaps, params=params)
    assert status == 422 and body["reason"] == "Invalid"
    assert body["message"] == LISTOPTS + message
    assert body["details"] == {
        "group": "meta.k8s.io",
        "kind": "ListOptions",
        "causes": [{"reason": reason, "message": message, "field": "resourceVersionMatch"}],
    }


async def test_continue_pages_are_a_consistent_snapshot(http: Http, ns: NS) -> None:
    secrets = ns.path("secrets")
    for name in ("a", "b", "c", "d"):
        await http.post(secrets, secret(name))
    _, first, _ = await http.get(secrets, params={"limit": "2"})
    assert names(first["items"]) == ["a", "b"]
    await http.delete(f"{secrets}/c")
    await http.post(secrets, secret("e"))
    _, rest, _ = await http.get(secrets, params={"limit": "10", "continue": first["metadata"]["continue"]})
    assert names(rest["items"]) == ["c", "d"]  # as of the first page: c not yet deleted, e not yet there
    assert rest["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    _, fresh, _ = await http.get(secrets)
    assert names(fresh["items"]) == ["a", "b", "d", "e"]


async def test_bad_continue_token_is_400(http: Http, ns: NS) -> None:
    status, body, _ = await http.get(ns.configmaps, params={"limit": "1", "continue": "not-a-token"})
    assert status == 400 and body["reason"] == "BadRequest"


async def test_dry_run_update_and_patch_store_nothing(http: Http, ns: NS) -> None:
    _, created, _ = await http.post(ns.configmaps, configmap("d", {"a": "1"}))
    status, body, _ = await http.patch(f"{ns.configmaps}/d", {"data": {"a": "2"}}, params={"dryRun": "All"})
    assert status == 200 and body["data"] == {"a": "2"}
    changed = {**created, "data": {"a": "3"}}
    status, body, _ = await http.put(f"{ns.configmaps}/d", changed, params={"dryRun": "All"})
    assert status == 200 and body["data"] == {"a": "3"}
    _, got, _ = await http.get(f"{ns.configmaps}/d")
    assert (
        got["data"] == {"a": "1"}
        and got["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    )
    status, body, _ = await http.post(ns.configmaps, configmap("d"), params={"dryRun": "Bogus"})
    assert status == 422
    assert body["message"] == (
        'CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["Bogus"]: '
        'supported values: "All"'
    )


async def test_field_selectors_per_kind(http: Http, ns: NS, unique: Unique) -> None:
    secrets = ns.path("secrets")
    await http.post(secrets, secret("opaque"))
    await http.post(secrets, secret("tls", type="kubernetes.io/basic-auth", stringData={"username": "u"}))
    _, body, _ = await http.get(secrets, params={"fieldSelector": "type=kubernetes.io/basic-auth"})
    assert names(body["items"]) == ["tls"]
    _, body, _ = await http.get(
        "/api/v1/namespaces", params={"fieldSelector": f"metadata.name={ns},status.phase=Active"}
    )
    assert names(body["items"]) == [ns.name]
    node = unique("n", cleanup="/api/v1/nodes")
    await http.post("/api/v1/nodes", {"metadata": {"name": node}, "spec": {"unschedulable": True}})
    _, body, _ = await http.get("/api/v1/nodes", params={"fieldSelector": "spec.unschedulable=true"})
    assert node in names(body["items"])
    await http.post(
        ns.path("services"),
        {"metadata": {"name": "h"}, "spec": {"clusterIP": "None", "ports": [{"port": 80}]}},
    )
    await http.post(ns.path("services"), {"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}})
    _, body, _ = await http.get(ns.path("services"), params={"fieldSelector": "spec.clusterIP=None"})
    assert names(body["items"]) == ["h"]
    _, body, _ = await http.get(ns.path("services"), params={"fieldSelector": "spec.type=ClusterIP"})
    assert names(body["items"]) == ["h", "s"]
    status, body, _ = await http.get(ns.path("services"), params={"fieldSelector": "spec.ports=1"})
    assert status == 400 and body["message"] == "field label not supported: spec.ports"
