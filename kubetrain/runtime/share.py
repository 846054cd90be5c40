"""One object for equal read-only subtrees across cached objects.

A job's pods carry the same ownerReferences and the same trimmed spec; caches never mutate what
they store (see cache.py), so equal subtrees can be one shared object instead of one per pod:
~600 B per cached pod, a third of the trimmed pod.
"""

from __future__ import annotations

from typing import Any, TypeVar

import orjson

T = TypeVar("T")


class Sharer:
    """Returns an equal value seen before instead of `value`, else remembers `value`.

    Keyed by the hash of the value's canonical JSON, confirmed by equality, so a hash collision
    only costs a missed share. Bounded: when full the table starts over, which loses sharing with
    older objects, never correctness.
    """

    def __init__(self, max_entries: int = 4096) -> None:
        self._table: dict[int, Any] = {}
        self._max = max_entries

    def __call__(self, value: T) -> T:
        try:
            key = hash(orjson.dumps(value, option=orjson.OPT_SORT_KEYS))
        except (TypeError, orjson.JSONEncodeError):  # not JSON-shaped (e.g. a 65-bit int): keep as is
            return value
        got = self._table.get(key)
        if got is not None and got == value:
            return got
        if len(self._table) >= self._max:
            self._table.clear()
        self._table[key] = value
        return value

    def __len__(self) -> int:
        return len(self._table)
