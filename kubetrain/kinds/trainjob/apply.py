"""Upstream's `pkg/apply` helpers over raw dicts: upsert a named item into a list (env vars by
name, ports by containerPort), and the strategic merge a `runtimePatches` entry makes into a
replicated job's template.

All of them edit in place the lists of a copy the caller owns; none raises on malformed input.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

JsonDict = dict[str, Any]

MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "ports": "containerPort",
    "imagePullSecrets": "name",
}
"""The patch-merge keys of the lists a JobTemplateSpec's strategic merge merges (core/v1's
`patchMergeKey`s); any other list is replaced, as strategic merge does for lists without one."""


def as_dict(value: object) -> JsonDict:
    return value if isinstance(value, dict) else {}


def as_list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def upsert(items: list[Any], new: JsonDict, key: str) -> None:
    """`apply.UpsertEnvVar`/`UpsertPort`: the item with the same key is replaced, else appended."""
    for index, item in enumerate(items):
        if isinstance(item, dict) and item.get(key) == new.get(key):
            items[index] = copy.deepcopy(new)
            return
    items.append(copy.deepcopy(new))


def upsert_all(container: JsonDict, field: str, new: Iterable[Any], key: str) -> None:
    """Upsert each item of `new` into `container[field]` (created when absent and `new` has any)."""
    incoming = [item for item in new if isinstance(item, dict)]
    if not incoming:
        return
    items = container.get(field)
    if not isinstance(items, list):
        items = container[field] = []
    for item in incoming:
        upsert(items, item, key)


def strategic_merge(target: Any, patch: Any, field: str = "") -> Any:
    """A JSON object merged as Kubernetes' strategic merge patch merges a JobTemplateSpec: maps
    recursively, `null` deletes, lists with a merge key merged item by item, other lists replaced."""
    if isinstance(patch, dict) and isinstance(target, dict):
        out = dict(target)
        for key, value in patch.items():
            if value is None:
                out.pop(key, None)
            else:
                out[key] = strategic_merge(out.get(key), value, key)
        return out
    if isinstance(patch, list) and isinstance(target, list) and field in MERGE_KEYS:
        merge_key = MERGE_KEYS[field]
        out_list = list(target)
        for item in patch:
            if not isinstance(item, dict) or merge_key not in item:
                out_list.append(copy.deepcopy(item))
                continue
            for index, have in enumerate(out_list):
                if isinstance(have, dict) and have.get(merge_key) == item[merge_key]:
                    out_list[index] = strategic_merge(have, item, field)
                    break
            else:
                out_list.append(copy.deepcopy(item))
        return out_list
    return copy.deepcopy(patch)
