"""The job-kind rules of the operator's RBAC, generated from the registry.

The operator must be allowed to read and update every registered kind, its status and its
finalizers; those three rules per API group are generated from the registry into the roles that
grant the operator its work (`TARGETS`), so a new kind is granted by registering it. The rest of
each file (its comment, metadata and the rules for pods, services and the other children) stays
hand-written: the generator replaces only the leading rules it wrote (each group's three, in its
shape), and writes them in the file's own line width so regenerating an unchanged registry changes no byte
(`python -m kubetrain.kinds.manifests --write|--check manifests`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kubetrain.api.kinds import KindInfo
from kubetrain.kinds.registry import REGISTERED_KINDS

JOB_VERBS = ("get", "list", "watch", "update", "patch", "delete")
"""The jobs themselves: read through the cache, updated (finalizers, metadata), deleted (TTL)."""
SUBRESOURCE_VERBS = {"status": ("get", "update", "patch"), "finalizers": ("update",)}
"""The status the planner writes, and the finalizers of jobs whose children block owner deletion."""
READ_VERBS = ("get", "list", "watch")


@dataclass(frozen=True)
class Target:
    """A role file under the manifests tree whose job-kind rules are generated."""

    path: str
    width: int
    """The line width its flow sequences wrap at (as committed)."""
    scope: Callable[[KindInfo], bool] = lambda info: True
    """Which kinds it grants: a namespaced Role can grant no cluster-scoped kind (Kubernetes
    ignores such a rule), so the single-namespace overlay grants those in a ClusterRole."""
    read_only: bool = False
    """Only `READ_VERBS` on the kinds, no subresources: an operator of one namespace reads the
    cluster-scoped kinds (runtimes) and must not be able to change them for every namespace."""


def _namespaced(info: KindInfo) -> bool:
    return info.namespaced


def _cluster_scoped(info: KindInfo) -> bool:
    return not info.namespaced


TARGETS = (
    Target("base/rbac/cluster-role.yaml", 100),
    Target("overlays/single-namespace/rbac/role.yaml", 110, _namespaced),
    Target("overlays/single-namespace/rbac/cluster-kinds-role.yaml", 110, _cluster_scoped, read_only=True),
)


def job_rules(kinds: Iterable[KindInfo], read_only: bool = False) -> list[dict[str, Any]]:
    """Per API group, in registry order: the jobs, their status, their finalizers (with
    `read_only`: one rule of `READ_VERBS` on the kinds)."""
    plurals: dict[str, list[str]] = {}
    for info in kinds:
        group = plurals.setdefault(info.group, [])
        if info.plural not in group:
            group.append(info.plural)
    if read_only:
        return [
            {"apiGroups": [g], "resources": names, "verbs": list(READ_VERBS)} for g, names in plurals.items()
        ]
    return [rule for group, names in plurals.items() for rule in _group_rules(group, names)]


def _group_rules(group: str, names: list[str]) -> list[dict[str, Any]]:
    rules: list[dict[str, Any]] = [{"apiGroups": [group], "resources": list(names), "verbs": list(JOB_VERBS)}]
    for sub, verbs in SUBRESOURCE_VERBS.items():
        rules.append({"apiGroups": [group], "resources": [f"{n}/{sub}" for n in names], "verbs": list(verbs)})
    return rules


def _names_jobs(rule: Any, groups: set[str]) -> bool:
    """A rule of a registered kind's group naming only jobs or their status/finalizers (an edited
    copy of a generated rule; a hand-written rule of that group for anything else is kept)."""
    if not isinstance(rule, dict) or not rule.get("apiGroups") or not isinstance(rule.get("resources"), list):
        return False
    subs = {"", *SUBRESOURCE_VERBS}
    resources = rule["resources"]
    return set(rule["apiGroups"]) <= groups and all(
        isinstance(r, str) and r.partition("/")[2] in subs for r in resources
    )


def _is_generated(triple: list[Any]) -> bool:
    """Whether three committed rules are one group's job rules as this module writes them (so a
    group the registry no longer has is removed too)."""
    first = triple[0] if triple else None
    if len(triple) != 1 + len(SUBRESOURCE_VERBS) or not isinstance(first, dict):
        return False
    groups, names = first.get("apiGroups"), first.get("resources")
    if not (isinstance(groups, list) and len(groups) == 1 and isinstance(names, list)):
        return False
    return triple == _group_rules(groups[0], names)


def _items(lines: list[str], start: int) -> list[tuple[int, Any]]:
    """(end line, parsed rule) of each block-sequence item from `start` on."""
    out = []
    end = start
    while end < len(lines) and lines[end].startswith("- "):
        item_end = end + 1
        while item_end < len(lines) and lines[item_end].startswith("  "):
            item_end += 1
        parsed = yaml.safe_load("".join(lines[end:item_end]))
        out.append((item_end, parsed[0] if isinstance(parsed, list) and len(parsed) == 1 else None))
        end = item_end
    return out


def splice(text: str, rules: list[dict[str, Any]], width: int) -> str:
    """`text` (one role's YAML) with its leading job-kind rules replaced by `rules`."""
    lines = text.splitlines(keepends=True)
    start = lines.index("rules:\n") + 1
    items = _items(lines, start)
    groups = {g for rule in rules for g in rule["apiGroups"]}
    size = 1 + len(SUBRESOURCE_VERBS)
    owned = 0
    while owned < len(items):
        if _is_generated([rule for _, rule in items[owned : owned + size]]):
            owned += size
        elif _names_jobs(items[owned][1], groups):
            owned += 1
        else:
            break
    end = items[owned - 1][0] if owned else start
    rendered = yaml.safe_dump(rules, default_flow_style=None, width=width, sort_keys=False)
    return "".join(lines[:start]) + rendered + "".join(lines[end:])


def generate(manifests: Path, kinds: Iterable[KindInfo] | None = None) -> dict[str, str]:
    """Target path (relative to `manifests`) -> its text with the registry's job-kind rules."""
    infos = list(REGISTERED_KINDS.values() if kinds is None else kinds)
    return {
        t.path: splice(
            (manifests / t.path).read_text(encoding="utf-8"),
            job_rules(filter(t.scope, infos), t.read_only),
            t.width,
        )
        for t in TARGETS
    }
