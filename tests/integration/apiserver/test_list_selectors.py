"""List with label/field selectors and pagination."""

from __future__ import annotations

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from .helpers import PODS, Http, configmap, pod

CM = "/api/v1/namespaces/default/configmaps"


async def _names(http: Http, path: str, **params: str) -> list[str]:
    status, body, _ = await http.get(path, params=params)
    assert status == 200, body
    return [o["metadata"]["name"] for o in body["items"]]


@pytest.fixture
async def labelled(http: Http) -> None:
    for name, labels in {
        "a": {"env": "prod", "tier": "web"},
        "b": {"env": "dev", "tier": "web"},
        "c": {"env": "test"},
        "d": {},
    }.items():
        await http.post(CM, configmap(name, labels=labels))


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
async def test_label_selectors(http: Http, labelled: None, selector: str, expected: list[str]) -> None:
    assert await _names(http, CM, labelSelector=selector) == expected


async def test_bad_label_selector_is_400(http: Http) -> None:
    status, body, _ = await http.get(CM, params={"labelSelector": "a in ()"})
    assert status == 400 and body["reason"] == "BadRequest"


async def test_pod_field_selectors(http: Http, core: client.CoreV1Api) -> None:
    for name in ("p1", "p2", "p3"):
        await http.post(PODS, pod(name))
    await http.post(
        f"{PODS}/p1/binding", {"target": {"kind": "Node", "name": "n1"}, "metadata": {"name": "p1"}}
    )
    await http.patch(f"{PODS}/p2/status", {"status": {"phase": "Running"}})
    assert await _names(http, PODS, fieldSelector="spec.nodeName=n1") == ["p1"]
    assert await _names(http, PODS, fieldSelector="spec.nodeName=") == ["p2", "p3"]
    assert await _names(http, PODS, fieldSelector="status.phase!=Pending") == ["p2"]
    assert await _names(http, PODS, fieldSelector="metadata.name=p3") == ["p3"]
    assert await _names(
        http, "/api/v1/pods", fieldSelector="metadata.namespace=default,status.phase=Pending"
    ) == ["p1", "p3"]
    pods = await core.list_namespaced_pod("default", field_selector="status.phase=Running")
    assert [p.metadata.name for p in pods.items] == ["p2"]


async def test_unsupported_field_selector_is_400(http: Http, core: client.CoreV1Api) -> None:
    status, body, _ = await http.get(PODS, params={"fieldSelector": "status.hostIP=1.2.3.4"})
    assert status == 400
    assert body["message"] == (
        'Unable to find "/v1, Resource=pods" that match label selector "", field selector '
        '"status.hostIP=1.2.3.4": field label not supported: status.hostIP'
    )
    status, body, _ = await http.get(CM, params={"fieldSelector": "data.x=1"})
    assert status == 400
    assert body["message"].endswith(
        '"data.x" is not a known field selector: only "metadata.name", "metadata.namespace"'
    )
    with pytest.raises(ApiException) as err:
        await core.list_namespaced_pod("default", field_selector="spec.bogus=1")
    assert err.value.status == 400


async def test_event_field_selectors(http: Http) -> None:
    ev = {
        "metadata": {"name": "e1"},
        "involvedObject": {"kind": "Pod", "name": "p1", "namespace": "default"},
        "reason": "Started",
        "type": "Normal",
        "message": "m",
    }
    await http.post("/api/v1/namespaces/default/events", ev)
    await http.post(
        "/api/v1/namespaces/default/events",
        {**ev, "metadata": {"name": "e2"}, "involvedObject": {"kind": "TFJob", "name": "j"}},
    )
    names = await _names(
        http,
        "/api/v1/namespaces/default/events",
        fieldSelector="involvedObject.kind=Pod,involvedObject.name=p1",
    )
    assert names == ["e1"]
    assert await _names(http, "/api/v1/namespaces/default/events", fieldSelector="reason=Started") == [
        "e1",
        "e2",
    ]


async def test_all_namespaces_list(http: Http) -> None:
    await http.post("/api/v1/namespaces", {"metadata": {"name": "other"}})
    await http.post(PODS, pod("x"))
    await http.post("/api/v1/namespaces/other/pods", pod("y"))
    status, body, _ = await http.get("/api/v1/pods")
    assert status == 200
    assert [(o["metadata"]["namespace"], o["metadata"]["name"]) for o in body["items"]] == [
        ("default", "x"),
        ("other", "y"),
    ]


async def test_pagination(http: Http) -> None:
    for i in range(7):
        await http.post(CM, configmap(f"cm{i}"))
    seen: list[str] = []
    params = {"limit": "3"}
    pages = 0
    while True:
        status, body, _ = await http.get(CM, params=params)
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


async def test_pagination_via_client(http: Http, core: client.CoreV1Api) -> None:
    for i in range(5):
        await http.post(CM, configmap(f"p{i}"))
    first = await core.list_namespaced_config_map("default", limit=2)
    assert len(first.items) == 2 and first.metadata._continue
    second = await core.list_namespaced_config_map("default", limit=10, _continue=first.metadata._continue)
    assert [c.metadata.name for c in second.items] == ["p2", "p3", "p4"]


async def test_expired_continue_token_is_410(server, http: Http) -> None:  # type: ignore[no-untyped-def]
    for i in range(3):
        await http.post(CM, configmap(f"e{i}"))
    _, body, _ = await http.get(CM, params={"limit": "1"})
    await http.post(CM, configmap("later"))
    server.compact()
    status, err, _ = await http.get(CM, params={"limit": "1", "continue": body["metadata"]["continue"]})
    assert status == 410 and err["reason"] == "Expired"


async def test_custom_resource_field_selector_only_metadata(http: Http) -> None:
    from .helpers import WIDGETS, install_widget_crd, widget

    await install_widget_crd(http)
    await http.post(WIDGETS, widget("w1"))
    await http.post(WIDGETS, widget("w2"))
    assert await _names(http, WIDGETS, fieldSelector="metadata.name!=w1") == ["w2"]
    status, _, _ = await http.get(WIDGETS, params={"fieldSelector": "spec.size=2"})
    assert status == 400
