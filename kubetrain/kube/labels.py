"""Label selectors: apimachinery's ``labels.Parse`` (lexer and parser) and ``labels.Selector`` matching.

The API server must accept, refuse and explain selectors exactly as kube-apiserver does (``a in ()``
is ``a in ("")``, ``a==`` selects an empty value, the error texts are upstream's); the operator must
know whether an object it creates will show up in its label-filtered cache, since raising an
expectation for an object the cache cannot see would stall its job for the whole expectation TTL.
Both evaluate the same selectors, so both use this one parser.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from kubetrain.kube.names import LABEL_VALUE_MSG, is_label_value, qualified_name_errors


class SelectorError(ValueError):
    """A selector that cannot be parsed (the API server answers it with 400 BadRequest)."""


def _invalid(field: str, value: str, detail: str) -> str:
    """``field.Invalid(...).Error()`` for a string value."""
    quoted = value.replace("\\", "\\\\").replace('"', '\\"')
    return f'{field}: Invalid value: "{quoted}": {detail}'


SPECIAL = set("=!(),><")
TOKENS = {")": "CPAR", ",": "COMMA", "!": "NOT", "==": "DEQ", "=": "EQ", ">": "GT", "in": "IN", "<": "LT"}
TOKENS.update({"!=": "NEQ", "notin": "NOTIN", "(": "OPAR"})
BINARY = "in, notin, =, ==, !=, gt, lt"
OPERATORS = {"IN": "in", "EQ": "=", "DEQ": "=", "GT": "gt", "LT": "lt", "NOTIN": "notin", "NEQ": "!="}


def _lex(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    i, n = 0, len(text)
    while True:
        while i < n and text[i] in " \t\r\n":
            i += 1
        if i >= n:
            out.append(("END", ""))
            return out
        if text[i] in SPECIAL:
            buffer, last = "", None
            while i < n and text[i] in SPECIAL:
                buffer += text[i]
                if buffer in TOKENS:
                    last = (TOKENS[buffer], buffer)
                elif last is not None:
                    break
                i += 1
            if last is None:
                out.append(("ERROR", f"error expected: keyword found '{buffer}'"))
            else:
                out.append(last)
            continue
        start = i
        while i < n and text[i] not in SPECIAL and text[i] not in " \t\r\n":
            i += 1
        word = text[start:i]
        out.append((TOKENS[word], word) if word in ("in", "notin") else ("ID", word))


class _Parser:
    def __init__(self, text: str) -> None:
        self.items = _lex(text)
        self.pos = 0

    def look(self, values: bool = True) -> tuple[str, str]:
        tok, lit = self.items[min(self.pos, len(self.items) - 1)]
        if values and tok in ("IN", "NOTIN"):
            tok = "ID"
        return tok, lit

    def take(self, values: bool = True) -> tuple[str, str]:
        item = self.look(values)
        self.pos = min(self.pos + 1, len(self.items) - 1)
        return item

    def parse(self) -> list[tuple[str, str, tuple[str, ...]]]:
        reqs: list[tuple[str, str, tuple[str, ...]]] = []
        while True:
            tok, lit = self.look()
            if tok in ("ID", "NOT"):
                try:
                    reqs.append(self.requirement())
                except SelectorError as exc:
                    raise SelectorError(f"unable to parse requirement: {exc}") from None
                tok, lit = self.take()
                if tok == "END":
                    return reqs
                if tok == "COMMA":
                    tok2, lit2 = self.look()
                    if tok2 not in ("ID", "NOT"):
                        raise SelectorError(f"found '{lit2}', expected: identifier after ','")
                    continue
                raise SelectorError(f"found '{lit}', expected: ',' or 'end of string'")
            if tok == "END":
                return reqs
            raise SelectorError(f"found '{lit}', expected: !, identifier, or 'end of string'")

    def requirement(self) -> tuple[str, str, tuple[str, ...]]:
        op = ""
        tok, lit = self.take()
        if tok == "NOT":
            op = "!"
            tok, lit = self.take()
        if tok != "ID":
            raise SelectorError(f"found '{lit}', expected: identifier")
        key = lit
        errs = qualified_name_errors(key, "a valid label key")
        if errs:
            raise SelectorError(_invalid("<nil>", key, "; ".join(errs)))
        if op or self.look()[0] in ("END", "COMMA"):
            return (key, op or "exists", ())  # parse() refuses what follows a `!key`
        tok, lit = self.take(values=False)
        if tok not in OPERATORS:
            raise SelectorError(f"found '{lit}', expected: {BINARY}")
        op = OPERATORS[tok]
        values = self.set_values() if op in ("in", "notin") else self.exact_value()
        ordered = tuple(sorted(values))
        for i, value in enumerate(ordered):
            if len(value) > 63 or not is_label_value(value):
                detail = "must be no more than 63 bytes" if len(value) > 63 else LABEL_VALUE_MSG
                raise SelectorError(_invalid(f"values[{i}][{key}]", value, detail))
        if op in ("gt", "lt") and not all(v.lstrip("-").isdigit() for v in ordered):
            raise SelectorError(f"for 'Gt', 'Lt' operators, the value must be an integer: {ordered}")
        return (key, op, ordered)

    def set_values(self) -> set[str]:
        tok, lit = self.take()
        if tok != "OPAR":
            raise SelectorError(f"found '{lit}' expected: '('")
        tok, lit = self.look()
        if tok == "CPAR":
            self.take()
            return {""}
        if tok not in ("ID", "COMMA"):
            raise SelectorError(f"found '{lit}', expected: ',', ')' or identifier")
        found = self.identifiers()
        if self.take()[0] != "CPAR":
            raise SelectorError(f"found '{lit}', expected: ')'")
        return found

    def identifiers(self) -> set[str]:
        found: set[str] = set()
        while True:
            tok, lit = self.take()
            if tok == "ID":
                found.add(lit)
                tok2, lit2 = self.look()
                if tok2 == "COMMA":
                    continue
                if tok2 == "CPAR":
                    return found
                raise SelectorError(f"found '{lit2}', expected: ',' or ')'")
            if tok == "COMMA":
                if not found:
                    found.add("")
                tok2, _ = self.look()
                if tok2 == "CPAR":
                    found.add("")
                    return found
                if tok2 == "COMMA":
                    self.take()
                    found.add("")
                continue
            raise SelectorError(f"found '{lit}', expected: ',', or identifier")

    def exact_value(self) -> set[str]:
        tok, _ = self.look()
        if tok in ("END", "COMMA"):
            return {""}
        tok, lit = self.take()
        if tok == "ID":
            return {lit}
        raise SelectorError(f"found '{lit}', expected: identifier")


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!", "gt", "lt"
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        if self.op == "exists":
            return present
        if self.op == "!":
            return not present
        if self.op in ("=", "in"):
            return present and labels[self.key] in self.values
        if self.op in ("gt", "lt"):
            try:
                have, want = int(labels[self.key]), int(self.values[0])
            except (KeyError, ValueError, IndexError):
                return False
            return have > want if self.op == "gt" else have < want
        # "!=" and "notin" match objects without the label, as in labels.Selector.
        return not present or labels[self.key] not in self.values


class LabelSelector:
    """``labels.Parse`` semantics: =, ==, !=, in, notin, gt, lt, key (exists), !key; ANDed."""

    def __init__(self, requirements: list[Requirement]) -> None:
        self.requirements = requirements

    @classmethod
    def parse(cls, text: str | None) -> LabelSelector:
        """The selector `text` spells (empty: everything); SelectorError with upstream's text."""
        if not text or not text.strip():
            return cls([])
        return cls([Requirement(key, op, values) for key, op, values in _Parser(text).parse()])

    @property
    def empty(self) -> bool:
        return not self.requirements

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        if not self.requirements:
            return True
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)

    def matches_object(self, obj: Mapping[str, Any]) -> bool:
        """Whether an object's ``metadata.labels`` match."""
        return not self.requirements or self.matches((obj.get("metadata") or {}).get("labels"))


