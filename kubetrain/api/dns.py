"""DNS name checks with apimachinery's exact messages (`k8s.io/apimachinery/pkg/util/validation`).

Users and tools match on these strings (including the famous double space before `or`), so they
are reproduced byte for byte from `IsDNS1035Label`, `MaxLenError` and `RegexError`.
"""

from __future__ import annotations

import re

DNS1035_LABEL_MAX_LENGTH = 63
DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
DNS1035_LABEL_ERR_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
    "start with an alphabetic character, and end with an alphanumeric character"
)
_DNS1035_RE = re.compile(f"^{DNS1035_LABEL_FMT}$")


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


def is_dns1035_label(value: str) -> list[str]:
    """The reasons `value` is not a DNS-1035 label (empty when it is one)."""
    errs = []
    if len(value) > DNS1035_LABEL_MAX_LENGTH:
        errs.append(max_len_error(DNS1035_LABEL_MAX_LENGTH))
    # Go's regexp `$` matches only at the very end; Python's also before a final newline.
    if not _DNS1035_RE.fullmatch(value):
        errs.append(regex_error(DNS1035_LABEL_ERR_MSG, DNS1035_LABEL_FMT, "my-name", "abc-123"))
    return errs
