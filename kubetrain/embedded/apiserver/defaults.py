"""Defaults kube-apiserver fills in for the built-in kinds the operator creates.

Only what clients observe: a pod's restartPolicy, dnsPolicy, schedulerName,
terminationGracePeriodSeconds and per-container pull policy and termination message path, port
protocols, the status a pod starts with (Pending + QoS class); a service's type, affinity, target
ports and cluster IP; a namespace's finalizer, phase and name label.
"""

from __future__ import annotations

import base64
import ipaddress
import itertools
from typing import Any

_CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")


def _pull_policy(image: str) -> str:
    tail = image.rsplit("/", 1)[-1]
    if "@" in tail:
        return "IfNotPresent"
    if ":" not in tail or tail.endswith(":latest"):
        return "Always"
    return "IfNotPresent"


def _default_container(c: dict[str, Any]) -> None:
    c.setdefault("imagePullPolicy", _pull_policy(str(c.get("image", ""))))
    c.setdefault("terminationMessagePath", "/dev/termination-log")
    c.setdefault("terminationMessagePolicy", "File")
    c.setdefault("resources", {})
    for port in c.get("ports") or ():
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
    for env in c.get("env") or ():
        ref = (env.get("valueFrom") or {}).get("fieldRef") if isinstance(env, dict) else None
        if isinstance(ref, dict):
            ref.setdefault("apiVersion", "v1")


def qos_class(spec: dict[str, Any]) -> str:
    """BestEffort without requests/limits, Guaranteed when every container's requests equal limits."""
    containers = [c for c in spec.get("containers") or () if isinstance(c, dict)]
    any_set = False
    guaranteed = True
    for c in containers:
        res = c.get("resources") or {}
        req, lim = res.get("requests") or {}, res.get("limits") or {}
        if req or lim:
            any_set = True
        for name in ("cpu", "memory"):
            if name not in lim or req.get(name, lim[name]) != lim[name]:
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def default_pod_spec(spec: dict[str, Any]) -> None:
    """SetDefaults_PodSpec and its containers' and volumes' defaults: a pod's and a pod template's."""
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("securityContext", {})
    for name in _CONTAINER_LISTS:
        for c in spec.get(name) or ():
            if isinstance(c, dict):
                _default_container(c)
    for vol in spec.get("volumes") or ():
        if isinstance(vol, dict):
            for src in ("configMap", "secret"):
                if isinstance(vol.get(src), dict):
                    vol[src].setdefault("defaultMode", 420)


def default_pod(pod: dict[str, Any]) -> None:
    spec = pod.setdefault("spec", {})
    default_pod_spec(spec)
    spec.setdefault("enableServiceLinks", True)
    spec.setdefault("priority", 0)
    if "serviceAccountName" not in spec:
        spec["serviceAccountName"] = spec.get("serviceAccount", "default")
    spec.setdefault("serviceAccount", spec["serviceAccountName"])


def initial_pod_status(pod: dict[str, Any]) -> dict[str, Any]:
    return {"phase": "Pending", "qosClass": qos_class(pod.get("spec") or {})}


class ClusterIPAllocator:
    """Hands out service IPs from 10.96.0.0/12, skipping .1 (the kubernetes service)."""

    def __init__(self, cidr: str = "10.96.0.0/12") -> None:
        net = ipaddress.ip_network(cidr)
        self._hosts = itertools.islice(net.hosts(), 1, None)
        self._taken: set[str] = set()

    def take(self, ip: str) -> None:
        """Never hand out ``ip`` (a restored Service holds it)."""
        self._taken.add(ip)

    def next(self) -> str:
        ip = str(next(self._hosts))
        while ip in self._taken:
            ip = str(next(self._hosts))
        return ip


def default_service(svc: dict[str, Any], ips: ClusterIPAllocator) -> None:
    spec = svc.setdefault("spec", {})
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    for port in spec.get("ports") or ():
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
            if "port" in port:
                port.setdefault("targetPort", port["port"])
    if spec["type"] != "ExternalName":
        if not spec.get("clusterIP"):
            spec["clusterIP"] = ips.next()
        spec.setdefault("clusterIPs", [spec["clusterIP"]])
        spec.setdefault("ipFamilies", ["IPv4"])
        spec.setdefault("ipFamilyPolicy", "SingleStack")
        spec.setdefault("internalTrafficPolicy", "Cluster")


def default_namespace(ns: dict[str, Any]) -> None:
    meta = ns["metadata"]
    meta.setdefault("labels", {})["kubernetes.io/metadata.name"] = meta["name"]
    ns.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
    ns["status"] = {"phase": "Active"}


def default_secret(secret: dict[str, Any]) -> None:
    """stringData is write-only: it is merged into base64 data, as the apiserver's conversion does."""
    secret.setdefault("type", "Opaque")
    string_data = secret.pop("stringData", None)
    if isinstance(string_data, dict):
        data = secret.setdefault("data", {})
        for key, value in string_data.items():
            data[key] = base64.b64encode(str(value).encode()).decode()


def default_statefulset(sts: dict[str, Any]) -> None:
    """SetDefaults_StatefulSet (apps/v1): the spec fields its controller reads."""
    spec = sts.setdefault("spec", {})
    spec.setdefault("replicas", 1)
    spec.setdefault("podManagementPolicy", "OrderedReady")
    strategy = spec.setdefault("updateStrategy", {})
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        strategy.setdefault("rollingUpdate", {}).setdefault("partition", 0)
    spec.setdefault("revisionHistoryLimit", 10)
    retention = spec.setdefault("persistentVolumeClaimRetentionPolicy", {})
    retention.setdefault("whenDeleted", "Retain")
    retention.setdefault("whenScaled", "Retain")
    template = spec.get("template")
    if isinstance(template, dict):
        default_pod_spec(template.setdefault("spec", {}))


def default_builtin(kind: str, obj: dict[str, Any], ips: ClusterIPAllocator) -> None:
    if kind == "Pod":
        default_pod(obj)
    elif kind == "Service":
        default_service(obj, ips)
    elif kind == "Namespace":
        default_namespace(obj)
    elif kind == "Secret":
        default_secret(obj)
    elif kind == "StatefulSet":
        default_statefulset(obj)