@lru_cache(maxsize=256)
def parse_selector(text: str | None) -> LabelSelector:
    """`LabelSelector.parse`, cached: a process evaluates few distinct selectors very often."""
    return LabelSelector.parse(text)


def matches(selector: str | None, labels: Mapping[str, str] | None) -> bool:
    """Whether `labels` match the selector string (an empty selector matches everything)."""
    return parse_selector(selector).matches(labels)


def format_labels(labels: Mapping[str, Any] | None) -> str:
    """``labels.Set.String()``: `k=v` pairs, keys sorted, comma-joined ("" for none)."""
    return ",".join(f"{key}={value}" for key, value in sorted((labels or {}).items()))


def label_selector_string(selector: Mapping[str, Any] | None) -> str:
    """A metav1.LabelSelector dict as ``LabelSelectorAsSelector(...).String()`` spells it:
    requirements sorted by key, set values sorted; "" for none (FormatLabelSelector shows
    ``<none>``)."""
    if not selector:
        return ""
    parts = [(key, f"{key}={value}") for key, value in (selector.get("matchLabels") or {}).items()]
    for expr in selector.get("matchExpressions") or []:
        op, key = expr.get("operator", ""), str(expr.get("key", ""))
        values = ",".join(sorted(str(v) for v in expr.get("values") or []))
        if op == "In":
            parts.append((key, f"{key} in ({values})"))
        elif op == "NotIn":
            parts.append((key, f"{key} notin ({values})"))
        elif op == "Exists":
            parts.append((key, key))
        elif op == "DoesNotExist":
            parts.append((key, f"!{key}"))
    return ",".join(text for _, text in sorted(parts, key=lambda part: part[0]))
