"""What a job's run leaves on the API server, as flat `path -> value` views two runs can be diffed by.

A view keeps what an operator decides: the pods' and services' names, labels, annotations,
ownerReferences and specs, and the job's status conditions (in order) and replicaStatuses.
Normalised are only what must differ between two runs: uids, times, resourceVersions, generated
suffixes and the namespace's name inside values. Lists of named items (containers, env, ports,
volumes) are keyed by name, so a diff names the variable or port that differs.
"""

from __future__ import annotations

import re
from typing import Any

JsonDict = dict[str, Any]

VOLATILE_METADATA = {
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "managedFields",
    "generation",
    "namespace",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
}
GENERATED = re.compile(r"kube-api-access-[a-z0-9]{5}")
"""The ServiceAccount admission's projected token volume: a random suffix per pod."""
NODE_ASSIGNED = {"nodeName"}


def _normalise(value: Any, namespace: str) -> Any:
    if isinstance(value, str):
        value = GENERATED.sub("kube-api-access-<generated>", value)
        return re.sub(rf"(?<![\w-]){re.escape(namespace)}(?![\w-])", "<namespace>", value)
    if isinstance(value, dict):
        return {k: _normalise(v, namespace) for k, v in value.items()}
    if isinstance(value, list):
        return [_normalise(v, namespace) for v in value]
    return value


def _flatten(value: Any, path: str, out: dict[str, Any]) -> None:
    if isinstance(value, dict):
        if not value:
            out[path] = {}
        for key, item in value.items():
            _flatten(item, f"{path}.{key}", out)
    elif isinstance(value, list):
        if not value:
            out[path] = []
        named = all(isinstance(item, dict) and "name" in item for item in value)
        for index, item in enumerate(value):
            _flatten(item, f"{path}[{item['name'] if named else index}]", out)
    else:
        out[path] = value


def _metadata(obj: JsonDict) -> JsonDict:
    meta = {k: v for k, v in obj["metadata"].items() if k not in VOLATILE_METADATA}
    meta["ownerReferences"] = [
        {k: v for k, v in ref.items() if k != "uid"} for ref in meta.get("ownerReferences") or ()
    ]
    return meta


def _status(job: JsonDict) -> JsonDict:
    status = job.get("status") or {}
    conditions = [
        {k: c.get(k) for k in ("type", "status", "reason", "message")} for c in status.get("conditions") or ()
    ]
    # Order matters (a condition's index in the list), so conditions are keyed by position.
    return {
        "conditions": {str(i): c for i, c in enumerate(conditions)},
        "replicaStatuses": status.get("replicaStatuses") or {},
    }


def view(job: JsonDict, pods: list[JsonDict], services: list[JsonDict]) -> dict[str, Any]:
    """The flat view of one run; paths start with `job.status`, `pods[<name>]`, `services[<name>]`."""
    namespace = job["metadata"]["namespace"]
    tree = {
        "job.status": _status(job),
        "pods": {
            p["metadata"]["name"]: {
                "metadata": _metadata(p),
                "spec": {k: v for k, v in p["spec"].items() if k not in NODE_ASSIGNED},
            }
            for p in pods
        },
        "services": {
            s["metadata"]["name"]: {
                "metadata": _metadata(s),
                "spec": {k: v for k, v in s["spec"].items() if not _allocated(k, v)},
            }
            for s in services
        },
    }
    out: dict[str, Any] = {}
    _flatten(_normalise(tree, namespace), "", out)
    return {path.lstrip("."): value for path, value in out.items()}


def _allocated(field: str, value: Any) -> bool:
    """A Service's cluster IP is allocated by the API server, unless the operator asked for none."""
    return field in ("clusterIP", "clusterIPs") and value not in ("None", ["None"])


MISSING = "<absent>"


def differences(upstream: dict[str, Any], ours: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """(path, upstream's value, ours) for every path whose values differ or that one side lacks."""
    return [
        (path, upstream.get(path, MISSING), ours.get(path, MISSING))
        for path in sorted(upstream.keys() | ours.keys())
        if upstream.get(path, MISSING) != ours.get(path, MISSING)
    ]
