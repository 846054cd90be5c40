"""What a job's run leaves on the API server, as flat `path -> value` views two runs can be diffed by.

A view keeps what an operator decides: the names, labels, annotations, ownerReferences and specs
of the job's pods and of the children it owns (Services, ConfigMaps, Secrets (keys only), batch
Jobs, ServiceAccounts, Roles, RoleBindings, HorizontalPodAutoscalers, PodGroups), the job's final
status conditions (in order) and replicaStatuses, the sequence of its condition transitions as a
watch saw them, and its Events (type, reason, message and reporting component; not their counts,
which follow how often a reconcile ran). Normalised are only what must differ
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
UID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
"""A uid inside a message (the kubelet's `pod=<name>_<namespace>(<uid>)`), of an object the view may
no longer hold."""
BACK_OFF = re.compile(r"back-off \d+(\.\d+)?m?s")
"""The kubelet's current crash-loop back-off inside a message: it depends on when it was read."""
PER_PASS_EVENTS = {"ExitedWithCode"}
"""Events training-operator records in every reconcile pass that sees a terminated container before
the job finished, so whether one is recorded at all depends on the pass timing (a container that
ends in the pass that finishes the job has none): left out of both views."""
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


def transition(condition: JsonDict) -> str:
    """One condition's state as a transition line: `Type=Status Reason: message`."""
    return f"{condition['type']}={condition['status']} {condition.get('reason')}: {condition.get('message')}"


def _events(events: list[JsonDict], namespace: str, uids: set[str]) -> JsonDict:
    """`type -> reason -> message -> component` (a message is a key, so normalised first)."""
    out: JsonDict = {}
    for event in events:
        if event.get("reason") in PER_PASS_EVENTS:
            continue
        message = (event.get("message") or "").replace(namespace, "<namespace>")  # also `<pod>_<namespace>`
        message = BACK_OFF.sub("back-off <n>s", UID.sub("<uid>", _normalise(message, namespace, uids)))
        component = (event.get("source") or {}).get("component") or event.get("reportingComponent")
        out.setdefault(event.get("type"), {}).setdefault(event.get("reason"), {})[message] = component
    return out


def view(
    job: JsonDict,
    pods: list[JsonDict],
    children: dict[str, list[JsonDict]],
    *,
    transitions: list[str] | None = None,
    events: list[JsonDict] | None = None,
) -> dict[str, Any]:
    """The flat view of one run; paths start with `job.status`, `job.transitions`, `job.events`,
    `Pod.<name>`, `Service.<name>`, `ConfigMap.<name>`, ... (`children` by kind)."""
    namespace = job["metadata"]["namespace"]
    objects = [job, *pods, *(o for items in children.values() for o in items)]
    uids = {o["metadata"]["uid"] for o in objects}
    tree: JsonDict = {
        "job.status": _status(job),
        "job.transitions": {str(i): t for i, t in enumerate(transitions or ())},
        "job.events": _events(events or [], namespace, uids),
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
