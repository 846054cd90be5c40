"""Per replica type: one pod and one Service per index, restarts, and the recount.

Upstream's: docs/upstream-behaviour.md#replica-pods.

Pods are slotted by their `replica-index` label. Missing indices below `replicas` are created,
indices at or above it are deleted (scale down; `replicas: 0` creates nothing, unlike upstream's
phantom pod of kubeflow/trainer#1709). A Failed pod is recreated (deleted, then created again
under the same name on a later pass) when its replica's restartPolicy allows it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from kubetrain.api.conditions import TRUE
from kubetrain.api.kinds import (
    COND_RESTARTING,
    LABEL_REPLICA_INDEX,
    LABEL_REPLICA_TYPE,
    RESTART_ALWAYS,
    RESTART_EXIT_CODE,
    RESTART_ON_FAILURE,
    reason,
)
from kubetrain.api.types import ReplicaSpec, ReplicaStatus
from kubetrain.controller import events
from kubetrain.controller.context import JobReconcile
from kubetrain.controller.ledger import RestartLedger
from kubetrain.controller.names import (
    JsonDict,
    is_terminating,
    name_of,
    replica_name,
)
from kubetrain.controller.plan import CreateObject, Event
from kubetrain.controller.pods import (
    EXIT_CODE_UNKNOWN,
    PodFactory,
    build_service,
    phase,
    service_ports,
    terminated_exit_code,
    termination_key,
)
from kubetrain.frameworks.base import TopologyError

METRIC_RESTARTED = "training_operator_jobs_restarted_total"
RETRYABLE_EXIT_CODE = 128
"""ExitCode policy: 128+ means killed by a signal (OOM, eviction, preemption) and is retried."""


@dataclass
class ReplicaView:
    """The observed pods and services of one replica type, slotted by index."""

    rtype: str
    spec: ReplicaSpec
    replicas: int
    pods: dict[int, list[JsonDict]] = field(default_factory=dict)
    services: dict[int, list[JsonDict]] = field(default_factory=dict)

    def pod_at(self, index: int) -> JsonDict | None:
        """The single pod of an index (upstream ignores an index holding several pods)."""
        found = self.pods.get(index)
        return found[0] if found is not None and len(found) == 1 else None


def _slot(objs: Sequence[JsonDict], by_type: dict[str, dict[int, list[JsonDict]]]) -> None:
    """Index objects by their `replica-type` and `replica-index` labels, in one pass and without
    copies (the labels are read inline: this runs over every pod on every plan)."""
    for obj in objs:
        metadata = obj.get("metadata")
        labels = metadata.get("labels") if isinstance(metadata, dict) else None
        if not isinstance(labels, dict):
            continue
        rtype, index = labels.get(LABEL_REPLICA_TYPE), labels.get(LABEL_REPLICA_INDEX)
        if not isinstance(rtype, str) or not isinstance(index, str) or not index.isdigit():
            continue
        by_type.setdefault(rtype, {}).setdefault(int(index), []).append(obj)


def replica_views(ctx: JobReconcile) -> list[ReplicaView]:
    """One view per replica spec, in the spec's order."""
    pods: dict[str, dict[int, list[JsonDict]]] = {}
    services: dict[str, dict[int, list[JsonDict]]] = {}
    _slot(ctx.pods, pods)
    _slot(ctx.services, services)
    views = []
    for rtype, spec in ctx.job.replica_specs.items():
        if spec is None:
            continue
        lowered = rtype.lower()
        views.append(
            ReplicaView(
                rtype, spec, max(spec.replicas or 0, 0), pods.get(lowered, {}), services.get(lowered, {})
            )
        )
    return views


def is_retryable(restart_policy: str | None, exit_code: int) -> bool:
    """Whether a Failed pod of this replica is recreated rather than failing the job."""
    if restart_policy in (RESTART_ON_FAILURE, RESTART_ALWAYS):
        return True
    return restart_policy == RESTART_EXIT_CODE and exit_code >= RETRYABLE_EXIT_CODE


def exit_code(ctx: JobReconcile, pod: JsonDict) -> int:
    code = terminated_exit_code(pod, ctx.info.default_container)
    return EXIT_CODE_UNKNOWN if code is None else code


def restart_candidates(ctx: JobReconcile, views: list[ReplicaView], ledger: RestartLedger) -> list[JsonDict]:
    """Failed pods this pass would recreate (not yet being deleted, not yet counted)."""
    found = []
    for view in views:
        for index in range(view.replicas):
            pod = view.pod_at(index)
            if pod is None or phase(pod) != "Failed" or is_terminating(pod) or ledger.is_restarting(pod):
                continue
            if is_retryable(view.spec.restart_policy, exit_code(ctx, pod)):
                found.append(pod)
    return found


