"""Object semantics of kube-apiserver's generic registry, over the in-memory store.

Create, update (main and status subresource), patch, delete with finalizers, grace and
propagation, scale and binding. Everything here is synchronous: one event loop owns the store, so
each call is atomic. Handlers and the built-in controllers (GC, namespace and CRD cleanup) both
go through this class so they obey the same rules.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from kubetrain.kube.labels import LabelSelector, label_selector_string

from . import errors, fieldvalidation
from .admission import CREATE, UPDATE, AdmissionChain
from .crd import CLEANUP_FINALIZER, crd_errors, crd_status, default_crd
from .decoding import check_type_meta, check_types, decode_json, decode_yaml, type_name
from .defaults import ClusterIPAllocator, default_builtin, initial_pod_status
from .errors import APIError, FieldError
from .jsonutil import clone, dumps, equal, integral_floats_to_ints, loads
from .meta import SYSTEM_FIELDS, data_key_errors, generate_name, labels_errors, later, now, validate_name
from .patching import PatchError, field_set, json_patch, merge_patch, strategic_merge
from .resources import CRD_KEY, NAMESPACE_KEY, ResourceCatalog, ResourceType
from .scalevalidation import scale_spec_errors, scale_status_errors
from .schema import (
    CEL_BLOCKING,
    CEL_SKIPPED,
    apply_defaults,
    has_cel_rules,
    prune,
    validate,
    validate_transitions,
)
from .selection import FieldSelector
from .serviceaccounts import admit_pod
from .store import Store, TooOld, meta_of
from .updates import update_errors

PodDeletion = Literal["auto", "graceful", "immediate"]
Converter = Callable[[dict[str, Any], str], dict[str, Any]]

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
ORPHAN = "orphan"
FOREGROUND = "foregroundDeletion"


@dataclass
class DeleteOptions:
    grace_period_seconds: int | None = None
    propagation_policy: str | None = None
    orphan_dependents: bool | None = None
    preconditions: dict[str, Any] | None = None
    dry_run: bool = False


@dataclass
class ListResult:
    items: list[dict[str, Any]]
    resource_version: int
    continue_token: str = ""
    remaining: int | None = None


def convert_none(obj: dict[str, Any], api_version: str) -> dict[str, Any]:
    """Conversion strategy None: only apiVersion changes between versions."""
    return obj if obj.get("apiVersion") == api_version else {**obj, "apiVersion": api_version}


def get_path(obj: Any, path: str) -> Any:
    cur = obj
    for part in path.lstrip(".").split("."):
        if not isinstance(cur, dict):
            return None
        cur = cur.get(part)
    return cur


def set_path(obj: dict[str, Any], path: str, value: Any) -> None:
    parts = path.lstrip(".").split(".")
    cur = obj
    for part in parts[:-1]:
        nxt = cur.get(part)
        if not isinstance(nxt, dict):
            nxt = cur[part] = {}
        cur = nxt
    cur[parts[-1]] = value


def _without(obj: dict[str, Any], skip: tuple[str, ...]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in skip}


class ObjectStorage:
    """The REST storage every request and controller writes through."""

    def __init__(
        self,
        store: Store,
        catalog: ResourceCatalog,
        pod_deletion: PodDeletion = "auto",
        converters: dict[str, Converter] | None = None,
    ) -> None:
        self.store = store
        self.catalog = catalog
        self.pod_deletion: PodDeletion = pod_deletion
        self.converters: dict[str, Converter] = {"None": convert_none, **(converters or {})}
        self._ips = ClusterIPAllocator()
        self.admission = AdmissionChain()
        self.service_accounts = True  # the ServiceAccount admission plugin mutates new pods

    def restored(self) -> None:
        """Continue after `Store.restore`: the cluster IPs restored Services hold stay theirs."""
        for svc in self.store.iter("services"):
            ip = (svc.get("spec") or {}).get("clusterIP")
            if isinstance(ip, str) and ip and ip != "None":
                self._ips.take(ip)

    # --- helpers -------------------------------------------------------------------------

    def convert(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        """The object as ``rt``'s version presents it (identity for built-ins)."""
        if rt.custom is None or obj.get("apiVersion") == rt.api_version:
            return obj
        converter = self.converters.get(rt.custom.conversion)
        if converter is None:
            raise errors.internal(
                f"conversion webhook for {rt.group}/{rt.version}, Kind={rt.kind} failed: "
                f"no converter for strategy {rt.custom.conversion}"
            )
        return converter(obj, rt.api_version)

    def _storage_form(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        if rt.custom is None or rt.custom.storage_version == rt.version:
            return obj
        return self.convert(self.catalog.storage_type(rt.key) or rt, obj)

    def _require(self, rt: ResourceType, ns: str, name: str) -> dict[str, Any]:
        obj = self.store.get(rt.key, ns if rt.namespaced else "", name)
        if obj is None:
            raise errors.not_found(rt.group, rt.plural, name)
        return obj

    def get(self, rt: ResourceType, ns: str, name: str) -> dict[str, Any]:
        return self.convert(rt, self._require(rt, ns, name))

    def _check_envelope(self, rt: ResourceType, body: Any) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise errors.bad_request(
                f"the body of the request was in an unknown format - expected an object, "
                f"got {type(body).__name__}"
            )
        check_type_meta(rt, body)
        api_version, kind = body.get("apiVersion"), body.get("kind")
        if api_version and api_version != rt.api_version:
            raise errors.bad_request(
                f"the API version in the data ({api_version}) does not match the expected "
                f"API version ({rt.api_version})"
            )
        if kind and kind != rt.kind:
            raise errors.bad_request(
                f"the kind in the data ({kind}) does not match the expected kind ({rt.kind})"
            )
        meta = body.get("metadata")
        if meta is None:
            meta = {}
        elif not isinstance(meta, dict):
            raise errors.bad_request(
                f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: json: cannot '
                f"unmarshal {type_name(meta)} into Go struct field {rt.kind}.metadata of type v1.ObjectMeta"
            )
        check_types(rt, body)
        out = {"kind": rt.kind, "apiVersion": rt.api_version, "metadata": meta}
        out.update((k, v) for k, v in body.items() if k not in out)
        return out

    def _process(
        self,
        rt: ResourceType,
        obj: dict[str, Any],
        old: dict[str, Any] | None,
        errs: list[FieldError] | None = None,
    ) -> None:
        """Defaults, pruning and validation: the admission-free part of a write."""
        meta = obj["metadata"]
        for fld in ("labels", "annotations", "finalizers", "ownerReferences", "managedFields"):
            if fld in meta and not meta[fld]:
                del meta[fld]  # omitempty: empty and absent are the same on the wire
        errs = [*(errs or ()), *labels_errors(meta), *data_key_errors(rt.group, rt.kind, obj)]
        if rt.custom is not None:
            schema = rt.custom.schema
            prune(obj, schema, root=True)
            apply_defaults(obj, schema)
            schema_errs = validate(obj, schema)
            schema_errs += scale_spec_errors(obj, rt.scale) + scale_status_errors(obj, rt.scale)
            errs += schema_errs
            if any(e.type in CEL_BLOCKING for e in schema_errs) and has_cel_rules(schema):
                errs.append(CEL_SKIPPED)
            elif old is not None:
                errs += validate_transitions(obj, self.convert(rt, old), schema)
        else:
            default_builtin(rt.kind, obj, self._ips)
            if old is not None:
                errs += update_errors(rt.group, rt.kind, old, obj)
            if rt.key == CRD_KEY:
                default_crd(obj)
                errs += crd_errors(obj)
        if errs:
            raise errors.invalid(rt.group, rt.kind, meta.get("name", ""), errs)
        if rt.custom is not None:
            integral_floats_to_ints(obj)  # as stored and read back by kube-apiserver

    # --- create --------------------------------------------------------------------------

    def create(
        self,
        rt: ResourceType,
        ns: str,
        body: Any,
        dry_run: bool = False,
        managed: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """POST: ``body`` becomes the store's (the caller must not keep using it)."""
        obj = self._check_envelope(rt, body)
        fieldvalidation.check_object(rt, obj)
        meta = obj["metadata"]
        if rt.namespaced:
            body_ns = meta.get("namespace")
            if body_ns and ns and body_ns != ns:
                raise errors.bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            ns = ns or body_ns or ""
            meta["namespace"] = ns
        else:
            meta.pop("namespace", None)
            ns = ""
        if self.catalog.is_terminating(rt.key):
            raise errors.forbidden(
                rt.group,
                rt.plural,
                meta.get("name") or "",
                "create not allowed while custom resource definition is terminating",
            )
        name = meta.get("name") or ""
        if not name and not meta.get("generateName"):
            raise errors.invalid(
                rt.group,
                rt.kind,
                "",
                [
                    FieldError(
                        "FieldValueRequired", "metadata.name", detail="name or generateName is required"
                    )
                ],
            )
        for fld in SYSTEM_FIELDS:
            meta.pop(fld, None)
        if managed is not None:
            meta["managedFields"] = managed
        else:
            meta.pop("managedFields", None)
        if rt.namespaced:
            self._check_namespace(rt, ns, name or meta.get("generateName", ""))
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = now()
        if rt.tracks_generation:
            meta["generation"] = 1
        if rt.has_status and rt.kind != "Node":
            obj.pop("status", None)
        if rt.kind == "Pod" and rt.group == "":
            obj["status"] = initial_pod_status(obj)
        if rt.key == CRD_KEY:
            fins = meta.setdefault("finalizers", [])
            if CLEANUP_FINALIZER not in fins:
                fins.append(CLEANUP_FINALIZER)
        if not name:
            for _ in range(8):
                name = generate_name(meta["generateName"])
                if self.store.get(rt.key, ns, name) is None:
                    break
        meta["name"] = name
        if rt.kind == "Pod" and rt.group == "" and self.service_accounts:
            admit_pod(obj, lambda account: self.store.get("serviceaccounts", ns, account))
        self._process(rt, obj, None)
        if rt.key == CRD_KEY:
            obj["status"] = crd_status(obj, None, self.catalog)
        errs = validate_name(rt.kind, name, ns)
        if errs:
            raise errors.invalid(rt.group, rt.kind, name, errs)
        self.admission.admit(rt, CREATE, obj, None, None, dry_run)
        existing = self.store.get(rt.key, ns, name)
        if existing is not None:
            if meta_of(existing).get("deletionTimestamp"):
                raise errors.already_exists(rt.group, rt.plural, name, being_deleted=True)
            raise errors.already_exists(rt.group, rt.plural, name)
        obj = self._storage_form(rt, obj)
        if dry_run:
            obj["metadata"]["resourceVersion"] = ""
            return self.convert(rt, obj)
        self.store.put(rt.key, obj)
        return self.convert(rt, obj)  # answered in the version requested, stored in the storage one

    def _check_namespace(self, rt: ResourceType, ns: str, name: str) -> None:
        ns_obj = self.store.get(NAMESPACE_KEY, "", ns)
        if ns_obj is None:
            raise errors.not_found("", "namespaces", ns)
        if meta_of(ns_obj).get("deletionTimestamp"):
            raise errors.forbidden(
                rt.group,
                rt.plural,
                name,
                f"unable to create new content in namespace {ns} because it is being terminated",
            )

    # --- update --------------------------------------------------------------------------

    def update(
        self,
        rt: ResourceType,
        ns: str,
        name: str,
        body: Any,
        subresource: str | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """PUT on the object or its status: optimistic concurrency on metadata.resourceVersion."""
        obj = self._check_envelope(rt, body)
        fieldvalidation.check_object(rt, obj)
        meta = obj["metadata"]
        if meta.get("name") and meta["name"] != name:
            raise errors.bad_request(
                f"the name of the object ({meta['name']}) does not match the name on the URL ({name})"
            )
        if rt.namespaced and meta.get("namespace") and meta["namespace"] != ns:
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        old = self._require(rt, ns, name)
        rv = meta.get("resourceVersion")
        if rv and rv != old["metadata"]["resourceVersion"]:
            raise errors.conflict(rt.group, rt.plural, name, errors.MODIFIED)
        return self._write_update(rt, old, obj, subresource, dry_run)

    def _write_update(
        self,
        rt: ResourceType,
        old: dict[str, Any],
        obj: dict[str, Any],
        subresource: str | None,
        dry_run: bool,
        admit: bool = True,
    ) -> dict[str, Any]:
        old_view = self.convert(rt, old)
        old_meta = old["metadata"]
        if subresource == "status":
            new = {k: v for k, v in old_view.items() if k != "status"}
            if "status" in obj:
                new["status"] = obj["status"]
            new["metadata"] = dict(old_meta)
            if not rt.group:  # core/v1 status strategies predate ResetObjectMetaForStatus
                for fld in ("labels", "annotations", "finalizers", "ownerReferences"):
                    if obj["metadata"].get(fld):
                        new["metadata"][fld] = obj["metadata"][fld]
                    else:
                        new["metadata"].pop(fld, None)
            if "managedFields" in obj["metadata"]:
                new["metadata"]["managedFields"] = obj["metadata"]["managedFields"]
            new = clone(new)
            if rt.custom is not None:
                prune(new, rt.custom.schema, root=True)
                apply_defaults(new, rt.custom.schema)
                errs = validate(new, rt.custom.schema) + scale_status_errors(new, rt.scale)
                if errs:
                    raise errors.invalid(rt.group, rt.kind, old_meta["name"], errs)
                integral_floats_to_ints(new)
            if rt.key == CRD_KEY:
                new["status"] = crd_status(new, old, self.catalog)
        else:
            new = obj
            meta = new["metadata"]
            for fld in SYSTEM_FIELDS:
                if fld in old_meta:
                    meta[fld] = old_meta[fld]
                else:
                    meta.pop(fld, None)
            meta["name"] = old_meta["name"]
            if "namespace" in old_meta:
                meta["namespace"] = old_meta["namespace"]
            if "managedFields" not in meta and "managedFields" in old_meta:
                meta["managedFields"] = old_meta["managedFields"]
            if rt.has_status:
                if "status" in old:
                    new["status"] = clone(old["status"])
                else:
                    new.pop("status", None)
            self._process(rt, new, old, self._finalizer_errors(old_meta, meta))
            if rt.key == CRD_KEY:
                new["status"] = crd_status(new, old, self.catalog)
            skip = ("metadata", "status") if rt.has_status else ("metadata",)
            if rt.tracks_generation and not equal(_without(new, skip), _without(old_view, skip)):
                meta["generation"] = int(old_meta.get("generation", 1)) + 1
        if admit:
            self.admission.admit(rt, UPDATE, new, old_view, subresource, dry_run)
        new = self._storage_form(rt, new)
        new["metadata"]["resourceVersion"] = old_meta["resourceVersion"]
        if equal(new, old):
            return self.convert(rt, old)
        if dry_run:
            return self.convert(rt, new)
        return self.convert(rt, self._commit_update(rt, new))

    @staticmethod
    def _finalizer_errors(old_meta: dict[str, Any], meta: dict[str, Any]) -> list[FieldError]:
        if not old_meta.get("deletionTimestamp"):
            return []
        added = [f for f in meta.get("finalizers") or () if f not in (old_meta.get("finalizers") or ())]
        if not added:
            return []
        shown = "[]string{" + ", ".join(f'"{f}"' for f in added) + "}"
        err = FieldError(
            "FieldValueForbidden",
            "metadata.finalizers",
            detail="no new finalizers can be added if the object is being deleted, "
            f"found new finalizers {shown}",
        )
        # kube-apiserver validates object metadata twice on update (the strategy and BeforeUpdate):
        # the cause appears twice, the message once.
        return [err, err]

    def _commit_update(self, rt: ResourceType, new: dict[str, Any]) -> dict[str, Any]:
        """Store an update; an object being deleted with no finalizers left goes away instead."""
        meta = new["metadata"]
        if (
            meta.get("deletionTimestamp")
            and not meta.get("finalizers")
            and not meta.get("deletionGracePeriodSeconds")
            and rt.key != NAMESPACE_KEY
        ):
            # Deleted during the update: the stored state (finalizers included) is what watchers see.
            ev = self.store.remove(rt.key, meta.get("namespace", ""), meta["name"])
            if ev is not None:
                new["metadata"]["resourceVersion"] = ev.obj["metadata"]["resourceVersion"]
            return new
        self.store.put(rt.key, new)
        return new

    # --- patch ---------------------------------------------------------------------------

    def patch(
        self,
        rt: ResourceType,
        ns: str,
        name: str,
        content_type: str,
        raw: bytes,
        subresource: str | None = None,
        field_manager: str | None = None,
        force: bool = False,
        dry_run: bool = False,
    ) -> tuple[dict[str, Any], bool]:
        """PATCH in any of the four formats; returns (object, created)."""
        if content_type not in (MERGE_PATCH, JSON_PATCH, STRATEGIC_PATCH, APPLY_PATCH):
            raise errors.router_unsupported_media_type()
        if content_type == APPLY_PATCH:
            return self._apply(rt, ns, name, raw, subresource, field_manager, dry_run)
        if content_type == STRATEGIC_PATCH and not rt.strategic:
            raise errors.unsupported_media_type(self._media_message(rt, content_type))
        if content_type not in (MERGE_PATCH, JSON_PATCH, STRATEGIC_PATCH):
            raise errors.unsupported_media_type(self._media_message(rt, content_type))
        try:
            patch = decode_json(raw)
        except ValueError as exc:
            raise errors.bad_request(f"error decoding patch: {exc}") from None
        old = self._require(rt, ns, name)
        current = self.convert(rt, old)
        try:
            if content_type == JSON_PATCH:
                patched = json_patch(current, patch)
            elif content_type == MERGE_PATCH:
                if not isinstance(patch, dict):
                    raise errors.bad_request(
                        "error decoding patch: json: cannot unmarshal into Go value of type "
                        "map[string]interface {}"
                    )
                patched = clone(merge_patch(current, patch))
            else:
                if not isinstance(patch, dict):
                    raise errors.bad_request(
                        "error decoding patch: json: cannot unmarshal into Go value of type "
                        "map[string]interface {}"
                    )
                patched = clone(strategic_merge(current, patch, rt.kind))
        except TypeError as exc:
            raise errors.bad_request(str(exc)) from None
        except PatchError:
            raise errors.unprocessable() from None
        if not isinstance(patched, dict) or not isinstance(patched.get("metadata"), dict):
            raise errors.bad_request("the patch produced an object without metadata")
        rv = patched["metadata"].get("resourceVersion")
        if rv and rv != old["metadata"]["resourceVersion"]:
            raise errors.conflict(rt.group, rt.plural, name, errors.MODIFIED)
        fieldvalidation.check_patched(rt, patched, patch, content_type)
        patched = self._check_envelope(rt, patched)
        return self._write_update(rt, old, patched, subresource, dry_run), False

    @staticmethod
    def _media_message(rt: ResourceType, content_type: str) -> str:
        accepted = [JSON_PATCH, MERGE_PATCH, APPLY_PATCH]
        if rt.strategic:
            accepted.insert(2, STRATEGIC_PATCH)
        return (
            f"the body of the request was in an unknown format - accepted media types include: "
            f"{', '.join(accepted)}"
        )

    def _apply(
        self,
        rt: ResourceType,
        ns: str,
        name: str,
        raw: bytes,
        subresource: str | None,
        field_manager: str | None,
        dry_run: bool,
    ) -> tuple[dict[str, Any], bool]:
        if not field_manager:
            raise errors.invalid(
                "meta.k8s.io",
                "PatchOptions",
                "",
                [FieldError("FieldValueRequired", "fieldManager", detail="is required for apply patch")],
            )
        config = decode_yaml(raw, rt.kind)
        if not isinstance(config, dict):
            raise errors.bad_request("error decoding YAML: the applied configuration must be an object")
        if not config.get("apiVersion") or not config.get("kind"):
            raise errors.bad_request("invalid object type: /, Kind=")
        raw_meta = config.get("metadata")
        cfg_meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
        if cfg_meta.get("name") and cfg_meta["name"] != name:
            raise errors.bad_request(
                f"the name of the object ({cfg_meta['name']}) does not match the name on the URL ({name})"
            )
        fieldvalidation.check_apply(rt, config, name)
        keyed = rt.strategic
        entry = {
            "manager": field_manager,
            "operation": "Apply",
            "apiVersion": rt.api_version,
            "time": now(),
            "fieldsType": "FieldsV1",
            "fieldsV1": field_set(config, rt.kind, keyed),
        }
        if subresource:
            entry["subresource"] = subresource
        old = self.store.get(rt.key, ns if rt.namespaced else "", name)
        if old is None:
            if subresource:
                raise errors.not_found(rt.group, rt.plural, name)
            body = clone(config)
            body.setdefault("metadata", {})["name"] = name
            return self.create(rt, ns, body, dry_run=dry_run, managed=[entry]), True
        current = self.convert(rt, old)
        merged = clone(strategic_merge(current, config, rt.kind, keyed_lists=keyed))
        managed = [
            m
            for m in current["metadata"].get("managedFields") or ()
            if not (
                m.get("manager") == field_manager
                and m.get("operation") == "Apply"
                and m.get("subresource") == entry.get("subresource")
            )
        ]
        merged["metadata"]["managedFields"] = [*managed, entry]
        rv = (config.get("metadata") or {}).get("resourceVersion")
        if rv and rv != old["metadata"]["resourceVersion"]:
            raise errors.conflict(rt.group, rt.plural, name, errors.MODIFIED)
        merged["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
        return self._write_update(rt, old, merged, subresource, dry_run), False

    # --- delete --------------------------------------------------------------------------

    def delete(
        self, rt: ResourceType, ns: str, name: str, opts: DeleteOptions
    ) -> tuple[dict[str, Any], bool]:
        """DELETE; returns (object, removed-now). Objects kept for finalizers or grace stay readable."""
        old = self._require(rt, ns, name)
        meta = old["metadata"]
        pre = opts.preconditions or {}
        # BeforeDelete names the kind, not the resource, in these two conflicts.
        if pre.get("uid") and pre["uid"] != meta.get("uid"):
            raise errors.conflict(
                rt.group,
                rt.kind,
                name,
                f"the UID in the precondition ({pre['uid']}) does not match the UID in record "
                f"({meta.get('uid')}). The object might have been deleted and then recreated",
            )
        if pre.get("resourceVersion") and pre["resourceVersion"] != meta.get("resourceVersion"):
            raise errors.conflict(
                rt.group,
                rt.kind,
                name,
                f"the ResourceVersion in the precondition ({pre['resourceVersion']}) does not match "
                f"the ResourceVersion in record ({meta.get('resourceVersion')}). "
                "The object might have been modified",
            )
        policy = opts.propagation_policy
        if policy is None and opts.orphan_dependents is not None:
            policy = "Orphan" if opts.orphan_dependents else "Background"
        if policy is None:
            policy = rt.default_propagation
        if policy not in ("Orphan", "Foreground", "Background"):
            raise errors.invalid(
                "meta.k8s.io",
                "DeleteOptions",
                "",
                [
                    FieldError(
                        "FieldValueNotSupported",
                        "propagationPolicy",
                        policy,
                        'supported values: "Foreground", "Background", "Orphan", "nil"',
                    )
                ],
            )
        if opts.dry_run:
            return self.convert(rt, old), False
        new = clone(old)
        nmeta = new["metadata"]
        fins = list(nmeta.get("finalizers") or ())
        if rt.key == NAMESPACE_KEY:
            return self._delete_namespace(new), False
        if policy == "Orphan" and ORPHAN not in fins:
            fins = [f for f in fins if f != FOREGROUND] + [ORPHAN]
        elif policy == "Foreground" and FOREGROUND not in fins:
            fins = [f for f in fins if f != ORPHAN] + [FOREGROUND]
        if fins:
            nmeta["finalizers"] = fins
        grace = self._grace(rt, old, opts)
        if grace > 0:
            if nmeta.get("deletionTimestamp") and (nmeta.get("deletionGracePeriodSeconds") or 0) <= grace:
                self._put_if_changed(rt, old, new)
                return self.convert(rt, new), False
            nmeta["deletionTimestamp"] = later(grace)
            nmeta["deletionGracePeriodSeconds"] = grace
            self.store.put(rt.key, new)
            return self.convert(rt, new), False
        if fins:
            nmeta.setdefault("deletionTimestamp", now())
            nmeta["deletionGracePeriodSeconds"] = 0
            if rt.key == CRD_KEY:
                new["status"] = crd_status(new, old, self.catalog)
            self._put_if_changed(rt, old, new)
            return self.convert(rt, new), False
        ev = self.store.remove(rt.key, meta.get("namespace", ""), name)
        return self.convert(rt, ev.obj if ev else old), True

    def write(self, rt: ResourceType, old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
        """A controller's update of a stored object (``new`` is owned by the store afterwards)."""
        return self._write_update(rt, old, new, None, False, admit=False)

    def _put_if_changed(self, rt: ResourceType, old: dict[str, Any], new: dict[str, Any]) -> None:
        if not equal(new, old):
            self.store.put(rt.key, new)

    def _grace(self, rt: ResourceType, pod: dict[str, Any], opts: DeleteOptions) -> int:
        """Seconds a pod stays in Terminating; 0 means remove now (or once finalizers are gone)."""
        if rt.key != "pods" or self.pod_deletion == "immediate":
            return 0
        spec, status = pod.get("spec") or {}, pod.get("status") or {}
        node = spec.get("nodeName")
        if not node or status.get("phase") in ("Succeeded", "Failed"):
            return 0
        if self.pod_deletion == "auto" and self.store.get("nodes", "", node) is None:
            return 0
        grace = opts.grace_period_seconds
        if grace is None:
            grace = pod["metadata"].get("deletionGracePeriodSeconds") or spec.get(
                "terminationGracePeriodSeconds", 30
            )
        return max(int(grace), 0)

    def _delete_namespace(self, ns: dict[str, Any]) -> dict[str, Any]:
        meta = ns["metadata"]
        if meta.get("deletionTimestamp"):
            return ns
        meta["deletionTimestamp"] = now()
        meta["deletionGracePeriodSeconds"] = 0
        ns["status"] = {**(ns.get("status") or {}), "phase": "Terminating"}
        self.store.put(NAMESPACE_KEY, ns)
        return ns

    def finish_namespace(self, name: str) -> None:
        """The namespace controller's last step, once the namespace is empty."""
        self.store.remove(NAMESPACE_KEY, "", name)

    # --- list ----------------------------------------------------------------------------

    def list_objects(
        self,
        rt: ResourceType,
        ns: str | None,
        labels: LabelSelector,
        fields: FieldSelector,
        limit: int = 0,
        continue_token: str = "",
        exact_rv: int | None = None,
    ) -> ListResult:
        """Sorted by namespace/name like etcd keys; ``continue`` resumes after the last key returned.

        Every page of a paginated list is read at the first page's resourceVersion, as etcd does,
        and so is a list with resourceVersionMatch=Exact.
        """
        start = ""
        rv = self.store.resource_version
        at: int | None = exact_rv
        too_old = "The resourceVersion for the provided list is too old."
        if continue_token:
            start, at = self._decode_continue(continue_token)
            too_old = (
                "The provided continue parameter is too old to display a consistent list "
                "result. You can start a new list without the continue parameter."
            )
        pinned = fields.name_equals()
        if at is not None and at < rv:
            try:
                source = self.store.state_at(at, rt.key, ns)
            except TooOld:
                raise errors.expired(too_old) from None
            rv = at
        elif pinned is not None and ns is not None:
            one = self.store.get(rt.key, ns, pinned)
            source = [one] if one is not None else []
        else:
            source = list(self.store.iter(rt.key, ns))
        matched = [o for o in source if labels.matches_object(o) and fields.matches(o)]
        matched.sort(key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"]))
        if start:
            matched = [
                o for o in matched if f"{o['metadata'].get('namespace', '')}/{o['metadata']['name']}" > start
            ]
        token, remaining = "", None
        if limit and len(matched) > limit:
            last = matched[limit - 1]["metadata"]
            remaining = len(matched) - limit
            matched = matched[:limit]
            token = self._encode_continue(f"{last.get('namespace', '')}/{last['name']}", rv)
        return ListResult([self.convert(rt, o) for o in matched], rv, token, remaining)

    @staticmethod
    def _encode_continue(start: str, rv: int) -> str:
        raw = dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start})
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    @staticmethod
    def _decode_continue(token: str) -> tuple[str, int]:
        try:
            data = loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
            return str(data["start"]), int(data["rv"])
        except (ValueError, KeyError, TypeError):
            raise errors.bad_request(
                "continue key is not valid: illegal base64 data at input byte 0"
            ) from None

    def delete_collection(
        self,
        rt: ResourceType,
        ns: str | None,
        labels: LabelSelector,
        fields: FieldSelector,
        opts: DeleteOptions,
    ) -> list[dict[str, Any]]:
        out = []
        for obj in self.list_objects(rt, ns, labels, fields).items:
            meta = obj["metadata"]
            try:
                out.append(self.delete(rt, meta.get("namespace", ""), meta["name"], opts)[0])
            except APIError as exc:
                if exc.code != 404:
                    raise
        return out

    # --- scale ---------------------------------------------------------------------------

    def get_scale(self, rt: ResourceType, ns: str, name: str) -> dict[str, Any]:
        obj = self.get(rt, ns, name)
        paths = rt.scale
        if paths is None:
            raise errors.path_not_found()
        meta = obj["metadata"]
        if paths.selector_from_spec:
            selector: Any = label_selector_string((obj.get("spec") or {}).get("selector"))
        else:
            selector = get_path(obj, paths.label_selector) if paths.label_selector else None
        status: dict[str, Any] = {"replicas": get_path(obj, paths.status_replicas) or 0}
        if selector:
            status["selector"] = selector
        scale_meta = {
            k: meta[k]
            for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if k in meta
        }
        return {
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": scale_meta,
            "spec": {"replicas": get_path(obj, paths.spec_replicas) or 0},
            "status": status,
        }

    def update_scale(self, rt: ResourceType, ns: str, name: str, scale: Any) -> dict[str, Any]:
        if rt.scale is None:
            raise errors.path_not_found()
        if not isinstance(scale, dict):
            raise errors.bad_request("the body of the request was in an unknown format")
        old = self._require(rt, ns, name)
        rv = (scale.get("metadata") or {}).get("resourceVersion")
        if rv and rv != old["metadata"]["resourceVersion"]:
            raise errors.conflict(rt.group, rt.plural, name, errors.MODIFIED)
        replicas = (scale.get("spec") or {}).get("replicas", 0)
        if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
            raise errors.invalid(
                "autoscaling",
                "Scale",
                name,
                [
                    FieldError(
                        "FieldValueInvalid", "spec.replicas", replicas, "must be greater than or equal to 0"
                    )
                ],
            )
        new = clone(self.convert(rt, old))
        set_path(new, rt.scale.spec_replicas, replicas)
        self._write_update(rt, old, new, None, False)
        return self.get_scale(rt, ns, name)

    def patch_scale(
        self, rt: ResourceType, ns: str, name: str, content_type: str, raw: bytes
    ) -> dict[str, Any]:
        current = self.get_scale(rt, ns, name)
        try:
            patch = decode_json(raw)
            if content_type == JSON_PATCH:
                patched = json_patch(current, patch)
            elif content_type in (MERGE_PATCH, STRATEGIC_PATCH):
                patched = merge_patch(current, patch)
            else:
                raise errors.unsupported_media_type(self._media_message(rt, content_type))
        except PatchError:
            raise errors.unprocessable() from None
        except (ValueError, TypeError) as exc:
            raise errors.bad_request(f"error decoding patch: {exc}") from None
        return self.update_scale(rt, ns, name, patched)

    # --- pods/binding --------------------------------------------------------------------

    def bind(self, rt: ResourceType, ns: str, name: str, binding: Any) -> None:
        """POST pods/{name}/binding: what the scheduler does to assign a node."""
        if not isinstance(binding, dict):
            raise errors.bad_request("the body of the request was in an unknown format")
        target = (binding.get("target") or {}).get("name")
        if not target:
            raise errors.invalid("", "Binding", name, [FieldError("FieldValueRequired", "target.name")])
        old = self._require(rt, ns, name)
        if old["metadata"].get("deletionTimestamp"):
            raise errors.conflict(
                "", "pods/binding", name, f"pod {name} is being deleted, cannot be assigned to a host"
            )
        node = (old.get("spec") or {}).get("nodeName")
        if node:
            raise errors.conflict(
                "", "pods/binding", name, f'pod {name} is already assigned to node "{node}"'
            )
        new = clone(old)
        new["spec"]["nodeName"] = target
        status = new.setdefault("status", {})
        conds = [c for c in status.get("conditions") or () if c.get("type") != "PodScheduled"]
        conds.append(
            {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": now()}
        )
        status["conditions"] = conds
        self.store.put(rt.key, new)
