"""What a pod asks of a node: the NodeResourcesFit filter's sum of requests.

The binder charges it against a node's free capacity; `kubetrain run` compares it with the
node's whole allocatable to tell "waits for room" from "can never fit on this machine".
`template_requests` is the same sum as apimachinery's `resourcehelpers.PodRequests` computes it
on a pod template no API server has defaulted (requests only, sidecars counted), as quantities
that keep their spelling: what a TrainJob's PodGroup asks for.
"""

from __future__ import annotations

import contextlib
from fractions import Fraction
from typing import Any

from kubetrain.kube.quantity import Quantity, parse_quantity, quantity_value

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


def _declared(container: object) -> dict[str, Quantity]:
    resources = container.get("resources") if isinstance(container, dict) else None
    requests = resources.get("requests") if isinstance(resources, dict) else None
    out: dict[str, Quantity] = {}
    for key, raw in (requests if isinstance(requests, dict) else {}).items():
        quantity = parse_quantity(raw)
        if quantity is not None:
            out[str(key)] = quantity
    return out


def _add(total: dict[str, Quantity], more: dict[str, Quantity]) -> dict[str, Quantity]:
    out = dict(total)
    for key, quantity in more.items():
        out[key] = out[key] + quantity if key in out else quantity
    return out


def _at_least(total: dict[str, Quantity], floor: dict[str, Quantity]) -> dict[str, Quantity]:
    out = dict(total)
    for key, quantity in floor.items():
        if key not in out or quantity.value > out[key].value:
            out[key] = quantity
    return out


POD_LEVEL_RESOURCES = ("cpu", "memory")
POD_LEVEL_PREFIX = "hugepages-"


def template_requests(pod_spec: object) -> dict[str, Quantity]:
    """`resourcehelpers.PodRequests` (component-helpers v0.36) of an undefaulted pod spec: the
    containers' requests summed; each init container's, plus the restartable (sidecar) init
    containers started before it, as a floor; the sidecars added to the sum; pod-level requests
    (`spec.resources`: cpu, memory, hugepages-*) replacing the sum; then the overhead. Limits do
    not stand in for requests here (only the API server's defaulting would copy them)."""
    spec = pod_spec if isinstance(pod_spec, dict) else {}
    containers = spec.get("containers")
    total: dict[str, Quantity] = {}
    for container in containers if isinstance(containers, list) else ():
        total = _add(total, _declared(container))
    sidecars: dict[str, Quantity] = {}
    init_floor: dict[str, Quantity] = {}
    inits = spec.get("initContainers")
    for container in inits if isinstance(inits, list) else ():
        declared = _declared(container)
        if isinstance(container, dict) and container.get("restartPolicy") == "Always":
            sidecars = _add(sidecars, declared)
            init_floor = _at_least(init_floor, sidecars)
        else:
            init_floor = _at_least(init_floor, _add(declared, sidecars))
    total = _at_least(_add(total, sidecars), init_floor)
    for key, quantity in _declared(spec).items():
        if key in POD_LEVEL_RESOURCES or key.startswith(POD_LEVEL_PREFIX):
            total[key] = quantity
    return _add(total, _declared({"resources": {"requests": spec.get("overhead")}}))
