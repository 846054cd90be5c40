"""Equality- and existence-based label selectors, evaluated locally.

The manager must know whether an object it creates will ever show up in a label-filtered cache:
raising an expectation for an object the cache cannot see would stall its job for the whole
expectation TTL.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache


def matches(selector: str | None, labels: Mapping[str, str] | None) -> bool:
    """`k`, `!k`, `k=v`, `k==v`, `k!=v`, comma-separated (ANDed); set-based terms (`in`) too."""
    if not selector:
        return True
    labels = labels or {}
    return all(_term_matches(term.strip(), labels) for term in _split(selector))


@lru_cache(maxsize=256)
def _split(selector: str) -> tuple[str, ...]:
    """Split on commas that are not inside `in (...)` parentheses (cached: selectors are few)."""
    terms, depth, start = [], 0, 0
    for i, ch in enumerate(selector):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            terms.append(selector[start:i])
            start = i + 1
    terms.append(selector[start:])
    return tuple(t for t in terms if t.strip())


def _term_matches(term: str, labels: Mapping[str, str]) -> bool:
    if " notin " in term or " in " in term:
        negate = " notin " in term
        key, _, rest = term.partition(" notin " if negate else " in ")
        values = {v.strip() for v in rest.strip().strip("()").split(",")}
        present = key.strip() in labels and labels[key.strip()] in values
        return not present if negate else present
    if "!=" in term:
        key, _, value = term.partition("!=")
        return labels.get(key.strip()) != value.strip()
    if "=" in term:
        key, _, value = term.partition("==" if "==" in term else "=")
        return labels.get(key.strip()) == value.strip()
    if term.startswith("!"):
        return term[1:].strip() not in labels
    return term in labels
