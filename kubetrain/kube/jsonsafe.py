"""Walking user JSON without recursion, so no object can crash or blind the operator.

Every path that walks user data must survive what a real API server stores: kube-apiserver
accepts JSON nested up to 10,000 deep, while Python recursion stops at ~1,000 and orjson at 1,024
(decoding) and 254 (encoding). The helpers here are iterative (an explicit stack), so their cost
is linear in the size of the value and independent of its depth:

* `loads`: orjson when it can, else an iterative parser that, as Go's encoding/json (and so
  kube-apiserver) does, turns lone UTF-16 surrogates and each invalid UTF-8 byte into U+FFFD and
  optionally refuses nesting beyond a limit (Go's is `GO_MAX_DEPTH`);
* `too_deep`: the path of the first value nested deeper than a limit, for a field error;
* `clone`/`transform`: deep copies with a function applied to every leaf or container;
* `scrub`: lone surrogates replaced, so a value can always be encoded as UTF-8;
* `equal`: `==` that does not raise on depth.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Callable
from json.decoder import scanstring  # type: ignore[attr-defined]  # C-accelerated, handles escapes
from typing import Any

import orjson

GO_MAX_DEPTH = 10_000
"""encoding/json's maxNestingDepth: deeper input is a syntax error ("exceeded max depth")."""
_ORJSON_MAX_DEPTH = 1024

MAX_JOB_DEPTH = 100
"""Nesting of a job object the operator handles (a PodSpec is ~15 levels deep; anything deeper
is data no pod can carry, and orjson cannot encode beyond 254)."""

_SURROGATE = re.compile("[\ud800-\udfff]")


class JSONError(ValueError):
    """Input that is not JSON at all (not merely deep or with odd strings)."""


class TooDeep(JSONError):
    """Nesting beyond the parser's limit; the message is Go's."""


def _go_replace(exc: UnicodeError) -> tuple[str, int]:
    """Go's utf8.DecodeRune: every byte of an invalid sequence is one U+FFFD (Python's "replace"
    folds a truncated sequence into one)."""
    assert isinstance(exc, UnicodeDecodeError)
    return "\ufffd", exc.start + 1


codecs.register_error("kubetrain-go-utf8", _go_replace)


def loads(data: bytes | bytearray | memoryview | str, max_depth: int | None = None) -> Any:
    """Parse JSON; lone surrogate escapes and invalid UTF-8 bytes become U+FFFD (Go's behaviour).

    Any depth without `max_depth`; with it, deeper containers raise `TooDeep`."""
    if max_depth is None or max_depth >= _ORJSON_MAX_DEPTH:
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
    if isinstance(data, str):
        text = data
    else:
        text = bytes(data).decode("utf-8", "kubetrain-go-utf8")
    return _parse(text, max_depth)


def _fix(text: str) -> str:
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text


_TOKEN = re.compile(
    r"""[ \t\n\r]*(?:
        ([\[\]{},:])                                        # 1 punctuation
      | "([^"\\\x00-\x1f]*)"                              # 2 a string without escapes
      | (")                                                  # 3 a string with escapes (or broken)
      | (-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?)  # 4 a number (5 fraction, 6 exponent)
      | (true|false|null)                                    # 7 a literal
    )""",
    re.VERBOSE,
)
_LITERAL = {"true": True, "false": False, "null": None}
_VALUE, _FIRST_VALUE, _KEY, _FIRST_KEY, _COLON, _AFTER = range(6)
"""Parser states: what the next token may be (a value; a value or "]"; a key; a key or "}"; ":";
"," or a closer)."""


def _parse(s: str, max_depth: int | None = None) -> Any:
    """An iterative JSON parser: a token regex and one explicit stack of open containers."""
    stack: list[Any] = []
    keys: list[str] = []  # the pending key of each open object (parallel to the dicts in stack)
    limit = max_depth if max_depth is not None else len(s)
    state, i = _VALUE, 0
    match = _TOKEN.match
    while True:
        m = match(s, i)
        if m is None:
            raise JSONError(
                f"invalid character {s[i : i + 1]!r} at char {i}"
                if s[i:].strip(" \t\n\r")
                else "unexpected end of JSON input"
            )
        i = m.end()
        punct = m.group(1)
        if punct is not None:
            if punct in "{[" and state in (_VALUE, _FIRST_VALUE):
                if len(stack) >= limit:
                    raise TooDeep(f"invalid character '{punct}' exceeded max depth")
                if punct == "{":
                    stack.append({})
                    keys.append("")
                    state = _FIRST_KEY
                else:
                    stack.append([])
                    state = _FIRST_VALUE
                continue
            if punct == ":" and state == _COLON:
                state = _VALUE
                continue
            if punct == "," and state == _AFTER:
                state = _KEY if type(stack[-1]) is dict else _VALUE
                continue
            closes = (punct == "]" and state in (_AFTER, _FIRST_VALUE) and type(stack[-1]) is list) or (
                punct == "}" and state in (_AFTER, _FIRST_KEY) and type(stack[-1]) is dict
            )
            if not closes:
                raise JSONError(f"unexpected {punct!r} at char {i - 1}")
            value: Any = stack.pop()
            if punct == "}":
                keys.pop()
        else:
            if m.group(2) is not None:
                value = _fix(m.group(2))
            elif m.group(3) is not None:
                try:
                    value, i = scanstring(s, i, True)
                except ValueError as exc:
                    end = "Unterminated string" in str(exc)
                    raise JSONError("unexpected end of JSON input" if end else str(exc)) from exc
                value = _fix(value)
            elif m.group(4) is not None:
                value = float(m.group(4)) if m.group(5) or m.group(6) else int(m.group(4))
            else:
                value = _LITERAL[m.group(7)]
            if state in (_KEY, _FIRST_KEY):
                if type(value) is not str:
                    raise JSONError(f"expected a string key at char {m.start()}")
                keys[-1] = value
                state = _COLON
                continue
            if state not in (_VALUE, _FIRST_VALUE):
                raise JSONError(f"expected ',' or a closing bracket at char {m.start()}")
        # a value is complete: store it in its container, or it is the document
        if not stack:
            if s[i:].strip(" \t\n\r"):
                raise JSONError(f"extra data at char {i}")
            return value
        top = stack[-1]
        if type(top) is list:
            top.append(value)
        else:
            top[keys[-1]] = value
        state = _AFTER


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


def equal(a: Any, b: Any) -> bool:
    """`a == b` for JSON-shaped data of any depth (Python's `==` raises RecursionError beyond
    ~1,000 levels): the C comparison first, an explicit stack only when it gives up."""
    try:
        return bool(a == b)
    except RecursionError:
        pass
    stack: list[tuple[Any, Any]] = [(a, b)]
    while stack:
        x, y = stack.pop()
        if x is y:
            continue
        if type(x) is dict and type(y) is dict:
            if x.keys() != y.keys():
                return False
            stack.extend((v, y[k]) for k, v in x.items())
        elif type(x) is list and type(y) is list:
            if len(x) != len(y):
                return False
            stack.extend(zip(x, y, strict=True))
        elif type(x) in (dict, list) or type(y) in (dict, list) or x != y:
            return False
    return True
