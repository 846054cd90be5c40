"""CustomResourceDefinitions: validation, establishing, and turning a CRD into served types.

Establishing is synchronous: the CRD is stored with NamesAccepted and Established already True,
so a client that waits for Established (as kubectl and controllers do) proceeds at once.
"""

from __future__ import annotations

from typing import Any

from .errors import FieldError
from .jsonutil import clone
from .meta import now
from .resources import CRD_KEY, CustomInfo, ResourceCatalog, ResourceType, ScalePaths
from .schema import apply_defaults
from .store import Event, Store

CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"


def _names(crd: dict[str, Any]) -> dict[str, Any]:
    names = (crd.get("spec") or {}).get("names") or {}
    return names if isinstance(names, dict) else {}


def default_crd(crd: dict[str, Any]) -> None:
    """apiextensions defaults: singular and listKind names, conversion strategy None."""
    spec = crd.setdefault("spec", {})
    names = spec.setdefault("names", {})
    if names.get("kind"):
        names.setdefault("singular", str(names["kind"]).lower())
        names.setdefault("listKind", f"{names['kind']}List")
    spec.setdefault("conversion", {"strategy": "None"})
    for version in spec.get("versions") or ():
        if isinstance(version, dict):
            version.setdefault("served", True)
            version.setdefault("storage", False)


def crd_errors(crd: dict[str, Any]) -> list[FieldError]:
    """The CRD spec checks clients hit most (ValidateCustomResourceDefinition, abridged)."""
    errs: list[FieldError] = []
    spec = crd.get("spec") or {}
    names = _names(crd)
    group, plural = spec.get("group"), names.get("plural")
    if not group:
        errs.append(FieldError("FieldValueRequired", "spec.group"))
    if not plural:
        errs.append(FieldError("FieldValueRequired", "spec.names.plural"))
    if not names.get("kind"):
        errs.append(FieldError("FieldValueRequired", "spec.names.kind"))
    name = (crd.get("metadata") or {}).get("name", "")
    if group and plural and name != f"{plural}.{group}":
        errs.append(
            FieldError("FieldValueInvalid", "metadata.name", name, 'must be spec.names.plural+"."+spec.group')
        )
    scope = spec.get("scope")
    if not scope:
        errs.append(FieldError("FieldValueRequired", "spec.scope"))
    elif scope not in ("Cluster", "Namespaced"):
        errs.append(
            FieldError(
                "FieldValueNotSupported", "spec.scope", scope, 'supported values: "Cluster", "Namespaced"'
            )
        )
    versions = [v for v in spec.get("versions") or () if isinstance(v, dict)]
    if not versions:
        errs.append(FieldError("FieldValueRequired", "spec.versions", detail="must have exactly one version"))
    elif sum(1 for v in versions if v.get("storage")) != 1:
        errs.append(
            FieldError(
                "FieldValueInvalid",
                "spec.versions",
                [v.get("name") for v in versions],
                "must have exactly one version marked as storage version",
            )
        )
    for i, version in enumerate(versions):
        if not version.get("name"):
            errs.append(FieldError("FieldValueRequired", f"spec.versions[{i}].name"))
        if not ((version.get("schema") or {}).get("openAPIV3Schema")):
            errs.append(
                FieldError(
                    "FieldValueRequired",
                    f"spec.versions[{i}].schema.openAPIV3Schema",
                    detail="schemas are required",
                )
            )
    return errs


def crd_status(crd: dict[str, Any], old: dict[str, Any] | None, catalog: ResourceCatalog) -> dict[str, Any]:
    """Conditions, acceptedNames and storedVersions as the establishing controllers set them."""
    spec = crd.get("spec") or {}
    names = _names(crd)
    group = spec.get("group", "")
    key = f"{names.get('plural')}.{group}"
    clash = catalog.plural_taken(group, names.get("plural", ""), names.get("kind", ""), key)
    ts = now()
    prev = {c.get("type"): c for c in ((old or {}).get("status") or {}).get("conditions") or ()}

    def cond(type_: str, ok: bool, reason: str, message: str) -> dict[str, Any]:
        status = "True" if ok else "False"
        before = prev.get(type_)
        when = before["lastTransitionTime"] if before and before.get("status") == status else ts
        return {
            "type": type_,
            "status": status,
            "lastTransitionTime": when,
            "reason": reason,
            "message": message,
        }

    conditions = [
        cond(
            "NamesAccepted",
            not clash,
            "PluralConflict" if clash else "NoConflicts",
            f'"{names.get("plural")}" is already in use' if clash else "no conflicts found",
        ),
        cond(
            "Established",
            not clash,
            "NotAccepted" if clash else "InitialNamesAccepted",
            "not all names are accepted" if clash else "the initial names have been accepted",
        ),
    ]
    if (crd.get("metadata") or {}).get("deletionTimestamp"):
        conditions.append(
            cond("Terminating", True, "InstanceDeletionInProgress", "CustomResource deletion is in progress")
        )
    accepted = {
        k: names[k]
        for k in ("plural", "singular", "shortNames", "kind", "listKind", "categories")
        if k in names
    }
    stored = list(((old or {}).get("status") or {}).get("storedVersions") or ())
    storage = next((v["name"] for v in spec.get("versions") or () if v.get("storage")), None)
    if storage and storage not in stored:
        stored.append(storage)
    return {
        "conditions": conditions,
        "acceptedNames": accepted if not clash else {},
        "storedVersions": stored,
    }


