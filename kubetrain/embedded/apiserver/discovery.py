"""Discovery documents (/api, /apis, group and resource lists) generated from the catalog."""

from __future__ import annotations

from typing import Any

from .resources import ResourceCatalog, ResourceType

_SUB_VERBS = {
    "status": ["get", "patch", "update"],
    "scale": ["get", "patch", "update"],
    "log": ["get"],
    "binding": ["create"],
    "token": ["create"],
    "finalize": ["update"],
}

VERSION_INFO = {
    "major": "1",
    "minor": "31",
    "gitVersion": "v1.31.0+kubetrain",
    "gitCommit": "kubetrain",
    "gitTreeState": "clean",
    "buildDate": "2024-08-13T00:00:00Z",
    "goVersion": "go1.22.5",
    "compiler": "gc",
    "platform": "linux/amd64",
}


def api_versions(server_address: str) -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    }


def _group(catalog: ResourceCatalog, name: str) -> dict[str, Any] | None:
    found = catalog.group_versions(name)
    if found is None:
        return None
    versions, preferred = found
    gv = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {
        "name": name,
        "versions": gv,
        "preferredVersion": {"groupVersion": f"{name}/{preferred}", "version": preferred},
    }


def api_group_list(catalog: ResourceCatalog) -> dict[str, Any]:
    groups = [g for g in (_group(catalog, n) for n in catalog.group_names() if n) if g]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(catalog: ResourceCatalog, name: str) -> dict[str, Any] | None:
    group = _group(catalog, name)
    if group is None:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **group}


def _entries(rt: ResourceType) -> list[dict[str, Any]]:
    main: dict[str, Any] = {
        "name": rt.plural,
        "singularName": rt.singular_name,
        "namespaced": rt.namespaced,
        "kind": rt.kind,
        "verbs": list(rt.verbs),
    }
    if rt.short_names:
        main["shortNames"] = list(rt.short_names)
    if rt.categories:
        main["categories"] = list(rt.categories)
    out = [main]
    for sub in sorted(rt.subresources):
        entry: dict[str, Any] = {
            "name": f"{rt.plural}/{sub}",
            "singularName": "",
            "namespaced": rt.namespaced,
            "kind": rt.kind,
            "verbs": _SUB_VERBS.get(sub, ["get"]),
        }
        if sub == "scale":
            entry.update(group="autoscaling", version="v1", kind="Scale")
        elif sub == "binding":
            entry["kind"] = "Binding"
        elif sub == "token":
            entry.update(group="authentication.k8s.io", version="v1", kind="TokenRequest")
        out.append(entry)
    return out


def resource_list(catalog: ResourceCatalog, group: str, version: str) -> dict[str, Any] | None:
    types = catalog.types_in(group, version)
    if not types:
        return None
    resources = [e for rt in types for e in _entries(rt)]
    resources.sort(key=lambda e: e["name"])
    gv = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}
