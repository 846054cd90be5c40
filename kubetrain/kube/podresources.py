"""What a pod asks of a node: the NodeResourcesFit filter's sum of requests.

The binder charges it against a node's free capacity; `kubetrain run` compares it with the
node's whole allocatable to tell "waits for room" from "can never fit on this machine".
"""

from __future__ import annotations

import contextlib
from fractions import Fraction
from typing import Any

from kubetrain.kube.quantity import quantity_value

JsonDict = dict[str, Any]


def quantities(raw: dict[str, Any] | None) -> dict[str, Fraction]:
    """A resource map (requests, limits, a node's allocatable) as values; invalid ones dropped."""
    out: dict[str, Fraction] = {}
    for key, value in (raw or {}).items():
        with contextlib.suppress(ValueError):
            out[key] = quantity_value(value)
    return out


def container_requests(container: JsonDict) -> dict[str, Fraction]:
    """Requests, with limits standing in for missing requests (as API defaulting does)."""
    res = container.get("resources") or {}
    return {**quantities(res.get("limits")), **quantities(res.get("requests"))}


def pod_requests(pod: JsonDict) -> dict[str, Fraction]:
    """What the NodeResourcesFit filter charges: max(sum(containers), max(init)) + overhead."""
    spec = pod.get("spec") or {}
    total: dict[str, Fraction] = {}
    for c in spec.get("containers") or []:
        for key, value in container_requests(c).items():
            total[key] = total.get(key, Fraction(0)) + value
    for c in spec.get("initContainers") or []:
        for key, value in container_requests(c).items():
            total[key] = max(total.get(key, Fraction(0)), value)
    for key, value in quantities(spec.get("overhead")).items():
        total[key] = total.get(key, Fraction(0)) + value
    return total
