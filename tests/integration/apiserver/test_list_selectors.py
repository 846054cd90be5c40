"""List with label/field selectors and pagination."""

from __future__ import annotations

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from kubetrain.embedded.apiserver import EmbeddedAPIServer

from .helpers import NS, Http, Unique, WidgetKind, configmap, names, pod, wait_for_service_account


def secret(name: str) -> dict[str, object]:
    """Secrets: a real namespace starts with none (unlike ConfigMaps: kube-root-ca.crt)."""
    return {"metadata": {"name": name}, "stringData": {"k": "v"}}


async def _names(http: Http, path: str, **params: str) -> list[str]:
    status, body, _ = await http.get(path, params=params)
    assert status == 200, body
    return names(body["items"])


@pytest.fixture
async def labelled(http: Http, ns: NS) -> None:
    for name, labels in {
        "a": {"env": "prod", "tier": "web"},
        "b": {"env": "dev", "tier": "web"},
        "c": {"env": "test"},
        "d": {},
    }.items():
        await http.post(ns.configmaps, configmap(name, labels=labels))


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("env=prod", ["a"]),
        ("env==prod", ["a"]),
        ("env!=prod", ["b", "c", "d"]),
        ("env in (prod,dev)", ["a", "b"]),
        ("env notin (prod, dev)", ["c", "d"]),
        ("tier", ["a", "b"]),
        ("!tier", ["c", "d"]),
        ("tier=web,env=dev", ["b"]),
        ("", ["a", "b", "c", "d"]),
    ],
)
async def test_label_selectors(
    http: Http, labelled: None, selector: str, expected: list[str], ns: NS
) -> None:
    assert await _names(http, ns.configmaps, labelSelector=selector) == expected


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        ("a in (x", "unable to parse requirement: found '', expected: ',' or ')'"),
        ("!!x", "unable to parse requirement: found '!', expected: identifier"),
        ("a===b", "unable to parse requirement: found '=', expected: identifier"),
        ("a!", "unable to parse requirement: found '!', expected: in, notin, =, ==, !=, gt, lt"),
        ("a in x", "unable to parse requirement: found 'x' expected: '('"),
        ("a=b=c", "found '=', expected: ',' or 'end of string'"),
        ("a,", "found '', expected: identifier after ','"),
        ("(", "found '(', expected: !, identifier, or 'end of string'"),
        (
            "a=-b",
            'unable to parse requirement: values[0][a]: Invalid value: "-b": a valid label must be an empty '
            "string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
            "alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation "
            "is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
        ),
        (
            "-a=b",
            'unable to parse requirement: <nil>: Invalid value: "-a": name part must consist of alphanumeric '
            "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
            "'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
            "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        ),
    ],
)
async def test_label_selector_errors(http: Http, ns: NS, selector: str, message: str) -> None:
    status, body, _ = await http.get(ns.configmaps, params={"labelSelector": selector})
    assert status == 400 and body["reason"] == "BadRequest"
    assert body["message"] == message


async def test_empty_values_select_empty_labels(http: Http, ns: NS) -> None:
    """`a in ()` and `a==` both mean the value "" (labels.Parse)."""
    await http.post(ns.configmaps, configmap("empty", labels={"a": ""}))
    await http.post(ns.configmaps, configmap("full", labels={"a": "x"}))
    assert await _names(http, ns.configmaps, labelSelector="a in ()") == ["empty"]
    assert await _names(http, ns.configmaps, labelSelector="a==") == ["empty"]
    assert await _names(http, ns.configmaps, labelSelector="a in (x,)") == ["empty", "full"]


async def test_bad_label_selector_is_400(http: Http, ns: NS) -> None:
    status, body, _ = await http.get(ns.configmaps, params={"labelSelector": "a in (x"})
    assert status == 400 and body["reason"] == "BadRequest"
    status, body, _ = await http.get(ns.configmaps, params={"labelSelector": "a in ()"})
    assert status == 200 and body["items"] == []  # `()` is the set of the empty value


async def test_pod_field_selectors(http: Http, core: client.CoreV1Api, ns: NS) -> None:
    for name in ("p1", "p2", "p3"):
        await http.post(ns.pods, pod(name))
    await http.post(
        f"{ns.pods}/p1/binding", {"target": {"kind": "Node", "name": "n1"}, "metadata": {"name": "p1"}}
    )
    await http.patch(f"{ns.pods}/p2/status", {"status": {"phase": "Running"}})
    assert await _names(http, ns.pods, fieldSelector="spec.nodeName=n1") == ["p1"]
    assert await _names(http, ns.pods, fieldSelector="spec.nodeName=") == ["p2", "p3"]
    assert await _names(http, ns.pods, fieldSelector="status.phase!=Pending") == ["p2"]
    assert await _names(http, ns.pods, fieldSelector="metadata.name=p3") == ["p3"]
    assert await _names(
        http, "/api/v1/pods", fieldSelector=f"metadata.namespace={ns},status.phase=Pending"
    ) == ["p1", "p3"]
    pods = await core.list_namespaced_pod(ns.name, field_selector="status.phase=Running")
    assert [p.metadata.name for p in pods.items] == ["p2"]


