"""Label and field selectors, parsed once per request and matched against stored dicts."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from . import labelparse


class SelectorError(ValueError):
    """A selector the server cannot parse (answered with 400 BadRequest)."""


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
    """``labels.Parse`` semantics: =, ==, !=, in, notin, key (exists), !key."""

    def __init__(self, requirements: list[Requirement]) -> None:
        self.requirements = requirements

    @classmethod
    def parse(cls, text: str | None) -> LabelSelector:
        if not text or not text.strip():
            return cls([])
        try:
            parsed = labelparse.parse(text)
        except labelparse.ParseError as exc:
            raise SelectorError(str(exc)) from None
        return cls([Requirement(key, op, values) for key, op, values in parsed])

    @property
    def empty(self) -> bool:
        return not self.requirements

    def matches(self, obj: Mapping[str, Any]) -> bool:
        if not self.requirements:
            return True
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return all(r.matches(labels) for r in self.requirements)


def format_label_selector(selector: Mapping[str, Any] | None) -> str:
    """A metav1.LabelSelector dict as the string form scale subresources report."""
    if not selector:
        return ""
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expr in selector.get("matchExpressions") or []:
        op = expr.get("operator", "")
        key = expr.get("key", "")
        values = ",".join(sorted(expr.get("values") or []))
        if op == "In":
            parts.append(f"{key} in ({values})")
        elif op == "NotIn":
            parts.append(f"{key} notin ({values})")
        elif op == "Exists":
            parts.append(key)
        elif op == "DoesNotExist":
            parts.append(f"!{key}")
    return ",".join(parts)


def field_value(obj: Mapping[str, Any], path: str) -> str:
    """The string a field selector compares against (missing fields read as empty strings)."""
    if path == "source":
        cur: Any = (obj.get("source") or {}).get("component", "")
    else:
        cur = obj
        for part in path.split("."):
            if not isinstance(cur, Mapping):
                cur = None
                break
            cur = cur.get(part)
    if cur is None:
        return "false" if path in ("spec.hostNetwork", "spec.unschedulable") else ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


class FieldSelector:
    """``fields.ParseSelector`` semantics (=, ==, !=) restricted to a kind's selectable fields."""

    def __init__(self, terms: list[tuple[str, bool, str]]) -> None:
        self.terms = terms  # (field, equal?, value)

    @classmethod
    def parse(cls, text: str | None) -> FieldSelector:
        terms: list[tuple[str, bool, str]] = []
        if not text or not text.strip():
            return cls(terms)
        for raw in text.split(","):
            term = raw.strip()
            if "!=" in term:
                k, v = term.split("!=", 1)
                terms.append((k.strip(), False, v.strip()))
            elif "==" in term:
                k, v = term.split("==", 1)
                terms.append((k.strip(), True, v.strip()))
            elif "=" in term:
                k, v = term.split("=", 1)
                terms.append((k.strip(), True, v.strip()))
            else:
                raise SelectorError(f"invalid selector: '{text}'; can't understand '{term}'")
        return cls(terms)

    @property
    def empty(self) -> bool:
        return not self.terms

    def unsupported(self, allowed: tuple[str, ...], builtin_specific: bool) -> str | None:
        """The error text kube-apiserver gives for the first field this kind cannot select by."""
        for fld, _, _ in self.terms:
            if fld not in allowed:
                if builtin_specific:
                    return f"field label not supported: {fld}"
                only = ", ".join(f'"{f}"' for f in allowed)
                return f'"{fld}" is not a known field selector: only {only}'
        return None

    def name_equals(self) -> str | None:
        """The exact metadata.name this selector pins, if any (a cheap index lookup)."""
        for fld, eq, value in self.terms:
            if fld == "metadata.name" and eq:
                return value
        return None

    def matches(self, obj: Mapping[str, Any]) -> bool:
        return all((field_value(obj, fld) == value) == eq for fld, eq, value in self.terms)
