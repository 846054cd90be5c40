"""Discovery: what kubectl and client libraries read before anything else."""

from __future__ import annotations

from kubernetes_asyncio import client

from .helpers import Http, WidgetKind, eventually, install_widget_crd


async def test_version(http: Http) -> None:
    status, body, _ = await http.get("/version")
    assert status == 200
    assert body["major"] == "1" and body["gitVersion"].startswith("v1.")


async def test_version_via_client(api: client.ApiClient) -> None:
    info = await client.VersionApi(api).get_code()
    assert info.major == "1"


async def test_core_api_versions_and_resources(http: Http) -> None:
    status, body, _ = await http.get("/api")
    assert status == 200 and body["kind"] == "APIVersions" and body["versions"] == ["v1"]
    status, body, _ = await http.get("/api/v1")
    assert body["kind"] == "APIResourceList" and body["groupVersion"] == "v1"
    by_name = {r["name"]: r for r in body["resources"]}
    pods = by_name["pods"]
    assert pods["namespaced"] is True and pods["kind"] == "Pod" and pods["shortNames"] == ["po"]
    assert set(pods["verbs"]) == {
        "create",
        "delete",
        "deletecollection",
        "get",
        "list",
        "patch",
        "update",
        "watch",
    }
    assert by_name["pods/status"]["verbs"] == ["get", "patch", "update"]
    assert by_name["pods/log"]["verbs"] == ["get"]
    assert by_name["pods/binding"]["kind"] == "Binding"
    assert by_name["namespaces"]["namespaced"] is False
    assert by_name["nodes"]["namespaced"] is False
    for name in ("services", "configmaps", "secrets", "events", "serviceaccounts", "endpoints"):
        assert name in by_name


async def test_group_list_and_group_versions(http: Http) -> None:
    status, body, _ = await http.get("/apis")
    assert body["kind"] == "APIGroupList"
    names = {g["name"] for g in body["groups"]}
    assert {
        "apps",
        "batch",
        "coordination.k8s.io",
        "rbac.authorization.k8s.io",
        "autoscaling",
        "apiextensions.k8s.io",
        "events.k8s.io",
        "admissionregistration.k8s.io",
    } <= names
    status, body, _ = await http.get("/apis/apps")
    assert status == 200
    assert body["kind"] == "APIGroup" and body["preferredVersion"]["groupVersion"] == "apps/v1"
    status, body, _ = await http.get("/apis/apps/v1")
    assert status == 200
    scale = next(r for r in body["resources"] if r["name"] == "deployments/scale")
    assert scale["group"] == "autoscaling" and scale["version"] == "v1" and scale["kind"] == "Scale"


async def test_custom_group_appears_once_crd_is_established(http: Http, widget_kind: WidgetKind) -> None:
    group = widget_kind.group
    status, _, _ = await http.get(f"/apis/{group}/v1")
    assert status == 404
    await install_widget_crd(http, widget_kind)

    async def listed() -> bool:  # aggregated discovery catches up asynchronously
        _, body, _ = await http.get("/apis")
        return group in {g["name"] for g in body["groups"]}

    await eventually(listed)
    status, body, _ = await http.get(f"/apis/{group}/v1")
    assert status == 200
    names = {r["name"] for r in body["resources"]}
    assert names == {"widgets", "widgets/status", "widgets/scale"}
    widgets = next(r for r in body["resources"] if r["name"] == "widgets")
    assert (
        widgets["shortNames"] == ["wd"]
        and widgets["categories"] == ["all"]
        and widgets["singularName"] == "widget"
    )


async def test_unknown_paths_are_404(http: Http, widgets: WidgetKind) -> None:
    """Paths of /api and the built-in groups answer a Status; the rest of the delegation chain
    (unknown groups, custom resources' groups) ends in the mux's plain-text 404."""
    for path in ("/api/v1/frobs", "/api/v1/namespaces/default/nodes", "/apis/apps/v9", "/apis/apps/v1/frobs"):
        status, body, _ = await http.get(path)
        assert status == 404, path
        assert body == {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": "the server could not find the requested resource",
            "reason": "NotFound",
            "details": {},
            "code": 404,
        }
    for path in ("/apis/nope.io/v1", "/apis/nope.io", f"/apis/{widgets.group}/v2", "/nope"):
        status, body, headers = await http.get(path)
        assert (status, body) == (404, "404 page not found\n"), path
        assert headers["Content-Type"].startswith("text/plain")


async def test_namespaces_cannot_be_deleted_as_a_collection(http: Http) -> None:
    _, body, _ = await http.get("/api/v1")
    namespaces = next(r for r in body["resources"] if r["name"] == "namespaces")
    assert "deletecollection" not in namespaces["verbs"]
    assert set(namespaces["verbs"]) == {"create", "delete", "get", "list", "patch", "update", "watch"}
    status, body, _ = await http.delete("/api/v1/namespaces")
    assert status == 405 and body["reason"] == "MethodNotAllowed"
    webhooks = await http.get("/apis/admissionregistration.k8s.io/v1")
    by_name = {r["name"]: r for r in webhooks[1]["resources"]}
    assert by_name["validatingwebhookconfigurations"]["categories"] == ["api-extensions"]
