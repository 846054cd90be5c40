"""The server-side printers of the built-in kinds we serve: kube-apiserver's column sets and cells.

Each kind's columns are the ones ``pkg/printers/internalversion`` registers (priority 1 are the
``-o wide`` ones), with their cell formats (``<none>``, ``0/1``, ``80/TCP``, ...). Column
descriptions are shortened: kube-apiserver copies whole OpenAPI field docs there, kubectl never
shows them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubetrain.kube.duration import human_duration
from kubetrain.kube.labels import format_labels, label_selector_string
from kubetrain.kube.timefmt import parse_epoch

Cell = Callable[[dict[str, Any]], Any]
NONE = "<none>"


@dataclass(frozen=True)
class Column:
    name: str
    cell: Cell
    priority: int = 0
    description: str = ""
    type: str = "string"
    format: str = ""

    def definition(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type,
            "format": self.format,
            "description": self.description or self.name,
            "priority": self.priority,
        }


def since(ts: str | None) -> str:
    """``translateTimestampSince``: ``<unknown>`` without a timestamp."""
    then = parse_epoch(ts)
    return "<unknown>" if then is None else human_duration(time.time() - then)


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("metadata") or {}


def _spec(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("spec") or {}


def _status(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("status") or {}


def age(obj: dict[str, Any]) -> str:
    return since(_meta(obj).get("creationTimestamp"))


def _selector(labels: dict[str, Any] | None) -> str:
    return format_labels(labels) or NONE


def _label_selector(sel: dict[str, Any] | None) -> str:
    """``metav1.FormatLabelSelector`` for matchLabels and matchExpressions."""
    return label_selector_string(sel) or NONE


def _template_containers(obj: dict[str, Any], field: str) -> str:
    containers = (((_spec(obj).get("template") or {}).get("spec")) or {}).get("containers") or ()
    return ",".join(str(c.get(field, "")) for c in containers)


# --- pods ----------------------------------------------------------------------------------


def _pod_reason(pod: dict[str, Any]) -> str:
    status = _status(pod)
    reason = status.get("reason") or status.get("phase") or "Unknown"
    for c in status.get("containerStatuses") or ():
        state = c.get("state") or {}
        if (state.get("waiting") or {}).get("reason"):
            reason = state["waiting"]["reason"]
        elif "terminated" in state:
            term = state["terminated"] or {}
            reason = term.get("reason") or (
                f"Signal:{term['signal']}" if term.get("signal") else f"ExitCode:{term.get('exitCode')}"
            )
    if _meta(pod).get("deletionTimestamp"):
        reason = "Terminating"
    return str(reason)


def _pod_ready(pod: dict[str, Any]) -> str:
    statuses = _status(pod).get("containerStatuses") or ()
    ready = sum(1 for c in statuses if c.get("ready"))
    return f"{ready}/{len(_spec(pod).get('containers') or ())}"


def _pod_restarts(pod: dict[str, Any]) -> str:
    restarts, last = 0, ""
    for c in _status(pod).get("containerStatuses") or ():
        restarts += int(c.get("restartCount") or 0)
        finished = ((c.get("lastState") or {}).get("terminated") or {}).get("finishedAt") or ""
        last = max(last, finished)
    return f"{restarts} ({since(last)} ago)" if restarts and last else str(restarts)


def _readiness_gates(pod: dict[str, Any]) -> str:
    gates = _spec(pod).get("readinessGates") or ()
    if not gates:
        return NONE
    true = {c.get("type") for c in _status(pod).get("conditions") or () if c.get("status") == "True"}
    return f"{sum(1 for g in gates if g.get('conditionType') in true)}/{len(gates)}"


POD = (
    Column("Ready", _pod_ready, description="The aggregate readiness state of this pod."),
    Column("Status", _pod_reason, description="The aggregate status of the containers in this pod."),
    Column("Restarts", _pod_restarts, description="The number of times the containers have been restarted."),
    Column("Age", age, description="CreationTimestamp."),
    Column("IP", lambda p: _status(p).get("podIP") or NONE, 1, "podIP address allocated to the pod."),
    Column("Node", lambda p: _spec(p).get("nodeName") or NONE, 1, "The node this pod is scheduled on."),
    Column("Nominated Node", lambda p: _status(p).get("nominatedNodeName") or NONE, 1, "nominatedNodeName."),
    Column("Readiness Gates", _readiness_gates, 1, "Readiness gates evaluated for pod readiness."),
)

# --- services ------------------------------------------------------------------------------


def _external_ip(svc: dict[str, Any]) -> str:
    spec = _spec(svc)
    ips = list(spec.get("externalIPs") or ())
    if spec.get("type") == "LoadBalancer":
        ingress = [
            i.get("ip") or i.get("hostname")
            for i in (_status(svc).get("loadBalancer") or {}).get("ingress") or ()
        ]
        ips = [*ingress, *ips]
        return ",".join(i for i in ips if i) or "<pending>"
    if spec.get("type") == "ExternalName":
        return str(spec.get("externalName") or NONE)
    return ",".join(ips) or NONE


def _ports(svc: dict[str, Any]) -> str:
    out = []
    for port in _spec(svc).get("ports") or ():
        text = str(port.get("port"))
        if port.get("nodePort"):
            text += f":{port['nodePort']}"
        out.append(f"{text}/{port.get('protocol', 'TCP')}")
    return ",".join(out) or NONE


SERVICE = (
    Column("Type", lambda s: _spec(s).get("type", ""), description="How the Service is exposed."),
    Column("Cluster-IP", lambda s: _spec(s).get("clusterIP") or NONE, description="The IP of the service."),
    Column("External-IP", _external_ip, description="IP addresses for which nodes accept traffic."),
    Column("Port(s)", _ports, description="The ports exposed by this service."),
    Column("Age", age, description="CreationTimestamp."),
    Column("Selector", lambda s: _selector(_spec(s).get("selector")), 1, "The pods this service routes to."),
)

# --- nodes ---------------------------------------------------------------------------------


def _node_status(node: dict[str, Any]) -> str:
    conds = {c.get("type"): c.get("status") for c in _status(node).get("conditions") or ()}
    ready = conds.get("Ready")
    text = "Ready" if ready == "True" else "NotReady" if ready == "False" else "Unknown"
    if _spec(node).get("unschedulable"):
        text += ",SchedulingDisabled"
    return text


def _node_roles(node: dict[str, Any]) -> str:
    roles = set()
    for key, value in (_meta(node).get("labels") or {}).items():
        if key.startswith("node-role.kubernetes.io/"):
            roles.add(key.removeprefix("node-role.kubernetes.io/"))
        elif key == "kubernetes.io/role" and value:
            roles.add(value)
    return ",".join(sorted(r for r in roles if r)) or NONE


def _address(kind: str) -> Cell:
    def cell(node: dict[str, Any]) -> str:
        for addr in _status(node).get("addresses") or ():
            if addr.get("type") == kind:
                return str(addr.get("address"))
        return NONE

    return cell


def _node_info(field: str, default: str = "<unknown>") -> Cell:
    return lambda n: (_status(n).get("nodeInfo") or {}).get(field) or default


NODE = (
    Column("Status", _node_status, description="The status of the node"),
    Column("Roles", _node_roles, description="The roles of the node"),
    Column("Age", age, description="CreationTimestamp."),
    Column("Version", _node_info("kubeletVersion", ""), description="Kubelet Version reported by the node."),
    Column("Internal-IP", _address("InternalIP"), 1, "Addresses reachable to the node."),
    Column("External-IP", _address("ExternalIP"), 1, "Addresses reachable to the node."),
    Column("OS-Image", _node_info("osImage"), 1, "OS Image reported by the node."),
    Column("Kernel-Version", _node_info("kernelVersion"), 1, "Kernel Version reported by the node."),
    Column("Container-Runtime", _node_info("containerRuntimeVersion"), 1, "ContainerRuntime Version."),
)

# --- events (core/v1 and events.k8s.io/v1 print the same) --------------------------------------


def _event_last_seen(ev: dict[str, Any]) -> str:
    series = ev.get("series") or {}
    ts = (
        series.get("lastObservedTime")
        or ev.get("lastTimestamp")
        or ev.get("eventTime")
        or ev.get("deprecatedLastTimestamp")
    )
    return since(ts) if ts else since(_meta(ev).get("creationTimestamp"))


def _event_first_seen(ev: dict[str, Any]) -> str:
    ts = ev.get("firstTimestamp") or ev.get("deprecatedFirstTimestamp") or ev.get("eventTime")
    return since(ts) if ts else since(_meta(ev).get("creationTimestamp"))


def _regarding(ev: dict[str, Any]) -> dict[str, Any]:
    return ev.get("involvedObject") or ev.get("regarding") or {}


def _event_source(ev: dict[str, Any]) -> str:
    src = ev.get("source") or ev.get("deprecatedSource") or {}
    component = src.get("component") or ev.get("reportingController") or ev.get("reportingComponent") or ""
    host = src.get("host") or ev.get("reportingInstance") or ""
    return f"{component}, {host}" if host else str(component)


def _event_count(ev: dict[str, Any]) -> int:
    series = ev.get("series") or {}
    return int(series.get("count") or ev.get("count") or ev.get("deprecatedCount") or 1)


EVENT = (
    Column("Last Seen", _event_last_seen, description="When the event was last observed."),
    Column("Type", lambda e: e.get("type", ""), description="Type of this event (Normal, Warning)."),
    Column("Reason", lambda e: e.get("reason", ""), description="Why the event was generated."),
    Column(
        "Object",
        lambda e: f"{str(_regarding(e).get('kind', '')).lower()}/{_regarding(e).get('name', '')}",
        description="The object that this event is about.",
    ),
    Column("Subobject", lambda e: _regarding(e).get("fieldPath", ""), 1, "The part of the object."),
    Column("Source", _event_source, 1, "The component reporting this event."),
    Column(
        "Message",
        lambda e: e.get("message") or e.get("note") or "",
        description="A human-readable description.",
    ),
    Column("First Seen", _event_first_seen, 1, "When the event was first recorded."),
    Column("Count", _event_count, 1, "The number of times this event has occurred."),
    Column(
        "Name",
        lambda e: _meta(e).get("name", ""),
        1,
        "Name must be unique within a namespace.",
        format="name",
    ),
)

# --- workloads -----------------------------------------------------------------------------


def _deploy_ready(obj: dict[str, Any]) -> str:
    return f"{_status(obj).get('readyReplicas') or 0}/{_spec(obj).get('replicas', 1)}"


DEPLOYMENT = (
    Column("Ready", _deploy_ready, description="Number of the pod with ready state"),
    Column("Up-to-date", lambda d: int(_status(d).get("updatedReplicas") or 0), description="Updated pods."),
    Column(
        "Available", lambda d: int(_status(d).get("availableReplicas") or 0), description="Available pods."
    ),
    Column("Age", age, description="CreationTimestamp."),
    Column(
        "Containers", lambda d: _template_containers(d, "name"), 1, "Names of each container in the template."
    ),
    Column("Images", lambda d: _template_containers(d, "image"), 1, "Images referenced by each container."),
    Column("Selector", lambda d: _label_selector(_spec(d).get("selector")), 1, "Label selector for pods."),
)

STATEFULSET = (
    Column("Ready", _deploy_ready, description="Number of the pod with ready state"),
    Column("Age", age, description="CreationTimestamp."),
    Column(
        "Containers", lambda d: _template_containers(d, "name"), 1, "Names of each container in the template."
    ),
    Column("Images", lambda d: _template_containers(d, "image"), 1, "Images referenced by each container."),
)


def _job_status(job: dict[str, Any]) -> str:
    conds = {c.get("type"): c.get("status") for c in _status(job).get("conditions") or ()}
    for cond in ("Failed", "Complete", "Suspended", "FailureTarget", "SuccessCriteriaMet"):
        if conds.get(cond) == "True":
            return {"FailureTarget": "FailureTarget", "SuccessCriteriaMet": "SuccessCriteriaMet"}.get(
                cond, cond
            )
    if _meta(job).get("deletionTimestamp"):
        return "Terminating"
    return "Running"


def _job_completions(job: dict[str, Any]) -> str:
    spec, succeeded = _spec(job), int(_status(job).get("succeeded") or 0)
    completions = spec.get("completions")
    if completions is None and spec.get("completionMode") != "Indexed":
        parallelism = spec.get("parallelism", 1)
        return f"{succeeded}/1 of {parallelism}" if parallelism and parallelism > 1 else f"{succeeded}/1"
    return f"{succeeded}/{completions if completions is not None else 1}"


def _job_duration(job: dict[str, Any]) -> str:
    status = _status(job)
    begin, finish = parse_epoch(status.get("startTime")), parse_epoch(status.get("completionTime"))
    if begin is None:
        return ""
    return human_duration((time.time() if finish is None else finish) - begin)


JOB = (
    Column("Status", _job_status, description="Status of the job."),
    Column("Completions", _job_completions, description="Succeeded pods out of the desired completions."),
    Column("Duration", _job_duration, description="Time required to complete the job."),
    Column("Age", age, description="CreationTimestamp."),
    Column(
        "Containers", lambda d: _template_containers(d, "name"), 1, "Names of each container in the template."
    ),
    Column("Images", lambda d: _template_containers(d, "image"), 1, "Images referenced by each container."),
    Column("Selector", lambda d: _label_selector(_spec(d).get("selector")), 1, "A label query over pods."),
)

# --- the rest ------------------------------------------------------------------------------


def _data_count(obj: dict[str, Any]) -> int:
    return len(obj.get("data") or {}) + len(obj.get("binaryData") or {})


def _endpoints(ep: dict[str, Any]) -> str:
    out = []
    for subset in ep.get("subsets") or ():
        ports = [p.get("port") for p in subset.get("ports") or ()] or [None]
        for addr in subset.get("addresses") or ():
            out += [f"{addr.get('ip')}:{p}" if p is not None else str(addr.get("ip")) for p in ports]
    if not out:
        return NONE
    return ",".join(out[:3]) + (f" + {len(out) - 3} more..." if len(out) > 3 else "")


AGE = (Column("Age", age, description="CreationTimestamp."),)

BUILTIN_COLUMNS: dict[tuple[str, str], tuple[Column, ...]] = {
    ("", "Pod"): POD,
    ("", "Service"): SERVICE,
    ("", "ConfigMap"): (
        Column("Data", _data_count, description="Data contains the configuration data."),
        *AGE,
    ),
    ("", "Secret"): (
        Column("Type", lambda s: s.get("type", ""), description="The type of the secret."),
        Column("Data", _data_count, description="Data contains the secret data."),
        *AGE,
    ),
    ("", "Node"): NODE,
    ("", "Event"): EVENT,
    ("events.k8s.io", "Event"): EVENT,
    ("", "Namespace"): (
        Column("Status", lambda n: _status(n).get("phase", ""), description="The status of the namespace"),
        *AGE,
    ),
    ("", "Endpoints"): (Column("Endpoints", _endpoints, description="The set of all endpoints."), *AGE),
    ("apps", "Deployment"): DEPLOYMENT,
    ("apps", "StatefulSet"): STATEFULSET,
    ("batch", "Job"): JOB,
    ("coordination.k8s.io", "Lease"): (
        Column("Holder", lambda lease: _spec(lease).get("holderIdentity", ""), description="holderIdentity."),
        *AGE,
    ),
    ("apiextensions.k8s.io", "CustomResourceDefinition"): (
        Column(
            "Created At",
            lambda c: _meta(c).get("creationTimestamp"),
            type="date",
            description="CreationTimestamp.",
        ),
    ),
}