def is_established(crd: dict[str, Any]) -> bool:
    return any(
        c.get("type") == "Established" and c.get("status") == "True"
        for c in (crd.get("status") or {}).get("conditions") or ()
    )


def types_for(crd: dict[str, Any]) -> tuple[list[ResourceType], ResourceType | None]:
    """One ResourceType per served version, plus the storage version's type."""
    spec = crd.get("spec") or {}
    names = _names(crd)
    crd_name = crd["metadata"]["name"]
    strategy = (spec.get("conversion") or {}).get("strategy", "None")
    versions = [v for v in spec.get("versions") or () if isinstance(v, dict)]
    storage_version = next((v["name"] for v in versions if v.get("storage")), versions[0]["name"])
    served: list[ResourceType] = []
    storage_type: ResourceType | None = None
    for v in versions:
        subs = v.get("subresources") or {}
        scale = subs.get("scale")
        rt = ResourceType(
            group=spec["group"],
            version=v["name"],
            kind=names["kind"],
            plural=names["plural"],
            namespaced=spec.get("scope") == "Namespaced",
            short_names=tuple(names.get("shortNames") or ()),
            subresources=frozenset(k for k in ("status", "scale") if subs.get(k) is not None),
            categories=tuple(names.get("categories") or ()),
            scale=ScalePaths(
                scale.get("specReplicasPath", ".spec.replicas"),
                scale.get("statusReplicasPath", ".status.replicas"),
                scale.get("labelSelectorPath"),
            )
            if isinstance(scale, dict)
            else None,
            field_selectors=tuple(
                str(f.get("jsonPath", "")).lstrip(".") for f in v.get("selectableFields") or ()
            ),
            singular=names.get("singular", ""),
            list_kind=names.get("listKind", ""),
            custom=CustomInfo(
                crd_name,
                (v.get("schema") or {}).get("openAPIV3Schema"),
                storage_version,
                tuple(v.get("additionalPrinterColumns") or ()),
                strategy,
            ),
        )
        if v.get("served", True):
            served.append(rt)
        if v["name"] == storage_version:
            storage_type = rt
    return served, storage_type


class CRDController:
    """Keeps the catalog in step with stored CRDs (the establishing and finalizing controllers)."""

    def __init__(self, store: Store, catalog: ResourceCatalog) -> None:
        self._store = store
        self._catalog = catalog
        store.add_listener(self.on_event)

    def on_event(self, ev: Event) -> None:
        if ev.key != CRD_KEY:
            return
        crd = ev.obj
        key = f"{_names(crd).get('plural')}.{(crd.get('spec') or {}).get('group', '')}"
        if ev.type == "DELETED":
            self._catalog.replace_custom(key, [], None)
            self._store.drop_key(key)
            return
        if not is_established(crd):
            return
        served, storage = types_for(crd)
        if self._catalog.storage_type(key) is None:
            self._store.open_window(key)  # a new kind's watch cache starts now
        self._catalog.replace_custom(key, served, storage)
        self._catalog.set_terminating(key, bool(crd["metadata"].get("deletionTimestamp")))
        if (
            ev.type == "MODIFIED"
            and storage is not None
            and storage.custom is not None
            and ev.old is not None
            and (ev.old.get("spec") or {}).get("versions") != (crd.get("spec") or {}).get("versions")
        ):
            self._redefault(key, storage)

    def _redefault(self, key: str, storage: ResourceType) -> None:
        """Make schema defaults added by a CRD update visible on existing objects (defaulting on read)."""
        schema = storage.custom.schema if storage.custom else None
        if not schema:
            return
        for obj in list(self._store.iter(key)):
            updated = clone(obj)
            apply_defaults(updated, schema)
            if updated != obj:
                self._store.rewrite_silently(key, updated)
