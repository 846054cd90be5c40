"""Fast JSON encode/decode and deep copy of plain JSON data, at any depth clients may send.

orjson is several times faster than the stdlib on both ends; `jsonsafe` wraps it with iterative
fallbacks for what orjson refuses (nesting beyond 1,024 levels when decoding, 254 when encoding,
lone surrogates, integers beyond 64 bits), so nothing a client stored becomes unreadable. Like
kube-apiserver (Go's int64 / float64), integers beyond 64 bits are read as floats.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from kubetrain.kube import jsonsafe
from kubetrain.kube.jsonsafe import GO_MAX_DEPTH, TooDeep, equal

__all__ = [
    "GO_MAX_DEPTH",
    "TooDeep",
    "clone",
    "dumps",
    "equal",
    "integral_floats_to_ints",
    "iterate",
    "loads",
]

Step = Generator[Any, Any, Any]
"""A recursive function written as a generator: ``(yield step(...))`` is the recursive call."""


def iterate(step: Step) -> Any:
    """Run a recursive algorithm written with `Step` generators on an explicit stack, so its depth
    is bounded by memory, not by Python's recursion limit. The algorithm keeps its recursive shape
    (``result = yield child(...)`` instead of ``result = child(...)``)."""
    stack: list[Step] = [step]
    value: Any = None
    while stack:
        try:
            call = stack[-1].send(value)
        except StopIteration as done:
            stack.pop()
            value = done.value
            continue
        stack.append(call)
        value = None
    return value


def dumps(obj: Any) -> bytes:
    """Serialize to compact UTF-8 JSON bytes."""
    return jsonsafe.dumps(obj)


def loads(data: bytes | str, max_depth: int | None = None) -> Any:
    """Parse JSON; raises ValueError on malformed input, `TooDeep` beyond ``max_depth``."""
    return jsonsafe.loads(data, max_depth)


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


_INT64_LIMIT = 2.0**63


def _as_go_reads_back(value: Any) -> Any:
    if type(value) is float and value.is_integer() and -_INT64_LIMIT <= value < _INT64_LIMIT:
        return int(value)
    return value


def integral_floats_to_ints(obj: Any) -> None:
    """In place, every float with an integral value in int64's range becomes an int (``1.0`` -> ``1``).

    kube-apiserver keeps a custom resource as JSON and decodes it again for every answer: Go writes
    float64(1) as ``1``, which reads back as an int64 (sigs.k8s.io/json keeps integers as int64),
    so a client that sent ``1.0`` (the Kubeflow SDK's ``cpu: 1.0``) reads ``1`` from then on, and
    so do controllers: a quantity ``1``, not ``1.0``."""
    stack: list[Any] = [obj]
    while stack:
        node = stack.pop()
        if type(node) is dict:
            for key, value in node.items():
                if type(value) is float:
                    node[key] = _as_go_reads_back(value)
                elif type(value) is dict or type(value) is list:
                    stack.append(value)
        elif type(node) is list:
            for i, value in enumerate(node):
                if type(value) is float:
                    node[i] = _as_go_reads_back(value)
                elif type(value) is dict or type(value) is list:
                    stack.append(value)
