"""A container's environment, resolved the way the kubelet resolves it.

Order and precedence follow the kubelet: ``envFrom`` sources in order (later wins, with their
``prefix``), then ``env`` entries in order (later wins); each ``env`` value may reference, with
``$(VAR)``, any variable defined before it. Missing non-optional sources fail with the kubelet's
messages, which become the ``CreateContainerConfigError`` waiting message.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from .errors import ContainerConfigError
from .expand import expand
from .sources import ObjectSource, field_value, read_source, resource_value

JsonDict = dict[str, Any]

_KIND_TITLE = {"configmap": "ConfigMap", "secret": "Secret"}


def kubernetes_service_env(address: str | None) -> dict[str, str]:
    """The variables the kubelet derives from the ``kubernetes`` Service (port ``https``) for every
    container, enableServiceLinks or not: in-cluster clients find the API server through them.
    `address` is ``host:port`` (``[v6]:port``); a container's own ``env`` overrides them."""
    if not address:
        return {}
    host, _, port = address.rpartition(":")
    host = host.strip("[]")
    return {
        "KUBERNETES_SERVICE_HOST": host,
        "KUBERNETES_SERVICE_PORT": port,
        "KUBERNETES_SERVICE_PORT_HTTPS": port,
        "KUBERNETES_PORT": f"tcp://{address}",
        f"KUBERNETES_PORT_{port}_TCP": f"tcp://{address}",
        f"KUBERNETES_PORT_{port}_TCP_PROTO": "tcp",
        f"KUBERNETES_PORT_{port}_TCP_PORT": port,
        f"KUBERNETES_PORT_{port}_TCP_ADDR": host,
    }


async def _source_data(
    source: ObjectSource, kind: str, namespace: str, name: str, optional: bool
) -> dict[str, bytes] | None:
    data = await read_source(source, kind, namespace, name)
    if data is None and not optional:
        raise ContainerConfigError(f'{kind} "{name}" not found')
    return data


async def resolve_env(
    pod: JsonDict,
    container: JsonDict,
    source: ObjectSource,
    *,
    pod_ip: str,
    host_ip: str,
    allocatable: Mapping[str, Fraction],
) -> dict[str, str]:
    """The variables the pod spec defines for `container` (without the inherited environment)."""
    namespace = (pod.get("metadata") or {}).get("namespace") or "default"
    env: dict[str, str] = {}
    for item in container.get("envFrom") or []:
        prefix = item.get("prefix") or ""
        for kind, ref in (("configmap", item.get("configMapRef")), ("secret", item.get("secretRef"))):
            if not ref:
                continue
            data = await _source_data(source, kind, namespace, ref.get("name", ""), bool(ref.get("optional")))
            for key, raw in (data or {}).items():
                env[prefix + key] = raw.decode(errors="replace")
    for item in container.get("env") or []:
        name = item.get("name")
        if not name:
            continue
        if "valueFrom" not in item or item.get("value"):
            env[name] = expand(str(item.get("value") or ""), env)
            continue
        value = await _value_from(
            pod,
            container,
            item["valueFrom"] or {},
            source,
            namespace,
            pod_ip=pod_ip,
            host_ip=host_ip,
            allocatable=allocatable,
        )
        if value is not None:
            env[name] = value
    return env


async def _value_from(
    pod: JsonDict,
    container: JsonDict,
    ref: JsonDict,
    source: ObjectSource,
    namespace: str,
    *,
    pod_ip: str,
    host_ip: str,
    allocatable: Mapping[str, Fraction],
) -> str | None:
    if "fieldRef" in ref:
        try:
            return field_value(pod, (ref["fieldRef"] or {}).get("fieldPath", ""), pod_ip, host_ip)
        except ValueError as err:
            raise ContainerConfigError(str(err)) from err
    if "resourceFieldRef" in ref:
        rf = ref["resourceFieldRef"] or {}
        try:
            return resource_value(
                pod,
                rf.get("containerName") or container.get("name", ""),
                rf.get("resource", ""),
                rf.get("divisor"),
                allocatable,
            )
        except ValueError as err:
            raise ContainerConfigError(str(err)) from err
    for kind, key in (("configmap", "configMapKeyRef"), ("secret", "secretKeyRef")):
        if key not in ref:
            continue
        sel = ref[key] or {}
        optional = bool(sel.get("optional"))
        data = await _source_data(source, kind, namespace, sel.get("name", ""), optional)
        if data is None:
            return None
        if sel.get("key") not in data:
            if optional:
                return None
            raise ContainerConfigError(
                f"couldn't find key {sel.get('key')} in {_KIND_TITLE[kind]} {namespace}/{sel.get('name')}"
            )
        return data[sel["key"]].decode(errors="replace")
    return None
