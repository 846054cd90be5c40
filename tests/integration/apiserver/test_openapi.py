"""/openapi/v3 and /openapi/v2: documents, hashes and caching headers as kube-apiserver serves them."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from kubetrain.embedded.apiserver import EmbeddedAPIServer
from kubetrain.embedded.apiserver.openapi_proto import parse
from kubetrain.embedded.apiserver.openapi_proto3 import parse as parse_v3

from .conftest import _ssl_contexts
from .helpers import CRDS, Http, WidgetKind, eventually, install_widget_crd, wait_served

HASH = re.compile(r"[0-9A-F]{128}")


async def discovery(http: Http) -> dict[str, str]:
    status, body, headers = await http.get("/openapi/v3")
    assert status == 200, body
    assert headers["Cache-Control"] == "no-cache, private"
    return {k: v["serverRelativeURL"] for k, v in body["paths"].items()}


async def test_discovery_lists_group_versions_with_hash_urls(http: Http) -> None:
    paths = await discovery(http)
    for key in (
        "api/v1",
        "apis/apps/v1",
        "apis/batch/v1",
        "apis/apiextensions.k8s.io/v1",
        "api",
        "apis/batch",
    ):
        url = paths[key]
        prefix, _, digest = url.partition("?hash=")
        assert prefix == f"/openapi/v3/{key}" and HASH.fullmatch(digest), url


async def test_root_and_group_documents(http: Http) -> None:
    paths = await discovery(http)
    for key, path in (
        ("api", "/api/"),
        ("apis", "/apis/"),
        ("apis/batch", "/apis/batch/"),
        ("version", "/version/"),
    ):
        status, doc, _ = await http.get(paths[key])
        assert status == 200 and list(doc["paths"]) == [path], doc


async def test_group_version_document_and_caching(http: Http) -> None:
    url = (await discovery(http))["api/v1"]
    digest = url.partition("?hash=")[2]
    status, doc, headers = await http.get(url)
    assert status == 200
    assert headers["Content-Type"] == "application/json"
    assert headers["Etag"] == f'"{digest}"'
    assert headers["Cache-Control"] == "public, immutable"
    assert re.fullmatch(r"\w{3}, \d\d \w{3} \d{4} \d\d:\d\d:\d\d UTC", headers["Expires"])
    assert headers["Vary"] == "Accept"
    assert doc["openapi"] == "3.0.0"
    pod = doc["components"]["schemas"]["io.k8s.api.core.v1.Pod"]
    assert pod["x-kubernetes-group-version-kind"] == [{"group": "", "kind": "Pod", "version": "v1"}]
    containers = doc["components"]["schemas"]["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    patch = doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"]
    assert patch["x-kubernetes-group-version-kind"] == {"group": "", "kind": "Pod", "version": "v1"}
    assert "fieldValidation" in [p["name"] for p in patch["parameters"]]
    assert "application/strategic-merge-patch+json" in patch["requestBody"]["content"]

    status, _, headers = await http.get("/openapi/v3/api/v1")  # no hash: not cacheable
    assert status == 200 and headers["Cache-Control"] == "no-cache, private"
    assert headers["Etag"] == f'"{digest}"'
    status, body, _ = await http.get("/openapi/v3/api/v1", headers={"If-None-Match": f'"{digest}"'})
    assert status == 304 and body is None


async def test_stale_hash_redirects_and_unknown_group_version_is_404(http: Http) -> None:
    url = (await discovery(http))["apis/apps/v1"]
    async with http.session.get(http.base + "/openapi/v3/apis/apps/v1?hash=0123", allow_redirects=False) as r:
        assert r.status == 301
        assert r.headers["Location"] == url
    status, _, _ = await http.get("/openapi/v3/apis/no.such.group/v1")
    assert status == 404
    status, _, _ = await http.get("/openapi/v3/api/v1", headers={"Accept": "text/html"})
    assert status == 406


async def crd_document(http: Http, kind: WidgetKind) -> tuple[str, dict[str, Any]]:
    key = f"apis/{kind.group}/v1"

    async def published() -> bool:  # kube-apiserver publishes a new CRD asynchronously
        return key in await discovery(http)

    await eventually(published, timeout=30, interval=0.1)
    url = (await discovery(http))[key]
    status, doc, _ = await http.get(url)
    assert status == 200
    return url, doc


async def test_custom_resource_schema_as_apiextensions_publishes_it(http: Http, widgets: WidgetKind) -> None:
    _, doc = await crd_document(http, widgets)
    assert doc["info"] == {"title": "Kubernetes CRD Swagger", "version": "v0.1.0"}
    model = ".".join(reversed(widgets.group.split("."))) + ".v1.Widget"
    schema = doc["components"]["schemas"][model]
    assert schema["x-kubernetes-group-version-kind"] == [
        {"group": widgets.group, "kind": "Widget", "version": "v1"}
    ]
    props = schema["properties"]
    assert props["metadata"] == {
        "allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}],
        "description": "Standard object's metadata. More info: "
        "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
    }
    assert props["apiVersion"]["type"] == "string" and props["kind"]["type"] == "string"
    spec = props["spec"]["properties"]
    assert spec["size"] == {"type": "integer", "minimum": 1, "maximum": 10}
    assert spec["port"]["anyOf"] == [{"type": "integer"}, {"type": "string"}]
    assert spec["template"]["x-kubernetes-preserve-unknown-fields"] is True
    embedded = spec["embedded"]
    assert set(embedded["properties"]) == {"apiVersion", "kind", "metadata", "spec"}
    assert embedded["required"] == ["kind", "apiVersion"]
    assert "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" in doc["components"]["schemas"]
    assert f"{model}List" in doc["components"]["schemas"]
    base = f"/apis/{widgets.group}/v1/namespaces/{{namespace}}/widgets"
    assert set(doc["paths"]) == {
        f"/apis/{widgets.group}/v1/widgets",
        base,
        f"{base}/{{name}}",
        f"{base}/{{name}}/status",
        f"{base}/{{name}}/scale",
    }
    patch = doc["paths"][f"{base}/{{name}}"]["patch"]
    group_id = "".join(p.capitalize() for p in widgets.group.split("."))
    assert patch["operationId"] == f"patch{group_id}V1NamespacedWidget"
    assert patch["description"] == "partially update the specified Widget"
    assert sorted(patch["requestBody"]["content"]) == [
        "application/apply-patch+yaml",
        "application/json-patch+json",
        "application/merge-patch+json",
    ]
    assert [p["name"] for p in patch["parameters"]] == ["dryRun", "fieldManager", "fieldValidation", "force"]
    scale = doc["paths"][f"{base}/{{name}}/scale"]["put"]
    assert scale["operationId"] == f"replace{group_id}V1NamespacedWidgetScale"
    assert "io.k8s.api.autoscaling.v1.Scale" in doc["components"]["schemas"]


async def test_document_hash_follows_the_crd(http: Http, widgets: WidgetKind) -> None:
    before, _ = await crd_document(http, widgets)
    core_before = (await discovery(http))["api/v1"]
    _, crd, _ = await http.get(f"{CRDS}/{widgets.crd_name}")
    props = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    props["colour"] = {"type": "string", "description": "a new field"}
    status, body, _ = await http.put(f"{CRDS}/{widgets.crd_name}", crd)
    assert status == 200, body
    await wait_served(http, widgets)
    after, doc = before, {}

    async def republished() -> bool:  # asynchronously on the real server
        nonlocal after, doc
        after, doc = await crd_document(http, widgets)
        return after != before

    await eventually(republished, timeout=30, interval=0.1)
    model = ".".join(reversed(widgets.group.split("."))) + ".v1.Widget"
    spec = doc["components"]["schemas"][model]["properties"]["spec"]["properties"]
    assert spec["colour"] == {"type": "string", "description": "a new field"}
    assert (await discovery(http))["api/v1"] == core_before


@pytest.mark.parametrize("accept", ["application/json", "*/*"])
async def test_v2_json(http: Http, accept: str) -> None:
    status, doc, headers = await http.get("/openapi/v2", headers={"Accept": accept})
    assert status == 200
    assert headers["Content-Type"] == "application/json" and HASH.fullmatch(headers["Etag"].strip('"'))
    assert doc["swagger"] == "2.0"
    spec = doc["definitions"]["io.k8s.api.batch.v1.JobSpec"]["properties"]["template"]
    assert spec["$ref"] == "#/definitions/io.k8s.api.core.v1.PodTemplateSpec"
    patch = doc["paths"]["/apis/batch/v1/namespaces/{namespace}/jobs/{name}"]["patch"]
    assert patch["x-kubernetes-group-version-kind"] == {"group": "batch", "kind": "Job", "version": "v1"}
    assert "application/strategic-merge-patch+json" in patch["consumes"]


async def test_v2_protobuf_as_kubectl_requests_it(http: Http) -> None:
    accept = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
    async with http.session.get(http.base + "/openapi/v2", headers={"Accept": accept}) as resp:
        assert resp.status == 200
        assert resp.headers["Content-Type"] == "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
        etag = resp.headers["Etag"]
        data = await resp.read()
    _, _, headers = await http.get("/openapi/v2", headers={"Accept": "application/json"})
    assert headers["Etag"] == etag  # one document, two encodings
    doc = parse(data)
    assert doc.swagger == "2.0"
    defs = {d.name: d.value for d in doc.definitions.additional_properties}
    pod = defs["io.k8s.api.core.v1.Pod"]
    ext = {e.name: yaml.safe_load(e.value.yaml) for e in pod.vendor_extension}
    assert ext["x-kubernetes-group-version-kind"] == [{"group": "", "kind": "Pod", "version": "v1"}]
    spec = {p.name: p.value for p in defs["io.k8s.api.core.v1.PodSpec"].properties.additional_properties}
    assert spec["containers"].type.value == ["array"]
    assert spec["containers"].items.schema[0]._ref == "#/definitions/io.k8s.api.core.v1.Container"
    paths = {p.name: p.value for p in doc.paths.path}
    patch = paths["/api/v1/namespaces/{namespace}/pods/{name}"].patch
    assert patch.operation_id == "patchCoreV1NamespacedPod"
    assert "application/strategic-merge-patch+json" in patch.consumes


def _subset(
    real: dict[str, Any], ours: dict[str, Any], section: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The entries of ``section`` the embedded document has, from both documents."""
    mine = ours.get(section) or {}
    return {k: v for k, v in (real.get(section) or {}).items() if k in mine}, mine


