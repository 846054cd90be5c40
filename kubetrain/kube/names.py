"""apimachinery's name checks (`k8s.io/apimachinery/pkg/util/validation`) with its exact messages.

Users and tools match on these strings (the double space before `or` included), so they are built
the way `RegexError` and `MaxLenError` build them. The API server checks object names and label
keys with them, the operator the names it will give its children. Go's regexp `$` matches only at
the very end of the text; Python's also before a final newline, so every check is a fullmatch.
"""

from __future__ import annotations

import re


def max_len_error(length: int) -> str:
    return f"must be no more than {length} characters"


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    msg += " (e.g. "
    for i, example in enumerate(examples):
        if i > 0:
            msg += " or "
        msg += f"'{example}', "
    return msg + f"regex used for validation is '{fmt}')"


DNS1123_LABEL_MAX_LENGTH = 63
DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_LABEL_MSG = regex_error(
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
    "start and end with an alphanumeric character",
    DNS1123_LABEL_FMT,
    "my-name",
    "123-abc",
)
DNS1123_SUBDOMAIN_MAX_LENGTH = 253
DNS1123_SUBDOMAIN_FMT = f"{DNS1123_LABEL_FMT}(\\.{DNS1123_LABEL_FMT})*"
DNS1123_SUBDOMAIN_MSG = regex_error(
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character",
    DNS1123_SUBDOMAIN_FMT,
    "example.com",
)
DNS1035_LABEL_MAX_LENGTH = 63
DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
DNS1035_LABEL_MSG = regex_error(
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character",
    DNS1035_LABEL_FMT,
    "my-name",
    "abc-123",
)
QUALIFIED_NAME_MAX_LENGTH = 63
QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
QUALIFIED_NAME_MSG = regex_error(
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character",
    QUALIFIED_NAME_FMT,
    "MyName",
    "my.name",
    "123-abc",
)
LABEL_VALUE_MAX_LENGTH = 63
LABEL_VALUE_FMT = f"({QUALIFIED_NAME_FMT})?"
LABEL_VALUE_MSG = regex_error(
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character",
    LABEL_VALUE_FMT,
    "MyValue",
    "my_value",
    "12345",
)

_DNS1123_LABEL = re.compile(DNS1123_LABEL_FMT)
_DNS1123_SUBDOMAIN = re.compile(DNS1123_SUBDOMAIN_FMT)
_DNS1035_LABEL = re.compile(DNS1035_LABEL_FMT)
_QUALIFIED_NAME = re.compile(QUALIFIED_NAME_FMT)
_LABEL_VALUE = re.compile(LABEL_VALUE_FMT)


def _check(value: str, limit: int, pattern: re.Pattern[str], msg: str) -> list[str]:
    errs = [max_len_error(limit)] if len(value) > limit else []
    return errs if pattern.fullmatch(value) else [*errs, msg]


def is_dns1123_label(value: str) -> list[str]:
    """The reasons `value` is not an RFC 1123 label (empty when it is one): Namespace names."""
    return _check(value, DNS1123_LABEL_MAX_LENGTH, _DNS1123_LABEL, DNS1123_LABEL_MSG)


def is_dns1123_subdomain(value: str) -> list[str]:
    """The reasons `value` is not an RFC 1123 subdomain: most objects' names."""
    return _check(value, DNS1123_SUBDOMAIN_MAX_LENGTH, _DNS1123_SUBDOMAIN, DNS1123_SUBDOMAIN_MSG)


def is_dns1035_label(value: str) -> list[str]:
    """The reasons `value` is not a DNS-1035 label: Service names (and so our pods' names)."""
    return _check(value, DNS1035_LABEL_MAX_LENGTH, _DNS1035_LABEL, DNS1035_LABEL_MSG)


def is_label_value(value: str) -> bool:
    """Whether `value` has a label value's shape (its length is the caller's to check)."""
    return _LABEL_VALUE.fullmatch(value) is not None


def qualified_name_errors(value: str, what: str = "a qualified name") -> list[str]:
    """``validation.IsQualifiedName``: an optional DNS subdomain prefix and '/', then a name part."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) > 2:
        suffix = "with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        return [f"{what} {QUALIFIED_NAME_MSG} {suffix}"]
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            if len(prefix) > DNS1123_SUBDOMAIN_MAX_LENGTH:
                errs.append("prefix part must be no more than 253 bytes")
            if not _DNS1123_SUBDOMAIN.fullmatch(prefix):
                errs.append(f"prefix part {DNS1123_SUBDOMAIN_MSG}")
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > QUALIFIED_NAME_MAX_LENGTH:
        errs.append("name part must be no more than 63 bytes")
    if not _QUALIFIED_NAME.fullmatch(name):
        errs.append(f"name part {QUALIFIED_NAME_MSG}")
    return errs
