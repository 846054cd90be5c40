"""CustomResourceDefinitions of the job kinds, generated from their wire types.

Nothing here is written per kind: names, subresources and the spec schema come from a `KindInfo`,
so every registered kind (`kubetrain.kinds.registry`) gets its CRD by being registered. The
output is deterministic (keys sorted at every level, like controller-gen) so the committed files in
`manifests/crds/` can be checked for drift:

    python -m kubetrain.kinds.crds --write manifests/crds   # regenerate
    python -m kubetrain.kinds.crds --check manifests/crds   # exit 1 if the files differ

(`python -m kubetrain.api.crds` runs the same command.)
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from kubetrain.api.kinds import KindInfo
from kubetrain.api.schema import Schema, schema_for_dataclass


def object_schema(info: KindInfo) -> Schema:
    """The openAPIV3Schema of one kind/version."""
    return {
        "description": f"{info.kind} is the Schema for the {info.plural} API.",
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": schema_for_dataclass(info.spec_type),
            "status": schema_for_dataclass(info.status_type),
        },
    }


def subresources(info: KindInfo) -> dict[str, Any]:
    out: dict[str, Any] = {"status": {}}
    if info.scale_subresource:
        rtype = info.scale_replica_type
        out["scale"] = {
            "specReplicasPath": f".spec.{info.replica_specs_field}.{rtype}.replicas",
            "statusReplicasPath": f".status.replicaStatuses.{rtype}.active",
            "labelSelectorPath": f".status.replicaStatuses.{rtype}.selector",
        }
    return out


def version_entry(info: KindInfo, *, storage: bool = True) -> dict[str, Any]:
    return {
        "name": info.version,
        "served": True,
        "storage": storage,
        "additionalPrinterColumns": [
            {"jsonPath": path, "name": name, "type": kind} for path, name, kind in info.printer_columns
        ],
        "schema": {"openAPIV3Schema": object_schema(info)},
        "subresources": subresources(info),
    }


def crd_for(infos: Iterable[KindInfo]) -> dict[str, Any]:
    """One CRD serving every given version of a single kind; the first version is the storage one."""
    versions = list(infos)
    if not versions:
        raise ValueError("crd_for needs at least one KindInfo")
    head = versions[0]
    if any(v.crd_name != head.crd_name or v.kind != head.kind for v in versions):
        raise ValueError("all versions of a CRD must share kind, plural and group")
    names: dict[str, Any] = {
        "kind": head.kind,
        "listKind": head.list_kind,
        "plural": head.plural,
        "singular": head.singular,
    }
    if head.short_names:
        names["shortNames"] = list(head.short_names)
    if head.categories:
        names["categories"] = list(head.categories)
    entries = [version_entry(v, storage=i == 0) for i, v in enumerate(versions)]
    if len(entries) > 1:
        _superset_specs(entries)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": head.crd_name},
        "spec": {
            "group": head.group,
            "names": names,
            "scope": "Namespaced" if head.namespaced else "Cluster",
            "versions": entries,
        },
    }


def _without_defaults(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _without_defaults(v) for k, v in node.items() if k != "default"}
    if isinstance(node, list):
        return [_without_defaults(v) for v in node]
    return node


def _superset_specs(entries: list[dict[str, Any]]) -> None:
    """Let every version's spec schema admit the other versions' spec fields.

    A multi-version CRD with conversion strategy None only rewrites apiVersion, and the API
    server prunes fields unknown to the version a request uses: without the superset, editing a
    job through the other version would silently drop its version-specific fields. Fields taken
    from another version carry no default, so a version's defaults (and only its own) are what
    a write through it adds (see kubetrain.kinds.mpijob.conversion).
    """
    specs = [e["schema"]["openAPIV3Schema"]["properties"]["spec"] for e in entries]
    for spec in specs:
        own = spec.setdefault("properties", {})
        for other in specs:
            for key, node in other.get("properties", {}).items():
                if key not in own:
                    own[key] = _without_defaults(node)


def file_name(info: KindInfo) -> str:
    """Upstream's file name, e.g. `kubeflow.org_pytorchjobs.yaml`."""
    return f"{info.group}_{info.plural}.yaml"


def render(crd: dict[str, Any]) -> str:
    body = yaml.safe_dump(crd, sort_keys=True, default_flow_style=False, width=100, allow_unicode=True)
    return "---\n" + body


def generate(kinds: Iterable[KindInfo]) -> dict[str, str]:
    """File name -> YAML text for these kinds (versions of one CRD grouped together)."""
    grouped: dict[str, list[KindInfo]] = {}
    for info in kinds:
        grouped.setdefault(info.crd_name, []).append(info)
    return {file_name(infos[0]): render(crd_for(infos)) for infos in grouped.values()}


def drift(directory: Path, files: dict[str, str]) -> list[str]:
    """File names whose committed content differs from the generated one (or that are missing)."""
    out = []
    for name, text in sorted(files.items()):
        path = directory / name
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            out.append(name)
    return out


if __name__ == "__main__":
    # The registry sits above this layer, so the command that knows every kind lives there; it is
    # looked up only when this module runs as the old command, never when it is imported.
    sys.exit(importlib.import_module("kubetrain.kinds.crds").main())