async def test_unsupported_field_selector_is_400(http: Http, core: client.CoreV1Api, ns: NS) -> None:
    status, body, _ = await http.get(ns.pods, params={"fieldSelector": "status.hostIP=1.2.3.4"})
    assert status == 400
    assert body["message"] == "field label not supported: status.hostIP"
    status, body, _ = await http.get(ns.configmaps, params={"fieldSelector": "data.x=1"})
    assert status == 400
    assert body["message"].endswith(
        '"data.x" is not a known field selector: only "metadata.name", "metadata.namespace"'
    )
    with pytest.raises(ApiException) as err:
        await core.list_namespaced_pod(ns.name, field_selector="spec.bogus=1")
    assert err.value.status == 400


async def test_event_field_selectors(http: Http, ns: NS) -> None:
    ev = {
        "metadata": {"name": "e1"},
        "involvedObject": {"kind": "Pod", "name": "p1", "namespace": ns.name},
        "reason": "Started",
        "type": "Normal",
        "message": "m",
    }
    await http.post(f"/api/v1/namespaces/{ns}/events", ev)
    await http.post(
        f"/api/v1/namespaces/{ns}/events",
        {
            **ev,
            "metadata": {"name": "e2"},
            "involvedObject": {"kind": "TFJob", "name": "j", "namespace": ns.name},
        },
    )
    found = await _names(
        http,
        f"/api/v1/namespaces/{ns}/events",
        fieldSelector="involvedObject.kind=Pod,involvedObject.name=p1",
    )
    assert found == ["e1"]
    assert await _names(http, f"/api/v1/namespaces/{ns}/events", fieldSelector="reason=Started") == [
        "e1",
        "e2",
    ]


async def test_all_namespaces_list(http: Http, ns: NS, unique: Unique) -> None:
    other = unique("other", cleanup="/api/v1/namespaces")
    await http.post("/api/v1/namespaces", {"metadata": {"name": other}})
    await wait_for_service_account(http, other)
    await http.post(ns.pods, pod("x"))
    await http.post(f"/api/v1/namespaces/{other}/pods", pod("y"))
    status, body, _ = await http.get("/api/v1/pods")
    assert status == 200
    ours = [(o["metadata"]["namespace"], o["metadata"]["name"]) for o in body["items"]]
    assert [o for o in ours if o[0] in (ns.name, other)] == sorted([(ns.name, "x"), (other, "y")])


async def test_pagination(http: Http, ns: NS) -> None:
    for i in range(7):
        await http.post(ns.path("secrets"), secret(f"cm{i}"))
    seen: list[str] = []
    params = {"limit": "3"}
    pages = 0
    while True:
        status, body, _ = await http.get(ns.path("secrets"), params=params)
        assert status == 200
        pages += 1
        seen += [o["metadata"]["name"] for o in body["items"]]
        token = body["metadata"].get("continue")
        if not token:
            assert "remainingItemCount" not in body["metadata"]
            break
        assert body["metadata"]["remainingItemCount"] == 7 - len(seen)
        params = {"limit": "3", "continue": token}
    assert pages == 3 and seen == [f"cm{i}" for i in range(7)]


async def test_pagination_via_client(http: Http, core: client.CoreV1Api, ns: NS) -> None:
    for i in range(5):
        await http.post(ns.path("secrets"), secret(f"p{i}"))
    first = await core.list_namespaced_secret(ns.name, limit=2)
    assert len(first.items) == 2 and first.metadata._continue
    second = await core.list_namespaced_secret(ns.name, limit=10, _continue=first.metadata._continue)
    assert [c.metadata.name for c in second.items] == ["p2", "p3", "p4"]


@pytest.mark.embedded_only("compacts the history on demand (etcd compacts every 5 minutes)")
async def test_expired_continue_token_is_410(server: EmbeddedAPIServer, http: Http, ns: NS) -> None:
    for i in range(3):
        await http.post(ns.configmaps, configmap(f"e{i}"))
    _, body, _ = await http.get(ns.configmaps, params={"limit": "1"})
    await http.post(ns.configmaps, configmap("later"))
    server.compact()
    status, err, _ = await http.get(
        ns.configmaps, params={"limit": "1", "continue": body["metadata"]["continue"]}
    )
    assert status == 410 and err["reason"] == "Expired"


async def test_custom_resource_field_selector_only_metadata(http: Http, widgets: WidgetKind) -> None:
    await http.post(widgets.collection, widgets.obj("w1"))
    await http.post(widgets.collection, widgets.obj("w2"))
    assert await _names(http, widgets.collection, fieldSelector="metadata.name!=w1") == ["w2"]
    status, _, _ = await http.get(widgets.collection, params={"fieldSelector": "spec.size=2"})
    assert status == 400
