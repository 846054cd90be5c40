"""Builders for already-defaulted jobs, pods and statuses used by the framework tests.

Jobs are built the way `apply_defaults` leaves them (explicit replicas, restart policies, the
default port on the default container) so these tests do not depend on the defaulting module.
"""

from __future__ import annotations

import copy
from typing import Any

from kubetrain.api.kinds import LABEL_REPLICA_INDEX, LABEL_REPLICA_TYPE
from kubetrain.api.types import JobCondition, JobStatus, ReplicaSpec, ReplicaStatus, TrainingJob
from kubetrain.frameworks.base import Framework, FrameworkSettings, StatusContext
from kubetrain.kinds.registry import BY_KIND
from kubetrain.kinds.registry import REPLICA_SPEC_KINDS as KINDS

NOW = "2024-05-01T10:00:00Z"
EARLIER = "2024-05-01T09:00:00Z"
JsonDict = dict[str, Any]


def framework_for(kind: str) -> Framework:
    """The framework plugin a generic kind's registration carries."""
    plugin = BY_KIND[kind].framework_plugin
    assert plugin is not None, kind
    return plugin


def container(name: str, port: int | None = None, port_name: str | None = None, env: Any = None) -> JsonDict:
    c: JsonDict = {"name": name, "image": "img"}
    if port is not None:
        c["ports"] = [{"name": port_name, "containerPort": port}]
    if env is not None:
        c["env"] = env
    return c


def replica(
    kind: str,
    replicas: int = 1,
    restart: str | None = None,
    port: int | None = -1,
    containers: list[JsonDict] | None = None,
    annotations: dict[str, str] | None = None,
) -> ReplicaSpec:
    """A defaulted replica spec with the kind's default container carrying its default port.

    `port=-1` means the kind's default port number; `port=None` means no port at all.
    """
    info = KINDS[kind]
    number = info.default_port if port == -1 else port
    main = container(info.default_container, number, info.default_port_name if number is not None else None)
    template: JsonDict = {"spec": {"containers": containers if containers is not None else [main]}}
    if annotations:
        template["metadata"] = {"annotations": annotations}
    return ReplicaSpec(
        replicas=replicas, template=template, restart_policy=restart or info.default_restart_policy
    )


def job(
    kind: str, specs: dict[str, ReplicaSpec], name: str = "j", namespace: str = "ns", **spec_fields: Any
) -> TrainingJob:
    info = KINDS[kind]
    spec = info.spec_type(replica_specs=specs, **spec_fields)
    return TrainingJob(
        api_version=info.api_version,
        kind=kind,
        metadata={"name": name, "namespace": namespace, "uid": "uid-1"},
        spec=spec,
    )


def build_pod(j: TrainingJob, rtype: str, index: int, settings: FrameworkSettings | None = None) -> JsonDict:
    """A pod the way the reconciler builds it, then passed through `set_cluster_spec`."""
    spec = j.replica_specs[rtype]
    assert spec is not None and spec.template is not None
    pod = copy.deepcopy(spec.template)
    pod.setdefault("metadata", {})["name"] = f"{j.name}-{rtype.lower()}-{index}"
    framework_for(j.kind).set_cluster_spec(j, pod, rtype, index, settings or FrameworkSettings())
    return pod


def env_of(pod: JsonDict, container_index: int = 0) -> list[tuple[str, Any]]:
    """(name, value-or-valueFrom) pairs of one container, in order."""
    out = []
    for var in pod["spec"]["containers"][container_index].get("env", []):
        out.append((var["name"], var["value"] if "value" in var else var["valueFrom"]))
    return out


def env_dict(pod: JsonDict, container_index: int = 0) -> dict[str, Any]:
    return dict(env_of(pod, container_index))


def observed_pod(
    rtype: str, index: int, phase: str, container: str | None = None, exit_code: int | None = None
) -> JsonDict:
    pod: JsonDict = {
        "metadata": {
            "name": f"j-{rtype.lower()}-{index}",
            "labels": {LABEL_REPLICA_TYPE: rtype.lower(), LABEL_REPLICA_INDEX: str(index)},
        },
        "status": {"phase": phase},
    }
    if container is not None:
        state: JsonDict = {"running": {}} if exit_code is None else {"terminated": {"exitCode": exit_code}}
        pod["status"]["containerStatuses"] = [{"name": container, "state": state}]
    return pod


def status(
    conditions: list[tuple[str, str, str, str]] | None = None, **replica_counts: tuple[int, int, int]
) -> JobStatus:
    """`Worker=(active, succeeded, failed)` style replica statuses plus prior conditions."""
    st = JobStatus(
        conditions=[
            JobCondition(
                type=t, status=s, reason=r, message=m, last_update_time=EARLIER, last_transition_time=EARLIER
            )
            for t, s, r, m in (conditions or [])
        ],
        start_time=None,
    )
    for rtype, (active, succeeded, failed) in replica_counts.items():
        st.replica_statuses[rtype] = ReplicaStatus(active=active, succeeded=succeeded, failed=failed)
    return st


def run_status(j: TrainingJob, st: JobStatus, pods: list[JsonDict] | None = None) -> StatusContext:
    ctx = StatusContext(job=j, status=st, pods=pods or [], now=NOW)
    framework_for(j.kind).update_status(ctx)
    return ctx


def conds(st: JobStatus) -> list[tuple[str, str, str | None, str | None]]:
    return [(c.type, c.status, c.reason, c.message) for c in st.conditions]


def created(kind: str, name: str = "j") -> tuple[str, str, str, str]:
    return ("Created", "True", f"{kind}Created", f"{kind} {name} is created.")


def template_of(j: TrainingJob, rtype: str) -> JsonDict:
    spec = j.replica_specs[rtype]
    assert spec is not None and spec.template is not None
    return spec.template


def selector_of(st: JobStatus, rtype: str) -> str:
    selector = st.replica_statuses[rtype].selector
    assert selector is not None
    return selector
