"""Request options checks (ListOptions' resourceVersion and resourceVersionMatch, every write's
dryRun), with kube-apiserver's errors."""

from __future__ import annotations

from dataclasses import dataclass

from . import errors
from .errors import APIError, FieldError

EXACT = "Exact"
NOT_OLDER_THAN = "NotOlderThan"


@dataclass(frozen=True)
class ListVersion:
    """What a list asked for: no version (most recent), at least ``rv``, or exactly ``rv``."""

    rv: int | None
    exact: bool = False


def _forbidden(detail: str) -> APIError:
    return errors.invalid(
        "meta.k8s.io",
        "ListOptions",
        "",
        [FieldError("FieldValueForbidden", "resourceVersionMatch", detail=detail)],
    )


def parse_resource_version(text: str, watch: bool = False) -> int:
    """``strconv.ParseUint`` as the storage layer reports it: a list answers 400, a watch (from the
    watch cache, which does not wrap the error) a 500 without a reason."""
    if text.isdigit():
        return int(text)
    detail = f'resourceVersion: Invalid value: "{text}": strconv.ParseUint: parsing "{text}": invalid syntax'
    if watch:
        raise APIError(500, "", detail)
    raise errors.bad_request(f"invalid resource version: {detail}")


def list_version(rv_text: str, match: str) -> ListVersion:
    """Validate the pair the way ValidateListOptions does; "" and "0" mean no particular version."""
    if match not in ("", EXACT, NOT_OLDER_THAN):
        raise errors.invalid(
            "meta.k8s.io",
            "ListOptions",
            "",
            [
                FieldError(
                    "FieldValueNotSupported",
                    "resourceVersionMatch",
                    match,
                    'supported values: "Exact", "NotOlderThan", ""',
                )
            ],
        )
    if match and not rv_text:
        raise _forbidden("resourceVersionMatch is forbidden unless resourceVersion is provided")
    if not rv_text:
        return ListVersion(None)
    rv = parse_resource_version(rv_text)
    if match == EXACT and rv == 0:
        raise _forbidden('resourceVersionMatch "exact" is forbidden for resourceVersion "0"')
    return ListVersion(rv or None, match == EXACT)


def too_large(rv: int, current: int) -> APIError:
    """What a read at a resourceVersion the store has not reached answers after waiting."""
    return APIError(
        504,
        "Timeout",
        f"Timeout: Too large resource version: {rv}, current: {current}",
        {
            "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
            "retryAfterSeconds": 1,
        },
    )


def dry_run(values: list[str], options_kind: str) -> bool:
    """``dryRun`` of Create/Update/Patch/DeleteOptions: only "All" exists."""
    if any(v != "All" for v in values):
        raise errors.invalid(
            "meta.k8s.io",
            options_kind,
            "",
            [FieldError("FieldValueNotSupported", "dryRun", values, 'supported values: "All"')],
        )
    return bool(values)