def recount(ctx: JobReconcile, view: ReplicaView) -> None:
    """Reset and recount the type's replicaStatus from its pods (every pass, like upstream); the
    scale `selector` a status rule set earlier is kept (the pass that fails a job on backoffLimit
    or deadline runs no status rule, and upstream keeps the selector its last pass wrote)."""
    previous = ctx.status.replica_statuses.get(view.rtype)
    status = ReplicaStatus(selector=previous.selector if previous is not None else None)
    for index in range(view.replicas):
        pod = view.pod_at(index)
        if pod is None:
            continue
        pod_phase = phase(pod)
        if pod_phase == "Running":
            if is_terminating(pod):
                status.failed += 1
            else:
                status.active += 1
        elif pod_phase == "Succeeded":
            status.succeeded += 1
        elif pod_phase == "Failed":
            status.failed += 1
    ctx.status.replica_statuses[view.rtype] = status


def reconcile_pods(ctx: JobReconcile, view: ReplicaView, ledger: RestartLedger) -> None:
    """Create missing pods, delete out-of-range ones, handle Failed pods, recount."""
    factory: PodFactory | None = None
    for index in range(view.replicas):
        if view.pods.get(index):
            continue
        name = replica_name(ctx.name, view.rtype, index)
        if name in ctx.foreign_pod_names:
            # A pod we do not own holds the name (orphans are not adopted, as upstream): the create
            # could only fail with AlreadyExists, so report that instead of retrying it forever.
            ctx.event(
                "Warning", events.FAILED_CREATE_POD, events.error_creating(f'pods "{name}" already exists')
            )
            continue
        if factory is None:
            factory = PodFactory(ctx, view.rtype, view.spec)
            if factory.template_sets_restart_policy:
                ctx.event("Warning", events.SET_RESTART_POLICY, events.RESTART_POLICY_OVERWRITTEN)
        try:
            pod = factory.build(index)
        except TopologyError as err:
            ctx.event("Warning", events.FAILED_CREATE_POD, events.error_creating(err))
            continue
        ctx.staged.creates.append(
            (CreateObject(pod), Event("Normal", events.SUCCESSFUL_CREATE_POD, events.created_pod(name)))
        )
    for index in sorted(view.pods):
        if index >= view.replicas:  # scale down (every pod of the index, duplicates included)
            for extra in view.pods[index]:
                ctx.delete(extra, events.SUCCESSFUL_DELETE_POD, events.deleted_pod(name_of(extra)))
            continue
        existing = view.pod_at(index)
        if existing is not None:
            _check_pod(ctx, view, existing, ledger)
    recount(ctx, view)


def _check_pod(ctx: JobReconcile, view: ReplicaView, pod: JsonDict, ledger: RestartLedger) -> None:
    code = terminated_exit_code(pod, ctx.info.default_container)
    if code is not None:
        ctx.event(
            "Normal",
            events.EXITED_WITH_CODE,
            events.exited_with_code(ctx.namespace, name_of(pod), code),
            once=termination_key(pod, ctx.info.default_container),
        )
    if phase(pod) != "Failed":
        return
    policy = view.spec.restart_policy
    effective = EXIT_CODE_UNKNOWN if code is None else code
    if is_retryable(policy, effective):
        if ledger.is_restarting(pod):
            ctx.delete(pod, None, None)  # our earlier delete has not landed yet: repeat it quietly
        elif not is_terminating(pod):
            message = f"job {ctx.name} is restarting because {view.rtype} replica(s) failed."
            ctx.staged.restarts.append(pod)
            ctx.event("Warning", reason(ctx.kind, "Restarting"), message)
            ctx.condition(COND_RESTARTING, TRUE, reason(ctx.kind, "Restarting"), message)
    elif policy == RESTART_EXIT_CODE:
        message = f'job "{ctx.name}" is failing because "{view.rtype}" replica(s) failed.'
        ctx.event("Warning", reason(ctx.kind, "Failed"), message)
        ctx.fail(message)


def reconcile_services(ctx: JobReconcile, view: ReplicaView) -> None:
    """One headless Service per index below `replicas`; the others are deleted."""
    ports: list[JsonDict] | None = None
    missing = [index for index in range(view.replicas) if not view.services.get(index)]
    if missing:
        ports = service_ports(ctx, view.spec)
        if ports is None:
            ctx.event("Warning", events.FAILED_CREATE_SERVICE, events.error_creating(events.PORT_NOT_FOUND))
            missing = []
    for index in missing:
        assert ports is not None
        svc = build_service(ctx, view.rtype, index, ports)
        name = name_of(svc)
        ctx.staged.creates.append(
            (
                CreateObject(svc),
                Event("Normal", events.SUCCESSFUL_CREATE_SERVICE, events.created_service(name)),
            )
        )
    for index in sorted(view.services):
        if index < view.replicas:
            continue
        for svc in view.services[index]:
            ctx.delete(svc, events.SUCCESSFUL_DELETE_SERVICE, events.deleted_service(name_of(svc)))


def commit_restarts(ctx: JobReconcile, ledger: RestartLedger) -> None:
    """Delete the staged Failed pods so they are recreated (with upstream's `SuccessfulDeletePod`
    event: its PodControl records every delete), and count each restart once."""
    for pod in ctx.staged.restarts:
        if ctx.delete(pod, events.SUCCESSFUL_DELETE_POD, events.deleted_pod(name_of(pod))):
            ledger.record_restart(pod)
            ctx.metric(METRIC_RESTARTED)
