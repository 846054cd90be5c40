"""Values nested as deep as kube-apiserver accepts, for tests of the code that walks user JSON."""

from __future__ import annotations

from typing import Any

DEPTHS = (600, 5000)
"""Past Python's recursion limit (~1,000) and orjson's (254 encoding, 1,024 decoding)."""


def nested(depth: int, leaf: Any = "x") -> Any:
    """`depth` levels of alternating {"k": ...} and [...] around `leaf`."""
    value = leaf
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


def depth_of(value: Any) -> int:
    level = 0
    while isinstance(value, dict | list):
        value = value["k"] if isinstance(value, dict) else value[0]
        level += 1
    return level
