"""Server-side printing: the Table kubectl asks for, with kube-apiserver's columns and cells per kind."""

from __future__ import annotations

import re
from typing import Any

import pytest

from .helpers import CRDS, NS, Cleanup, Http, Unique, WidgetKind, configmap, install_widget_crd, pod

TABLE = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"}
NAME = ("Name", "string", "name", 0)
AGE = ("Age", "string", "", 0)


async def table(http: Http, path: str) -> dict[str, Any]:
    status, body, _ = await http.get(path, headers=TABLE)
    assert status == 200, body
    assert body["kind"] == "Table" and body["apiVersion"] == "meta.k8s.io/v1"
    return body  # type: ignore[no-any-return]


def columns(tbl: dict[str, Any]) -> list[tuple[str, str, str, int]]:
    return [(c["name"], c["type"], c["format"], c["priority"]) for c in tbl["columnDefinitions"]]


def row(tbl: dict[str, Any], name: str) -> dict[str, Any]:
    names = [c["name"] for c in tbl["columnDefinitions"]]
    for r in tbl["rows"]:
        cells = dict(zip(names, r["cells"], strict=True))
        if cells["Name"] == name:
            return cells
    raise AssertionError(f"no row {name}")


def s(name: str, priority: int = 0) -> tuple[str, str, str, int]:
    return (name, "string", "", priority)


POD_COLUMNS = [
    NAME,
    s("Ready"),
    s("Status"),
    s("Restarts"),
    AGE,
    s("IP", 1),
    s("Node", 1),
    s("Nominated Node", 1),
    s("Readiness Gates", 1),
]


async def test_pod_columns_including_wide(http: Http, ns: NS, unique: Unique) -> None:
    await http.post(ns.pods, pod("p", containers=[{"name": "a", "image": "i"}, {"name": "b", "image": "i"}]))
    node = unique("n", cleanup="/api/v1/nodes")
    await http.post("/api/v1/nodes", {"metadata": {"name": node}})
    await http.post(
        f"{ns.pods}/p/binding", {"metadata": {"name": "p"}, "target": {"kind": "Node", "name": node}}
    )
    await http.patch(f"{ns.pods}/p/status", {"status": {"phase": "Running", "podIP": "10.1.2.3"}})
    tbl = await table(http, ns.pods)
    assert columns(tbl) == POD_COLUMNS
    cells = row(tbl, "p")
    assert (cells["Ready"], cells["Status"], cells["Restarts"]) == ("0/2", "Running", "0")
    assert (cells["IP"], cells["Node"], cells["Nominated Node"], cells["Readiness Gates"]) == (
        "10.1.2.3",
        node,
        "<none>",
        "<none>",
    )
    assert re.fullmatch(r"\d+s", cells["Age"])
    await http.delete(f"{ns.pods}/p", params={"gracePeriodSeconds": "0"})


async def test_configmap_secret_namespace_lease_columns(http: Http, ns: NS) -> None:
    await http.post(ns.configmaps, configmap("c", {"a": "1", "b": "2"}))
    tbl = await table(http, ns.configmaps)
    assert columns(tbl) == [NAME, s("Data"), AGE]
    assert row(tbl, "c")["Data"] == 2
    await http.post(ns.path("secrets"), {"metadata": {"name": "sec"}, "stringData": {"a": "b"}})
    tbl = await table(http, ns.path("secrets"))
    assert columns(tbl) == [NAME, s("Type"), s("Data"), AGE]
    assert (row(tbl, "sec")["Type"], row(tbl, "sec")["Data"]) == ("Opaque", 1)
    tbl = await table(http, "/api/v1/namespaces")
    assert columns(tbl) == [NAME, s("Status"), AGE]
    assert row(tbl, ns.name)["Status"] == "Active"
    leases = ns.path("leases", "coordination.k8s.io/v1")
    await http.post(leases, {"metadata": {"name": "l"}, "spec": {"holderIdentity": "me"}})
    tbl = await table(http, leases)
    assert columns(tbl) == [NAME, s("Holder"), AGE]
    assert row(tbl, "l")["Holder"] == "me"
    tbl = await table(http, ns.path("serviceaccounts"))
    assert columns(tbl) == [NAME, AGE]


async def test_service_columns(http: Http, ns: NS) -> None:
    svc = {
        "metadata": {"name": "s"},
        "spec": {
            "selector": {"app": "x"},
            "ports": [{"name": "a", "port": 80}, {"name": "b", "port": 53, "protocol": "UDP"}],
        },
    }
    _, created, _ = await http.post(ns.path("services"), svc)
    headless = {"metadata": {"name": "h"}, "spec": {"clusterIP": "None", "ports": [{"port": 80}]}}
    await http.post(ns.path("services"), headless)
    tbl = await table(http, ns.path("services"))
    assert columns(tbl) == [
        NAME,
        s("Type"),
        s("Cluster-IP"),
        s("External-IP"),
        s("Port(s)"),
        AGE,
        s("Selector", 1),
    ]
    cells = row(tbl, "s")
    assert (cells["Type"], cells["Cluster-IP"], cells["External-IP"]) == (
        "ClusterIP",
        created["spec"]["clusterIP"],
        "<none>",
    )
    assert (cells["Port(s)"], cells["Selector"]) == ("80/TCP,53/UDP", "app=x")
    cells = row(tbl, "h")
    assert (cells["Cluster-IP"], cells["Port(s)"], cells["Selector"]) == ("None", "80/TCP", "<none>")