async def test_documents_equal_kube_apiservers(real_kubeconfig: Path, suffix: str) -> None:
    """Differential: what the embedded server publishes is what kube-apiserver publishes, entry by
    entry (it serves fewer kinds): v3 paths and schemas, v2 paths and definitions, CRDs included."""
    url, ctx, _ = await _ssl_contexts(real_kubeconfig)
    srv = EmbeddedAPIServer()
    await srv.start()
    kind = WidgetKind(f"d{suffix}.example.com", "default")
    async with (
        aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx)) as real_session,
        aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(ssl=srv.client_ssl_context()),
            headers={"Authorization": f"Bearer {srv.token}"},
        ) as ours_session,
    ):
        real, ours = Http(url, real_session), Http(srv.url, ours_session)
        try:
            for http in (real, ours):
                await install_widget_crd(http, kind)
            for key in ("api/v1", "apis/batch/v1", "apis/apps/v1", f"apis/{kind.group}/v1"):
                docs = []
                for http in (real, ours):
                    await crd_document(http, kind)  # waits until the CRD is published
                    _, doc, _ = await http.get((await discovery(http))[key])
                    docs.append(doc)
                real_paths, our_paths = _subset(docs[0], docs[1], "paths")
                assert real_paths == our_paths, key
                real_schemas, our_schemas = _subset(docs[0]["components"], docs[1]["components"], "schemas")
                assert real_schemas == our_schemas, key
            v2 = [(await http.get("/openapi/v2"))[1] for http in (real, ours)]
            assert _subset(v2[0], v2[1], "paths")[0] == v2[1]["paths"]
            assert _subset(v2[0], v2[1], "definitions")[0] == v2[1]["definitions"]
        finally:
            await real.delete(f"{CRDS}/{kind.crd_name}")
            await srv.stop()


async def test_v3_protobuf(http: Http) -> None:
    url = (await discovery(http))["apis/batch/v1"]
    accept = "application/com.github.proto-openapi.spec.v3@v1.0+protobuf"
    async with http.session.get(http.base + url, headers={"Accept": accept}) as resp:
        assert resp.status == 200
        assert resp.headers["Content-Type"] == "application/com.github.proto-openapi.spec.v3.v1.0+protobuf"
        assert resp.headers["Etag"] == f'"{url.partition("?hash=")[2]}"'
        data = await resp.read()
    doc = parse_v3(data)
    assert doc.openapi == "3.0.0"
    schemas = {s.name: s.value for s in doc.components.schemas.additional_properties}
    job = schemas["io.k8s.api.batch.v1.Job"].schema
    ext = {e.name: yaml.safe_load(e.value.yaml) for e in job.specification_extension}
    assert ext["x-kubernetes-group-version-kind"] == [{"group": "batch", "kind": "Job", "version": "v1"}]
    paths = {p.name: p.value for p in doc.paths.path}
    assert (
        paths["/apis/batch/v1/namespaces/{namespace}/jobs/{name}"].patch.operation_id
        == "patchBatchV1NamespacedJob"
    )
