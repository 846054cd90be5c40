"""The status the plan hands back: written only when it differs from the stored one.

Upstream compares the whole status (timestamps included) and writes through the status
subresource only on change; a steady job therefore causes no writes at all. We compare the
encoded forms, so fields decoded and re-encoded identically never count as a change.
"""

from __future__ import annotations

from kubetrain.api.codec import encode
from kubetrain.api.types import JobStatus
from kubetrain.controller.names import JsonDict


def encode_status(status: JobStatus) -> JsonDict:
    return encode(status)


def changed_status(before: JsonDict, status: JobStatus) -> JsonDict | None:
    """The encoded `status` if it differs from `before` (deep equality), else None."""
    after = encode(status)
    return None if after == before else after


def move_active_to_succeeded(status: JobStatus) -> None:
    """A succeeded job has no active replica: whatever still ran is counted as succeeded."""
    for replica in status.replica_statuses.values():
        if replica.active:
            replica.succeeded += replica.active
            replica.active = 0
