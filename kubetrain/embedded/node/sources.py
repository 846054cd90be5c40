"""Reading ConfigMaps and Secrets, and the pod fields the downward API exposes.

Both env resolution and volume materialisation need the same lookups with the same error texts
(``configmap "x" not found``, ``couldn't find key k in Secret ns/x``), so they live here once.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from fractions import Fraction
from typing import Any, Protocol

from kubetrain.kube.quantity import ceil_div, quantity_value

JsonDict = dict[str, Any]


class ObjectSource(Protocol):
    """Where ConfigMaps and Secrets come from (the API server; a dict in unit tests)."""

    async def get(self, kind: str, namespace: str, name: str) -> JsonDict | None: ...


class TokenSource(Protocol):
    """A source that can also issue service-account tokens (the API server's TokenRequest)."""

    async def token(
        self, pod: JsonDict, service_account: str, audience: str, expiration: int
    ) -> str | None: ...


def configmap_data(cm: JsonDict) -> dict[str, bytes]:
    data = {k: str(v).encode() for k, v in (cm.get("data") or {}).items()}
    data.update({k: base64.b64decode(v) for k, v in (cm.get("binaryData") or {}).items()})
    return data


def secret_data(secret: JsonDict) -> dict[str, bytes]:
    data = {k: base64.b64decode(v) for k, v in (secret.get("data") or {}).items()}
    for k, v in (secret.get("stringData") or {}).items():
        data.setdefault(k, str(v).encode())
    return data


async def read_source(source: ObjectSource, kind: str, namespace: str, name: str) -> dict[str, bytes] | None:
    """The data of a ConfigMap (`kind` ``configmap``) or Secret (``secret``), None when absent."""
    obj = await source.get(kind, namespace, name)
    if obj is None:
        return None
    return configmap_data(obj) if kind == "configmap" else secret_data(obj)


def _subscript(expr: str, prefix: str) -> str | None:
    """``metadata.labels['x']`` -> ``x`` (also with double quotes), for `prefix` ``metadata.labels``."""
    rest = expr[len(prefix) :]
    if (
        expr.startswith(prefix)
        and len(rest) >= 4
        and rest[0] == "["
        and rest[-1] == "]"
        and rest[1] == rest[-2]
        and rest[1] in "'\""
    ):
        return rest[2:-2]
    return None


def _format_map(values: Mapping[str, str]) -> str:
    return "\n".join(f'{k}="{v}"' for k, v in sorted(values.items()))


def field_value(pod: JsonDict, path: str, pod_ip: str, host_ip: str) -> str:
    """A ``fieldRef.fieldPath`` value; ValueError for a path the downward API does not offer."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    simple = {
        "metadata.name": meta.get("name"),
        "metadata.namespace": meta.get("namespace"),
        "metadata.uid": meta.get("uid"),
        "spec.nodeName": spec.get("nodeName"),
        "spec.serviceAccountName": spec.get("serviceAccountName") or "default",
        "status.podIP": pod_ip,
        "status.podIPs": pod_ip,
        "status.hostIP": host_ip,
        "status.hostIPs": host_ip,
    }
    if path in simple:
        return str(simple[path] or "")
    if path == "metadata.labels":
        return _format_map(meta.get("labels") or {})
    if path == "metadata.annotations":
        return _format_map(meta.get("annotations") or {})
    for prefix, values in (
        ("metadata.labels", meta.get("labels")),
        ("metadata.annotations", meta.get("annotations")),
    ):
        key = _subscript(path, prefix)
        if key is not None:
            return str((values or {}).get(key, ""))
    raise ValueError(f"unsupported fieldPath {path!r}")


def resource_value(
    pod: JsonDict, container_name: str, resource: str, divisor: object, allocatable: Mapping[str, Fraction]
) -> str:
    """A ``resourceFieldRef`` value; an unset limit reads as the node's allocatable (as in k8s)."""
    container: JsonDict | None = next(
        (c for c in (pod.get("spec") or {}).get("containers") or [] if c.get("name") == container_name), None
    )
    if container is None:
        container = next(
            (
                c
                for c in (pod.get("spec") or {}).get("initContainers") or []
                if c.get("name") == container_name
            ),
            {},
        )
    kind, _, name = resource.partition(".")
    if kind not in ("limits", "requests") or not name:
        raise ValueError(f"unsupported resource {resource!r}")
    resources = container.get("resources") or {}
    raw = (resources.get(kind) or {}).get(name)
    if raw is None and kind == "requests":
        raw = (resources.get("limits") or {}).get(name)
    if raw is not None:
        value = quantity_value(raw)
    else:  # the kubelet defaults only limits, to the node's allocatable; a missing request is 0
        value = allocatable.get(name, Fraction(0)) if kind == "limits" else Fraction(0)
    div = quantity_value(divisor) if divisor not in (None, "", 0, "0") else Fraction(1)
    return str(ceil_div(value, div))