async def test_node_columns(http: Http, unique: Unique) -> None:
    name = unique("n", cleanup="/api/v1/nodes")
    await http.post("/api/v1/nodes", {"metadata": {"name": name}})
    tbl = await table(http, f"/api/v1/nodes?fieldSelector=metadata.name={name}")
    assert columns(tbl) == [
        NAME,
        s("Status"),
        s("Roles"),
        AGE,
        s("Version"),
        s("Internal-IP", 1),
        s("External-IP", 1),
        s("OS-Image", 1),
        s("Kernel-Version", 1),
        s("Container-Runtime", 1),
    ]
    cells = row(tbl, name)
    assert (cells["Status"], cells["Roles"], cells["Version"], cells["Internal-IP"], cells["OS-Image"]) == (
        "Unknown",
        "<none>",
        "",
        "<none>",
        "<unknown>",
    )


EVENT_COLUMNS = [
    s("Last Seen"),
    s("Type"),
    s("Reason"),
    s("Object"),
    s("Subobject", 1),
    s("Source", 1),
    s("Message"),
    s("First Seen", 1),
    s("Count", 1),
    ("Name", "string", "name", 1),
]


async def test_event_columns_put_the_name_last(http: Http, ns: NS) -> None:
    ev = {
        "metadata": {"name": "e"},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": ns.name},
        "reason": "Started",
        "message": "hello",
        "type": "Normal",
        "source": {"component": "kubelet"},
    }
    await http.post(ns.path("events"), ev)
    tbl = await table(http, ns.path("events"))
    assert columns(tbl) == EVENT_COLUMNS
    names = [c["name"] for c in tbl["columnDefinitions"]]
    (cells,) = [dict(zip(names, r["cells"], strict=True)) for r in tbl["rows"] if r["cells"][-1] == "e"]
    assert (cells["Type"], cells["Reason"], cells["Object"], cells["Message"]) == (
        "Normal",
        "Started",
        "pod/p",
        "hello",
    )
    assert (cells["Source"], cells["Count"]) == ("kubelet", 1)
    tbl = await table(http, ns.path("events", "events.k8s.io/v1"))
    assert columns(tbl) == EVENT_COLUMNS


async def test_workload_columns(http: Http, ns: NS) -> None:
    template = {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "img:1"}]}}
    deployments = ns.path("deployments", "apps/v1")
    spec = {"replicas": 0, "selector": {"matchLabels": {"a": "b"}}, "template": template}
    await http.post(deployments, {"metadata": {"name": "d"}, "spec": spec})
    tbl = await table(http, deployments)
    assert columns(tbl) == [
        NAME,
        s("Ready"),
        s("Up-to-date"),
        s("Available"),
        AGE,
        s("Containers", 1),
        s("Images", 1),
        s("Selector", 1),
    ]
    cells = row(tbl, "d")
    assert (cells["Ready"], cells["Containers"], cells["Images"], cells["Selector"]) == (
        "0/0",
        "c",
        "img:1",
        "a=b",
    )
    jobs = ns.path("jobs", "batch/v1")
    job_template = {"spec": {"containers": [{"name": "c", "image": "img:1"}], "restartPolicy": "Never"}}
    await http.post(jobs, {"metadata": {"name": "j"}, "spec": {"suspend": True, "template": job_template}})
    tbl = await table(http, jobs)
    assert columns(tbl) == [
        NAME,
        s("Status"),
        s("Completions"),
        s("Duration"),
        AGE,
        s("Containers", 1),
        s("Images", 1),
        s("Selector", 1),
    ]
    assert row(tbl, "j")["Completions"] == "0/1" and row(tbl, "j")["Containers"] == "c"


async def test_custom_resource_columns(http: Http, ns: NS, widget_kind: WidgetKind, cleanup: Cleanup) -> None:
    """The CRD's printer columns replace Age; without any, Age is a `date` column (shown as an age)."""
    await install_widget_crd(http, widget_kind)
    await http.post(widget_kind.collection, widget_kind.obj("w", size=3))
    tbl = await table(http, widget_kind.collection)
    assert columns(tbl) == [NAME, ("Size", "integer", "", 0)]
    assert row(tbl, "w")["Size"] == 3
    plain = WidgetKind(widget_kind.group, ns.name, plural="gizmos", kind="Gizmo")
    crd = plain.crd()
    del crd["spec"]["versions"][0]["additionalPrinterColumns"]
    cleanup(f"{CRDS}/{plain.crd_name}")
    await install_widget_crd(http, plain, crd)
    await http.post(plain.collection, plain.obj("g"))
    tbl = await table(http, plain.collection)
    assert columns(tbl) == [NAME, ("Age", "date", "", 0)]
    assert re.fullmatch(r"\d+s", row(tbl, "g")["Age"])
    tbl = await table(http, f"{CRDS}?fieldSelector=metadata.name={plain.crd_name}")
    assert columns(tbl) == [NAME, ("Created At", "date", "", 0)]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", row(tbl, plain.crd_name)["Created At"])


@pytest.mark.parametrize("include", ["None", "Object", "Metadata"])
async def test_include_object(http: Http, ns: NS, include: str) -> None:
    await http.post(ns.configmaps, configmap("c"))
    tbl = await table(http, f"{ns.configmaps}/c?includeObject={include}")
    (r,) = tbl["rows"]
    if include == "None":
        assert "object" not in r or r["object"] is None
    elif include == "Object":
        assert r["object"]["kind"] == "ConfigMap" and r["object"]["metadata"]["name"] == "c"
    else:
        assert (
            r["object"]["kind"] == "PartialObjectMetadata" and r["object"]["apiVersion"] == "meta.k8s.io/v1"
        )
