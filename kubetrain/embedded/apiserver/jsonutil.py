"""Fast JSON encode/decode and deep copy of plain JSON data.

orjson is several times faster than the stdlib on both ends. Like kube-apiserver (Go's int64 /
float64), it reads integers beyond 64 bits as floats; writing such an integer (which only a client
could have sent) falls back to the stdlib so nothing a client stored becomes unreadable.
"""

from __future__ import annotations

import json
from typing import Any

import orjson


def dumps(obj: Any) -> bytes:
    """Serialize to compact UTF-8 JSON bytes."""
    try:
        return orjson.dumps(obj)
    except TypeError:  # an integer beyond 64 bits, or a type orjson does not know
        return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def loads(data: bytes | str) -> Any:
    """Parse JSON; raises ValueError on malformed input (orjson.JSONDecodeError is one)."""
    return orjson.loads(data)


def clone(obj: Any, _depth: int = 0) -> Any:
    """Deep-copy JSON-shaped data (dicts, lists, scalars) faster than copy.deepcopy.

    Recursive for the first levels (fast); deeper data, which clients may store (kube-apiserver
    accepts 10,000 levels), is copied with an explicit stack instead of raising RecursionError.
    """
    if _depth >= _RECURSIVE_DEPTH:
        return _clone_deep(obj)
    if isinstance(obj, dict):
        return {k: clone(v, _depth + 1) for k, v in obj.items()}
    if isinstance(obj, list):
        return [clone(v, _depth + 1) for v in obj]
    return obj


_RECURSIVE_DEPTH = 64


def _clone_deep(obj: Any) -> Any:
    if not isinstance(obj, dict | list):
        return obj
    root: Any = {} if isinstance(obj, dict) else []
    stack: list[tuple[Any, Any]] = [(obj, root)]
    while stack:
        src, dst = stack.pop()
        pairs = src.items() if isinstance(src, dict) else enumerate(src)
        for key, value in pairs:
            if isinstance(value, dict | list):
                copy: Any = {} if isinstance(value, dict) else []
                stack.append((value, copy))
                value = copy
            if isinstance(dst, dict):
                dst[key] = value
            else:
                dst.append(value)
    return root
