"""The extra objects a framework wants (PyTorch's HPA), kept in line with its wish.

Upstream's HPA: docs/upstream-behaviour.md#pytorchjob-elastic.

Desired objects are created when absent and patched when the observed spec does not contain the
desired one (a containment check: what the API server defaults, such as HPA behavior, does not
count as a difference); owned objects of a framework child kind that are no longer desired (the
job was suspended, the metrics removed) are deleted.
"""

from __future__ import annotations

from typing import Any

from kubetrain.controller.config import HPA
from kubetrain.controller.context import JobReconcile
from kubetrain.controller.names import JsonDict, meta, name_of, object_ref
from kubetrain.controller.plan import CreateObject, PatchObject
from kubetrain.kube.quantity import parse_quantity

CHILD_KINDS: tuple[tuple[str, str], ...] = ((HPA[0], HPA[1]),)
"""Kinds only frameworks create; an owned object of these kinds that is not desired is deleted."""


def contains(have: Any, want: Any) -> bool:
    """Whether `have` holds everything `want` says (quantity strings compared by value)."""
    if isinstance(want, dict):
        return isinstance(have, dict) and all(
            value is None or (key in have and contains(have[key], value)) for key, value in want.items()
        )
    if isinstance(want, list):
        return isinstance(have, list) and len(have) == len(want) and all(map(contains, have, want))
    if isinstance(want, str) and isinstance(have, str) and want != have:
        a, b = parse_quantity(want), parse_quantity(have)
        return a is not None and b is not None and a.value == b.value
    return bool(have == want)


def _complete(ctx: JobReconcile, obj: JsonDict) -> JsonDict:
    """The manifest with the job's namespace and controller reference filled in if missing."""
    metadata = dict(meta(obj))
    metadata.setdefault("namespace", ctx.namespace)
    if not metadata.get("ownerReferences"):
        metadata["ownerReferences"] = [ctx.owner()]
    return {**obj, "metadata": metadata}


def reconcile_children(ctx: JobReconcile) -> None:
    desired: list[JsonDict] = []
    if not ctx.job.run_policy.suspend:
        desired = ctx.plugin.desired_children(ctx.job, ctx.settings)
    kinds = set(CHILD_KINDS) | {(str(d.get("apiVersion", "")), str(d.get("kind", ""))) for d in desired}
    wanted = {(str(d.get("apiVersion", "")), str(d.get("kind", "")), name_of(d)): d for d in desired}
    for api_version, kind in sorted(kinds):
        for obj in ctx.observed.of(api_version, kind):
            key = (api_version, kind, name_of(obj))
            want = wanted.pop(key, None)
            if want is None:
                ctx.delete(obj, None, None)
            elif not contains(obj.get("spec"), want.get("spec")):
                ctx.plan.actions.append(PatchObject(object_ref(obj), {"spec": want.get("spec")}))
    for obj in wanted.values():
        ctx.plan.actions.append(CreateObject(_complete(ctx, obj)))
