"""Object metadata rules: timestamps, generated names, name validation, system fields."""

from __future__ import annotations

import base64
import contextlib
import random
import re
import time
from typing import Any

from kubetrain.kube.timefmt import format_time

from .errors import FieldError

# utilrand's alphabet: no vowels (no accidental words) and no confusable 0/1/3.
_ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")

SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
    "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
    "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
    "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)

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
    return prefix + "".join(random.choices(_ALPHANUMS, k=5))


def validate_name(kind: str, name: str, namespace: str | None) -> list[FieldError]:
    """The metadata checks of ValidateObjectMeta that clients run into."""
    errs: list[FieldError] = []
    if kind == "Namespace":
        pattern, msg, limit = _LABEL, LABEL_MSG, 63
    elif kind == "Service":
        pattern, msg, limit = _DNS1035, DNS1035_MSG, 63
    else:
        pattern, msg, limit = _SUBDOMAIN, SUBDOMAIN_MSG, 253
    if len(name) > limit:
        errs.append(
            FieldError("FieldValueInvalid", "metadata.name", name, f"must be no more than {limit} characters")
        )
    if not pattern.match(name):
        errs.append(FieldError("FieldValueInvalid", "metadata.name", name, msg))
    return errs


_QUALIFIED = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_QUALIFIED_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation "
    "is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and "
    "must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', "
    "regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
MAX_ANNOTATIONS_BYTES = 256 * 1024


def qualified_name_errors(value: str, what: str = "a qualified name") -> list[str]:
    """``validation.IsQualifiedName``: an optional DNS subdomain prefix and '/', then a name part."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) > 2:
        suffix = "with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        return [f"{what} {_QUALIFIED_MSG} {suffix}"]
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            if len(prefix) > 253:
                errs.append("prefix part must be no more than 253 bytes")
            if not _SUBDOMAIN.match(prefix):
                errs.append(f"prefix part {SUBDOMAIN_MSG}")
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part must be no more than 63 bytes")
    if not _QUALIFIED.match(name):
        errs.append(f"name part {_QUALIFIED_MSG}")
    return errs


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
        if not LABEL_VALUE.match(value):
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
