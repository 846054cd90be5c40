"""What a job's run leaves on the API server, as flat `path -> value` views two runs can be diffed by.

A view keeps what an operator decides: the names, labels, annotations, ownerReferences and specs
of the job's pods and of the Services, ConfigMaps, Secrets (keys only) and batch Jobs it owns, and
the job's status conditions (in order) and replicaStatuses. Normalised are only what must differ
between two runs: uids (wherever they appear), times, resourceVersions, generated names and keys,
and the namespace's name inside values. Lists of named items (containers, env, ports,
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


def _normalise(value: Any, namespace: str, uids: set[str]) -> Any:
    if isinstance(value, str):
        if value in uids:
            return "<uid>"
        value = GENERATED.sub("kube-api-access-<generated>", value)
        return re.sub(rf"(?<![\w-]){re.escape(namespace)}(?![\w-])", "<namespace>", value)
    if isinstance(value, dict):
        return {k: _normalise(v, namespace, uids) for k, v in value.items()}
    if isinstance(value, list):
        return [_normalise(v, namespace, uids) for v in value]
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


def _name(obj: JsonDict) -> str:
    """A name the API server generated (the Job controller's launcher pod) without its suffix."""
    meta = obj["metadata"]
    generated = meta.get("generateName")
    return f"{generated}<generated>" if generated else str(meta["name"])


def _metadata(obj: JsonDict) -> JsonDict:
    meta = {k: v for k, v in obj["metadata"].items() if k not in VOLATILE_METADATA}
    meta["name"] = _name(obj)
    meta["ownerReferences"] = [
        {k: v for k, v in ref.items() if k != "uid"} for ref in meta.get("ownerReferences") or ()
    ]
    return meta


def _child(obj: JsonDict) -> JsonDict:
    """What an operator decides of a child: metadata and spec (a Job's status is its controller's);
    a Secret's keys and type, not its generated values."""
    out: JsonDict = {"metadata": _metadata(obj)}
    if "spec" in obj:
        out["spec"] = {k: v for k, v in obj["spec"].items() if not _allocated(k, v)}
    if obj["kind"] == "Secret":
        out["type"] = obj.get("type")
        out["data"] = {k: "<generated>" for k in obj.get("data") or {}}
    elif "data" in obj:
        out["data"] = obj["data"]
    return out


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


def view(job: JsonDict, pods: list[JsonDict], children: dict[str, list[JsonDict]]) -> dict[str, Any]:
    """The flat view of one run; paths start with `job.status`, `Pod.<name>`, `Service.<name>`,
    `ConfigMap.<name>`, ... (`children` by kind)."""
    namespace = job["metadata"]["namespace"]
    objects = [job, *pods, *(o for items in children.values() for o in items)]
    uids = {o["metadata"]["uid"] for o in objects}
    tree: JsonDict = {
        "job.status": _status(job),
        "Pod": {
            _name(p): {
                "metadata": _metadata(p),
                "spec": {k: v for k, v in p["spec"].items() if k not in NODE_ASSIGNED},
            }
            for p in pods
        },
    }
    for kind, items in children.items():
        tree[kind] = {_name(o): _child({"kind": kind, **o}) for o in items}
    out: dict[str, Any] = {}
    _flatten(_normalise(tree, namespace, uids), "", out)
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
