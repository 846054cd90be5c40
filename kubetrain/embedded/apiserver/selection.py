"""Field selectors (``fields.ParseSelector``), parsed once per request and matched against stored dicts.

Label selectors are `kubetrain.kube.labels`, which the operator shares; field selectors are the
server's alone (which fields a kind can be selected by is the server's table)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubetrain.kube.labels import SelectorError


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
