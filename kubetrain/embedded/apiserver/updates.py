"""Update rules of built-in kinds: the fields kube-apiserver refuses to change once set.

Only the rules clients run into are copied: a Pod's spec (all but the few mutable fields) and a
Service's cluster IP. Messages are kube-apiserver's, except that a Pod's message does not end with
the diff of Go structs that ValidatePodUpdate appends.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .errors import FieldError
from .jsonutil import clone, equal

POD_MUTABLE = (
    "pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to "
    "existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was "
    "previously negative)"
)


def _pod(old: dict[str, Any], new: dict[str, Any]) -> list[FieldError]:
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    for fld in ("containers", "initContainers"):
        if len(old_spec.get(fld) or ()) != len(new_spec.get(fld) or ()):
            return [
                FieldError(
                    "FieldValueForbidden",
                    f"spec.{fld}",
                    detail="pod updates may not add or remove containers",
                )
            ]
    a, b = clone(old_spec), clone(new_spec)
    for spec in (a, b):
        for fld in ("containers", "initContainers"):
            for container in spec.get(fld) or ():
                if isinstance(container, dict):
                    container.pop("image", None)
        for fld in ("activeDeadlineSeconds", "terminationGracePeriodSeconds", "schedulingGates"):
            spec.pop(fld, None)
    old_tol, new_tol = a.pop("tolerations", None) or [], b.pop("tolerations", None) or []
    if not equal(a, b) or any(not any(equal(t, n) for n in new_tol) for t in old_tol):
        return [FieldError("FieldValueForbidden", "spec", detail=POD_MUTABLE)]
    return []


def _service(old: dict[str, Any], new: dict[str, Any]) -> list[FieldError]:
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    old_ip, new_ip = old_spec.get("clusterIP"), new_spec.get("clusterIP")
    if old_ip and new_ip and old_ip != new_ip and new_spec.get("type") != "ExternalName":
        ips = [new_ip, *(new_spec.get("clusterIPs") or [])[1:]]
        return [FieldError("FieldValueInvalid", "spec.clusterIPs[0]", ips, "may not change once set")]
    return []


_RULES: dict[tuple[str, str], Callable[[dict[str, Any], dict[str, Any]], list[FieldError]]] = {
    ("", "Pod"): _pod,
    ("", "Service"): _service,
}


def update_errors(group: str, kind: str, old: dict[str, Any], new: dict[str, Any]) -> list[FieldError]:
    """The immutability errors of updating ``old`` to ``new`` (both defaulted)."""
    rule = _RULES.get((group, kind))
    return rule(old, new) if rule else []
