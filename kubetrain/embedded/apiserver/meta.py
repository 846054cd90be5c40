"""Object metadata rules: timestamps, generated names, name validation, system fields."""

from __future__ import annotations

import base64
import contextlib
import re
import time
from typing import Any

from kubetrain.kube.names import (
    LABEL_VALUE_MSG,
    is_dns1035_label,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_label_value,
    qualified_name_errors,
)
from kubetrain.kube.rng import RNG
from kubetrain.kube.timefmt import format_time

from .errors import FieldError

# utilrand's alphabet: no vowels (no accidental words) and no confusable 0/1/3.
_ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"
# System fields a client can never set through create/update.
SYSTEM_FIELDS = (
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
    "resourceVersion",
    "selfLink",
)


def now() -> str:
    """RFC 3339 at second precision in UTC, as metav1.Time serializes."""
    return format_time(time.time())


def later(seconds: int) -> str:
    return format_time(time.time() + seconds)


def generate_name(prefix: str) -> str:
    """``names.SimpleNameGenerator``: the prefix (cut to fit 63 chars) plus 5 random characters."""
    prefix = prefix[:58]
    return prefix + "".join(RNG.choices(_ALPHANUMS, k=5))


def validate_name(kind: str, name: str, namespace: str | None) -> list[FieldError]:
    """The metadata checks of ValidateObjectMeta that clients run into."""
    if kind == "Namespace":
        reasons = is_dns1123_label(name)
    elif kind == "Service":
        reasons = is_dns1035_label(name)
    else:
        reasons = is_dns1123_subdomain(name)
    return [FieldError("FieldValueInvalid", "metadata.name", name, reason) for reason in reasons]


MAX_ANNOTATIONS_BYTES = 256 * 1024


def labels_errors(meta: dict[str, Any]) -> list[FieldError]:
    """ValidateLabels and ValidateAnnotations: keys are qualified names, label values short and plain."""
    errs: list[FieldError] = []
    labels = meta.get("labels") or {}
    for key, value in labels.items():
        if not isinstance(key, str) or not isinstance(value, str):
            continue  # the decoder's type check answers these
        errs += [
            FieldError("FieldValueInvalid", "metadata.labels", key, m)
            for m in qualified_name_errors(key, "a valid label key")
        ]
        if len(value.encode()) > 63:
            errs.append(
                FieldError("FieldValueInvalid", "metadata.labels", value, "must be no more than 63 bytes")
            )
        if not is_label_value(value):
            errs.append(FieldError("FieldValueInvalid", "metadata.labels", value, LABEL_VALUE_MSG))
    annotations = meta.get("annotations") or {}
    for key in annotations:
        errs += [
            FieldError("FieldValueInvalid", "metadata.annotations", key, m)
            for m in qualified_name_errors(key.lower())
        ]
    size = sum(len(k.encode()) + len(str(v).encode()) for k, v in annotations.items())
    if size > MAX_ANNOTATIONS_BYTES:
        errs.append(
            FieldError(
                "FieldValueTooLong",
                "metadata.annotations",
                None,
                f"must have at most {MAX_ANNOTATIONS_BYTES} bytes",
            )
        )
    return errs


_CONFIG_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
CONFIG_KEY_MSG = (
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or "
    "'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
)
_DATA_KEYS = {("", "ConfigMap"): ("data", "binaryData"), ("", "Secret"): ("data",)}


def config_key_errors(key: str) -> list[str]:
    """``validation.IsConfigMapKey``: the keys of ConfigMap and Secret data become file names."""
    errs: list[str] = []
    if len(key) > 253:
        errs.append("must be no more than 253 characters")
    if not _CONFIG_KEY.match(key):
        errs.append(CONFIG_KEY_MSG)
    if key == ".":
        errs.append("must not be '.'")
    elif key == "..":
        errs.append("must not be '..'")
    elif key.startswith(".."):
        errs.append("must not start with '..'")
    return errs


MAX_DATA_BYTES = 1024 * 1024
"""core.MaxSecretSize: the data of a ConfigMap or a Secret, values only (binaryData decoded)."""


_BINARY = {("ConfigMap", "binaryData"), ("Secret", "data")}


def _value_size(kind: str, fld: str, value: Any) -> int:
    """Bytes of one value as Go counts them: decoded for []byte fields (base64 on the wire)."""
    if not isinstance(value, str):
        return 0
    if (kind, fld) in _BINARY:
        with contextlib.suppress(ValueError):
            return len(base64.b64decode(value, validate=True))
    return len(value.encode())


def data_key_errors(group: str, kind: str, obj: dict[str, Any]) -> list[FieldError]:
    """ValidateConfigMap's and ValidateSecret's key and size checks (the decoder already refused
    non-maps)."""
    errs: list[FieldError] = []
    size = 0
    for fld in _DATA_KEYS.get((group, kind), ()):
        data = obj.get(fld)
        for key, value in data.items() if isinstance(data, dict) else ():
            errs += [FieldError("FieldValueInvalid", f"{fld}[{key}]", key, m) for m in config_key_errors(key)]
            size += _value_size(kind, fld, value)
    if size > MAX_DATA_BYTES:
        where = "[]" if kind == "ConfigMap" else "data"  # kube's empty path prints as "[]"
        errs.append(
            FieldError("FieldValueTooLong", where, None, f"may not be more than {MAX_DATA_BYTES} bytes")
        )
    return errs
