"""Object metadata rules: timestamps, generated names, name validation, system fields."""

from __future__ import annotations

import random
import re
import time
from typing import Any

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
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def later(seconds: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + seconds))


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


def labels_errors(meta: dict[str, Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    for fld in ("labels", "annotations"):
        value = meta.get(fld)
        if value is None:
            continue
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            errs.append(FieldError("FieldValueInvalid", f"metadata.{fld}", value, "must be a map of strings"))
    return errs
