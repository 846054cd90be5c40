"""Label and field selectors, parsed once per request and matched against stored dicts."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)
_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_SET = re.compile(r"^(\S+)\s+(in|notin)\s*\((.*)\)$")


class SelectorError(ValueError):
    """A selector the server cannot parse (answered with 400 BadRequest)."""


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!"
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        if self.op == "exists":
            return present
        if self.op == "!":
            return not present
        if self.op in ("=", "in"):
            return present and labels[self.key] in self.values
        # "!=" and "notin" match objects without the label, as in labels.Selector.
        return not present or labels[self.key] not in self.values


def _split_top(text: str) -> list[str]:
    parts: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts


def _check_key(key: str) -> str:
    if not _KEY.match(key) or len(key.rsplit("/", 1)[-1]) > 63:
        raise SelectorError(
            f'unable to parse requirement: invalid label key "{key}": name part must consist '
            "of alphanumeric characters, '-', '_' or '.', and must start and end with an "
            "alphanumeric character"
        )
    return key


def _check_value(value: str) -> str:
    if not _VALUE.match(value) or len(value) > 63:
        raise SelectorError(
            f'unable to parse requirement: invalid label value: "{value}": at key: '
            "a valid label must be an empty string or consist of alphanumeric characters, "
            "'-', '_' or '.', and must start and end with an alphanumeric character"
        )
    return value


class LabelSelector:
    """``labels.Parse`` semantics: =, ==, !=, in, notin, key (exists), !key."""

    def __init__(self, requirements: list[Requirement]) -> None:
        self.requirements = requirements

    @classmethod
    def parse(cls, text: str | None) -> LabelSelector:
        reqs: list[Requirement] = []
        if not text or not text.strip():
            return cls(reqs)
        for raw in _split_top(text):
            term = raw.strip()
            if not term:
                raise SelectorError(f"found '', expected: identifier in selector \"{text}\"")
            m = _SET.match(term)
            if m:
                values = tuple(_check_value(v.strip()) for v in m.group(3).split(",") if v.strip() != "")
                # kube-apiserver accepts an empty set: `in ()` matches nothing, `notin ()` everything.
                reqs.append(Requirement(_check_key(m.group(1)), m.group(2), values))
            elif term.startswith("!") and "=" not in term:
                reqs.append(Requirement(_check_key(term[1:].strip()), "!"))
            elif "!=" in term:
                k, v = term.split("!=", 1)
                reqs.append(Requirement(_check_key(k.strip()), "!=", (_check_value(v.strip()),)))
            elif "==" in term:
                k, v = term.split("==", 1)
                reqs.append(Requirement(_check_key(k.strip()), "=", (_check_value(v.strip()),)))
            elif "=" in term:
                k, v = term.split("=", 1)
                reqs.append(Requirement(_check_key(k.strip()), "=", (_check_value(v.strip()),)))
            else:
                reqs.append(Requirement(_check_key(term), "exists"))
        return cls(reqs)

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
