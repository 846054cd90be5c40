"""Structural-schema handling for custom resources: defaulting, pruning, validation, CEL.

Mirrors apiextensions-apiserver: unknown fields are pruned unless
``x-kubernetes-preserve-unknown-fields``; ``default`` applies at any depth (nulls of non-nullable
fields are dropped first); validation covers type, enum, required, numeric bounds, lengths,
pattern and item counts with the same field error texts; of CEL it evaluates the transition rule
``self == oldSelf`` (the one kubetrain's CRDs use) only where both old and new values exist.
Other CEL rules are accepted and not evaluated.
"""

from __future__ import annotations

import re
from typing import Any

from .errors import FieldError
from .jsonutil import clone

OBJECT_META_FIELDS = frozenset(
    {
        "name",
        "generateName",
        "namespace",
        "selfLink",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
        "ownerReferences",
        "finalizers",
        "managedFields",
    }
)
_ENVELOPE = ("apiVersion", "kind", "metadata")


def apply_defaults(value: Any, schema: dict[str, Any] | None) -> None:
    """Fill ``default`` values in place, at every depth the schema describes."""
    if not schema:
        return
    if isinstance(value, dict):
        props = schema.get("properties")
        if isinstance(props, dict):
            for name, sub in props.items():
                if not isinstance(sub, dict):
                    continue
                if name in value and value[name] is None and not sub.get("nullable"):
                    del value[name]
                if name not in value and "default" in sub:
                    value[name] = clone(sub["default"])
                if name in value:
                    apply_defaults(value[name], sub)
        addl = schema.get("additionalProperties")
        if isinstance(addl, dict):
            for item in value.values():
                apply_defaults(item, addl)
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for item in value:
                apply_defaults(item, items)


def _prune_meta(meta: Any) -> None:
    if isinstance(meta, dict):
        for key in [k for k in meta if k not in OBJECT_META_FIELDS]:
            del meta[key]


def prune(value: Any, schema: dict[str, Any] | None, root: bool = False) -> None:
    """Drop fields the schema does not specify, in place."""
    if schema is None:
        return
    if isinstance(value, dict):
        embedded = root or bool(schema.get("x-kubernetes-embedded-resource"))
        preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
        raw_props = schema.get("properties")
        props: dict[str, Any] = raw_props if isinstance(raw_props, dict) else {}
        addl = schema.get("additionalProperties")
        for key in list(value):
            if key in props and not (embedded and key in _ENVELOPE):
                prune(value[key], props[key])
            elif isinstance(addl, dict):
                prune(value[key], addl)
            elif embedded and key in _ENVELOPE:
                if key == "metadata":
                    _prune_meta(value[key])
            elif not (preserve or addl is True):
                del value[key]
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for item in value:
                prune(item, items)


def _type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "null"


_MAX_JSON_INTEGER = 2.0**53
"""go-openapi's maxJSONFloat: the largest float that `IsFloat64AJSONInteger` calls an integer."""


