"""Walking user JSON without recursion, so no object can crash or blind the operator.

Every path that walks user data must survive what a real API server stores: kube-apiserver
accepts JSON nested up to 10,000 deep, while Python recursion stops at ~1,000 and orjson at 1,024
(decoding) and 254 (encoding). The helpers here are iterative (an explicit stack), so their cost
is linear in the size of the value and independent of its depth:

* `loads`: orjson when it can, else an iterative parser that also turns lone UTF-16 surrogates
  into U+FFFD, as Go's encoding/json (and so kube-apiserver) does;
* `too_deep`: the path of the first value nested deeper than a limit, for a field error;
* `clone`/`transform`: deep copies with a function applied to every leaf or container;
* `scrub`: lone surrogates replaced, so a value can always be encoded as UTF-8.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from json.decoder import scanstring  # type: ignore[attr-defined]  # C-accelerated, handles escapes
from typing import Any

import orjson

MAX_JOB_DEPTH = 100
"""Nesting of a job object the operator handles (a PodSpec is ~15 levels deep; anything deeper
is data no pod can carry, and orjson cannot encode beyond 254)."""

_WS = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_SURROGATE = re.compile("[\ud800-\udfff]")
_LITERALS = (("true", True), ("false", False), ("null", None))


class JSONError(ValueError):
    """Input that is not JSON at all (not merely deep or with odd strings)."""


def loads(data: bytes | bytearray | memoryview | str) -> Any:
    """Parse JSON of any depth; lone surrogate escapes become U+FFFD (Go's behaviour)."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        pass
    if isinstance(data, str):
        text = data
    else:
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JSONError(f"invalid UTF-8: {exc}") from exc
    return _parse(text)


def _fix(text: str) -> str:
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text


def _skip(s: str, i: int) -> int:
    match = _WS.match(s, i)
    return match.end() if match else i


def _string(s: str, i: int) -> tuple[str, int]:
    """A string token starting at `s[i] == '"'`; returns (value, index after it)."""
    try:
        value, end = scanstring(s, i + 1, True)
    except ValueError as exc:
        raise JSONError(str(exc)) from exc
    return _fix(value), end


def _key(s: str, i: int) -> tuple[str, int]:
    if s[i : i + 1] != '"':
        raise JSONError(f"expected a string key at char {i}")
    key, i = _string(s, i)
    i = _skip(s, i)
    if s[i : i + 1] != ":":
        raise JSONError(f"expected ':' at char {i}")
    return key, _skip(s, i + 1)


def _scalar(s: str, i: int) -> tuple[Any, int]:
    c = s[i : i + 1]
    if c == '"':
        return _string(s, i)
    match = _NUMBER.match(s, i)
    if match:
        text = match.group(0)
        if match.group(1) or match.group(2):
            return float(text), match.end()
        return int(text), match.end()
    for word, value in _LITERALS:
        if s.startswith(word, i):
            return value, i + len(word)
    raise JSONError(f"unexpected {c!r} at char {i}")


def _parse(s: str) -> Any:
    """An iterative JSON parser: one explicit stack of open containers instead of recursion."""
    stack: list[Any] = []
    keys: list[str] = []  # the pending key of each open object (parallel to the dicts in stack)
    i = _skip(s, 0)
    while True:
        c = s[i : i + 1]
        value: Any
        if c == "{" or c == "[":
            i = _skip(s, i + 1)
            closer = "}" if c == "{" else "]"
            if s[i : i + 1] == closer:
                value, i = ({} if c == "{" else []), i + 1
            else:
                if c == "{":
                    key, i = _key(s, i)
                    keys.append(key)
                    stack.append({})
                else:
                    stack.append([])
                continue
        else:
            value, i = _scalar(s, i)
        while True:  # a value is complete: store it, then a separator or closers follow
            if not stack:
                if _skip(s, i) != len(s):
                    raise JSONError(f"extra data at char {i}")
                return value
            top = stack[-1]
            if type(top) is list:
                top.append(value)
            else:
                top[keys[-1]] = value
            i = _skip(s, i)
            c = s[i : i + 1]
            if c == ",":
                i = _skip(s, i + 1)
                if type(top) is dict:
                    keys[-1], i = _key(s, i)
                break
            if c == ("]" if type(top) is list else "}"):
                i += 1
                value = stack.pop()
                if type(value) is dict:
                    keys.pop()
                continue
            raise JSONError(f"expected ',' or a closing bracket at char {i}")


def _child_path(path: str, key: Any) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


def too_deep(value: Any, limit: int = MAX_JOB_DEPTH, path: str = "") -> str | None:
    """The path of the first container nested more than `limit` levels deep (the root is level
    1), or None. Iterative and stops at the first hit, so any depth costs at most one pass."""
    stack: list[tuple[Any, str, int]] = [(value, path, 1)]
    while stack:
        node, where, level = stack.pop()
        if type(node) is dict:
            items: Any = node.items()
        elif type(node) is list:
            items = enumerate(node)
        else:
            continue
        if level > limit:
            return where or "<root>"
        for key, child in items:
            if type(child) is dict or type(child) is list:
                stack.append((child, _child_path(where, key), level + 1))
    return None


def transform(value: Any, leaf: Callable[[Any], Any], key: Callable[[Any], Any] | None = None) -> Any:
    """A deep copy of JSON-shaped data with `leaf` applied to every non-container value and
    `key` (default: identity) to every dict key; exact dict and list types only, like JSON."""
    if type(value) is not dict and type(value) is not list:
        return leaf(value)
    root: Any = {} if type(value) is dict else []
    stack: list[tuple[Any, Any]] = [(value, root)]
    while stack:
        src, dst = stack.pop()
        if type(src) is dict:
            for k, v in src.items():
                if type(v) is dict or type(v) is list:
                    new: Any = {} if type(v) is dict else []
                    stack.append((v, new))
                    v = new
                else:
                    v = leaf(v)
                dst[key(k) if key is not None else k] = v
        else:
            for v in src:
                if type(v) is dict or type(v) is list:
                    new = {} if type(v) is dict else []
                    stack.append((v, new))
                    v = new
                else:
                    v = leaf(v)
                dst.append(v)
    return root


def _same(value: Any) -> Any:
    return value


def clone(value: Any) -> Any:
    """A deep copy of JSON-shaped data (scalars shared, they are immutable)."""
    return transform(value, _same)


def _scrub_leaf(value: Any) -> Any:
    return _fix(value) if type(value) is str else value


def _scrub_key(value: Any) -> Any:
    return _fix(value) if type(value) is str else value


def scrub(value: Any) -> Any:
    """A copy with every lone surrogate in strings and keys replaced by U+FFFD (encodable)."""
    return transform(value, _scrub_leaf, _scrub_key)


def dumps(value: Any) -> bytes:
    """orjson's encoding, falling back for what it refuses (depth > 254, lone surrogates):
    surrogates are scrubbed and deep values written by an iterative encoder."""
    try:
        return orjson.dumps(value)
    except TypeError:
        pass
    return _dump(scrub(value)).encode("utf-8")


def _dump(value: Any) -> str:
    """Iterative compact JSON encoding of dicts, lists and JSON scalars."""
    out: list[str] = []
    stack: list[Any] = [value]
    while stack:
        node = stack.pop()
        if type(node) is _Raw:
            out.append(node.text)
        elif type(node) is dict:
            out.append("{")
            parts: list[Any] = []
            for n, (k, v) in enumerate(node.items()):
                prefix = "," if n else ""
                parts.append(_Raw(prefix + orjson.dumps(str(k)).decode() + ":"))
                parts.append(v)
            parts.append(_Raw("}"))
            stack.extend(reversed(parts))
        elif type(node) is list:
            out.append("[")
            parts = []
            for n, v in enumerate(node):
                if n:
                    parts.append(_Raw(","))
                parts.append(v)
            parts.append(_Raw("]"))
            stack.extend(reversed(parts))
        else:
            out.append(_dump_scalar(node))
    return "".join(out)


def _dump_scalar(value: Any) -> str:
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # an integer beyond 64 bits (Go reads it as a float; keep what was written)
        return json.dumps(value)


class _Raw:
    """Already-encoded text on the encoder's stack."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text