def json_integer(value: Any) -> bool:
    """An integer, or a float with an integral value (1.0): kube-openapi's type validator takes
    such a float where a schema asks for an integer (`isFloatInt`), because Go decodes ``1.0`` as
    a float64. Clients send them: the Kubeflow SDK's resource quantities (``cpu: 1.0``)."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, float) and value.is_integer() and abs(value) <= _MAX_JSON_INTEGER


def _type_ok(value: Any, typ: str) -> bool:
    actual = _type_name(value)
    return (
        actual == typ
        or (typ == "number" and actual == "integer")
        or (typ == "integer" and actual == "number" and json_integer(value))
    )


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def validate(value: Any, schema: dict[str, Any] | None, path: str = "") -> list[FieldError]:
    """OpenAPI v3 checks with apiextensions' field error wording."""
    errs: list[FieldError] = []
    if not schema:
        return errs
    if value is None:
        return errs
    label = path or "<root>"
    if schema.get("x-kubernetes-int-or-string"):
        if not (isinstance(value, str) or json_integer(value)):
            errs.append(
                FieldError(
                    "FieldValueTypeInvalid",
                    path,
                    _type_name(value),
                    f'{label} in body must be of type integer,string: "{_type_name(value)}"',
                )
            )
            return errs
    elif "type" in schema and not _type_ok(value, schema["type"]):
        errs.append(
            FieldError(
                "FieldValueTypeInvalid",
                path,
                _type_name(value),
                f'{label} in body must be of type {schema["type"]}: "{_type_name(value)}"',
            )
        )
        return errs
    if "enum" in schema and value not in schema["enum"]:
        supported = ", ".join(f'"{v}"' if isinstance(v, str) else str(v) for v in schema["enum"])
        errs.append(FieldError("FieldValueNotSupported", path, value, f"supported values: {supported}"))
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in schema:
            lo = schema["minimum"]
            if schema.get("exclusiveMinimum") and value <= lo:
                errs.append(
                    FieldError(
                        "FieldValueInvalid", path, value, f"{label} in body should be greater than {lo}"
                    )
                )
            elif value < lo:
                errs.append(
                    FieldError(
                        "FieldValueInvalid",
                        path,
                        value,
                        f"{label} in body should be greater than or equal to {lo}",
                    )
                )
        if "maximum" in schema:
            hi = schema["maximum"]
            if schema.get("exclusiveMaximum") and value >= hi:
                errs.append(
                    FieldError("FieldValueInvalid", path, value, f"{label} in body should be less than {hi}")
                )
            elif value > hi:
                errs.append(
                    FieldError(
                        "FieldValueInvalid",
                        path,
                        value,
                        f"{label} in body should be less than or equal to {hi}",
                    )
                )
    if isinstance(value, str):
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            errs.append(
                FieldError(
                    "FieldValueTooLong", path, value, f"may not be more than {schema['maxLength']} bytes"
                )
            )
        if "minLength" in schema and len(value) < schema["minLength"]:
            errs.append(
                FieldError(
                    "FieldValueInvalid",
                    path,
                    value,
                    f"{label} in body should be at least {schema['minLength']} chars long",
                )
            )
        if "pattern" in schema and not re.search(schema["pattern"], value):
            errs.append(
                FieldError(
                    "FieldValueInvalid", path, value, f"{label} in body should match '{schema['pattern']}'"
                )
            )
    if isinstance(value, list):
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errs.append(
                FieldError(
                    "FieldValueTooMany", path, len(value), f"must have at most {schema['maxItems']} items"
                )
            )
        if "minItems" in schema and len(value) < schema["minItems"]:
            errs.append(
                FieldError(
                    "FieldValueInvalid",
                    path,
                    len(value),
                    f"{label} in body should have at least {schema['minItems']} items",
                )
            )
        items = schema.get("items")
        if isinstance(items, dict):
            for i, item in enumerate(value):
                errs.extend(validate(item, items, f"{path}[{i}]"))
    if isinstance(value, dict):
        for req in schema.get("required") or []:
            if req not in value:
                errs.append(FieldError("FieldValueRequired", _join(path, req)))
        props = schema.get("properties") or {}
        addl = schema.get("additionalProperties")
        for key, item in value.items():
            if not path and key in _ENVELOPE:
                continue
            if key in props:
                errs.extend(validate(item, props[key], _join(path, key)))
            elif isinstance(addl, dict):
                errs.extend(validate(item, addl, _join(path, key)))
    return errs


_CEL_REASONS = {"FieldValueForbidden", "FieldValueRequired", "FieldValueDuplicate", "FieldValueInvalid"}


CEL_SKIPPED = FieldError(
    "FieldValueInvalid",
    "<nil>",
    None,
    "some validation rules were not checked because the object was invalid; correct the existing errors "
    "to complete validation",
)
"""What apiextensions adds when schema errors kept the x-kubernetes-validations rules from running."""


CEL_BLOCKING = frozenset({"FieldValueNotSupported", "FieldValueRequired", "FieldValueTypeInvalid"})
"""Schema errors after which apiextensions does not run the CEL rules (hasBlockingErr)."""


def has_cel_rules(schema: Any) -> bool:
    if isinstance(schema, dict):
        return bool(schema.get("x-kubernetes-validations")) or any(has_cel_rules(v) for v in schema.values())
    if isinstance(schema, list):
        return any(has_cel_rules(v) for v in schema)
    return False


def validate_transitions(
    new: Any, old: Any, schema: dict[str, Any] | None, path: str = ""
) -> list[FieldError]:
    """Evaluate ``self == oldSelf`` rules where the value exists in both old and new objects."""
    errs: list[FieldError] = []
    if not schema:
        return errs
    for rule in schema.get("x-kubernetes-validations") or []:
        if not isinstance(rule, dict) or "".join(str(rule.get("rule", "")).split()) != "self==oldSelf":
            continue
        if new != old:
            reason = str(rule["reason"]) if rule.get("reason") in _CEL_REASONS else "FieldValueInvalid"
            fld = path + str(rule.get("fieldPath") or "")
            message = rule.get("message") or f"failed rule: {rule.get('rule')}"
            shown = _type_name(new) if isinstance(new, dict | list) else new  # scalars: their value
            errs.append(FieldError(reason, fld, shown, message))
    if isinstance(new, dict) and isinstance(old, dict):
        props = schema.get("properties") or {}
        addl = schema.get("additionalProperties")
        for key, item in new.items():
            if key not in old:
                continue
            sub = props.get(key) if key in props else (addl if isinstance(addl, dict) else None)
            if isinstance(sub, dict):
                errs.extend(validate_transitions(item, old[key], sub, _join(path, key)))
    return errs
