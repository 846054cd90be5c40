# ruff: noqa: RUF009  (`wire()` returns a dataclasses.field; the call is the declaration)
"""The TrainJob planner (upstream `pkg/controller/trainjob_controller.go` with the runtimes of
`pkg/runtime/core/`), on `run_job`. One pass, in upstream's order:

    a Failed condition other than DeadlineExceeded is cleared (a spec change may recover the job)
    runtimeRef names no runtime kind     -> Failed(TrainingRuntimeNotSupported), nothing built
    not finished                         -> the runtime, from the context the runtime layer lists
                                            (namespaced TrainingRuntime or ClusterTrainingRuntime;
                                            missing: a Warning TrainJobResourcesCreationFailed and
                                            a retry with backoff), then the JobSet: created when
                                            absent; when it or the TrainJob is suspended, brought
                                            in line (`jobset.suspended_differ`)
    Suspended                            -> True(Suspended) while suspended, False(Resumed) after
    status from the JobSet               -> Complete/Failed copied, jobsStatus
    activeDeadlineSeconds                -> Failed(DeadlineExceeded) and the JobSet deleted once
                                            past, else a requeue at the deadline

The ML policy plugins run between the runtime and the JobSet, each acting only when the runtime's
mlPolicy names it: plainml (`plainml.py`, when it names none of torch, mpi and jax), torch
(`torch.py`), jax (`jax.py`), xgboost (`xgboost.py`) and mpi (`mpi.py`, whose SSH Secret and
hostfile ConfigMap are created before the JobSet, the ConfigMap kept in line on every pass as
upstream re-applies it); a runtime with another policy (flux) gets the JobSet plugin's part only,
and a Warning saying so. Then the pod group plugins (`podgroup.py`) when the runtime's
podGroupPolicy names coscheduling or volcano: their label or annotation on the pods, and the
PodGroup, created before the JobSet.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from kubetrain.api.codec import decode
from kubetrain.api.fielderrors import ErrorList
from kubetrain.api.kinds import LABEL_OPERATOR_NAME, KindInfo
from kubetrain.api.types import JsonDict as _JsonDict
from kubetrain.api.types import extra_keys as _extra
from kubetrain.controller.config import ChildType, ControllerConfig
from kubetrain.controller.context import Reconcile
from kubetrain.controller.job import JobKind, run_job
from kubetrain.controller.owned import SECRET, data_differ
from kubetrain.controller.plan import CreateObject, Observed, Plan
from kubetrain.kinds.mpijob.ssh import KeyGen, generate_key_pair
from kubetrain.kinds.trainjob import jax, mpi, plainml, podgroup, torch, xgboost
from kubetrain.kinds.trainjob import jobset as jobset_plugin
from kubetrain.kinds.trainjob.apply import as_dict
from kubetrain.kinds.trainjob.conditions import find, is_true, remove, set_status_condition
from kubetrain.kinds.trainjob.constants import (
    API_VERSION,
    CLUSTER_TRAINING_RUNTIME,
    COND_COMPLETE,
    COND_FAILED,
    COND_SUSPENDED,
    CONTROLLER_NAME,
    EVENT_RESOURCES_CREATION_FAILED,
    GROUP,
    JOBSET_API_VERSION,
    JOBSET_KIND,
    MESSAGE_RESUMED,
    MESSAGE_SUSPENDED,
    MPI_HOSTFILE_CONFIG_MAP_SUFFIX,
    MPI_SSH_AUTH_SECRET_SUFFIX,
    REASON_DEADLINE_EXCEEDED,
    REASON_RESUMED,
    REASON_RUNTIME_NOT_SUPPORTED,
    REASON_SUSPENDED,
    TRAINING_RUNTIME,
)
from kubetrain.kinds.trainjob.info import Info, new_info
from kubetrain.kinds.trainjob.validation import RUNTIMES, runtime_key
from kubetrain.kinds.trainjob.wire import TRAINJOB_INFO, TrainerObject, parser
from kubetrain.kube.timefmt import parse_time

JsonDict = dict[str, Any]
JOBSET = (JOBSET_API_VERSION, JOBSET_KIND)
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
"""On every pod of a JobSet (its name: the TrainJob's); how the client finds a TrainJob's pods."""
JOBSET_CHILD = ChildType(JOBSET_API_VERSION, JOBSET_KIND, "jobsets", None)
TRAINING_RUNTIME_CONTEXT = ChildType(API_VERSION, TRAINING_RUNTIME, "trainingruntimes", None)
CLUSTER_TRAINING_RUNTIME_CONTEXT = ChildType(
    API_VERSION, CLUSTER_TRAINING_RUNTIME, "clustertrainingruntimes", None
)
MPI_CHILDREN = (
    ChildType("v1", "ConfigMap", "configmaps", None),
    ChildType("v1", "Secret", "secrets", LABEL_OPERATOR_NAME),
)
"""The MPI plugin's hostfile ConfigMap and SSH Secret (the Secret cache selects on the label
`mpi.ssh_auth_secret` adds, as MPIJob's does)."""
POD_GROUP_CHILDREN = tuple(
    ChildType(api_version, podgroup.POD_GROUP, "podgroups", None)
    for api_version in (podgroup.COSCHEDULING_API_VERSION, podgroup.VOLCANO_API_VERSION)
)
"""The coscheduling and volcano plugins' PodGroups (each watched when its CRD is served)."""
POD_GROUP_CRD_MISSING_HINT = (
    " (install the scheduler's PodGroup CRD, then restart the operator: it watches PodGroups only if"
    " their CRD is served when it starts)"
)
MESSAGE_DEADLINE_EXCEEDED = "TrainJob exceeded its active deadline"
MESSAGE_MAX = 950
"""Upstream's event message keeps the first 950 characters of the error."""

_parse = parser(TRAINJOB_INFO)


@dataclass
class TrainJobStatus:
    """A TrainJob's status, kept as the raw object (`extra`): metav1 Conditions and jobsStatus."""

    extra: _JsonDict = _extra()

    @property
    def data(self) -> JsonDict:
        return self.extra


@dataclass
class TrainJob(TrainerObject):
    status: TrainJobStatus | None = None


Ctx = Reconcile[TrainJob, TrainJobStatus]


def _runtime(job: TrainJob, observed: Observed, key: str) -> tuple[JsonDict | None, str]:
    """The runtime the TrainJob names, else upstream's not-found error."""
    plural = RUNTIMES[key][0]
    name = str(as_dict(job.spec.get("runtimeRef")).get("name") or "")
    if key == f"{TRAINING_RUNTIME}.{GROUP}":
        candidates = observed.of(API_VERSION, TRAINING_RUNTIME)
        namespace: str | None = job.namespace
        word = "TrainingRuntime"
    else:
        candidates = observed.of(API_VERSION, CLUSTER_TRAINING_RUNTIME)
        namespace = None
        word = "ClusterTrainingRuntime"
    for obj in candidates:
        meta = as_dict(obj.get("metadata"))
        if meta.get("name") == name and (namespace is None or meta.get("namespace") == namespace):
            return obj, ""
    return None, f'{word} specified in TrainJob is not found: {plural}.{GROUP} "{name}" not found'


IMPLEMENTED_POLICY_FIELDS = frozenset({"numNodes", "torch", "jax", "xgboost", "mpi"})
EVENT_POLICY_NOT_IMPLEMENTED = "MLPolicyNotImplemented"


def _warn_unimplemented_policies(ctx: Ctx, info: Info) -> None:
    """Say so, once (when the JobSet is created), when the runtime's mlPolicy names a plugin kubetrain
    does not implement yet (flux): its JobSet is built without that plugin's part, and the user
    must not have to guess why its processes cannot find each other."""
    for name in sorted(set(as_dict(info.ml_policy)) - IMPLEMENTED_POLICY_FIELDS):
        ctx.event(
            "Warning",
            EVENT_POLICY_NOT_IMPLEMENTED,
            f'kubetrain does not implement the runtime\'s "{name}" ML policy yet: the JobSet is built '
            f"without its env, files or launcher wiring (implemented: torch, jax, xgboost, mpi)",
        )


def _creation_failed(ctx: Ctx, problem: str) -> None:
    """upstream's Warning for an error building the runtime's objects, and a retry with backoff."""
    message = f"TrainJob resources reconciliation failed: {problem[:MESSAGE_MAX]}"
    if len(problem) > MESSAGE_MAX:
        message += " ..."
    ctx.event("Warning", EVENT_RESOURCES_CREATION_FAILED, message)
    ctx.plan.retry = True


def _finished(status: JsonDict) -> bool:
    return is_true(status, COND_COMPLETE) or is_true(status, COND_FAILED)


class TrainJobKind(JobKind[TrainJob, TrainJobStatus]):
    """Trainer v2's TrainJob: managedBy, no validation in the controller (the webhook's), its own
    conditions (metav1), its JobSet owned outright."""

    controller = CONTROLLER_NAME

    def __init__(self, keygen: KeyGen = generate_key_pair) -> None:
        self.keygen = keygen
        """Makes the MPI plugin's SSH key pair (tests pass a fixed one)."""

    def managed_by(self, job: TrainJob) -> str | None:
        value = job.spec.get("managedBy")
        return str(value) if value else None

    def initial_status(self) -> TrainJobStatus:
        return TrainJobStatus()

    def prepare(
        self, job: TrainJob, info: KindInfo, errors: ErrorList, now: datetime
    ) -> tuple[TrainJob, str]:
        return job, ""

    def exists_message(self, name: str, kind: str) -> str:
        """The TrainJob's name is the child's, less the MPI plugin's suffix for its two objects."""
        suffix = {"Secret": MPI_SSH_AUTH_SECRET_SUFFIX, "ConfigMap": MPI_HOSTFILE_CONFIG_MAP_SUFFIX}.get(
            kind, ""
        )
        trainjob = name.removesuffix(suffix) if suffix else name
        return f'{kind} "{name}" already exists and is not controlled by TrainJob "{trainjob}"'

    def reconcile(self, ctx: Ctx) -> None:
        job, status = ctx.job, ctx.status.data
        failed = find(status.get("conditions"), COND_FAILED)
        if failed is None or failed.get("reason") != REASON_DEADLINE_EXCEEDED:
            remove(status, COND_FAILED)
        key = runtime_key(job.raw)
        supported = key in RUNTIMES
        if not supported:
            new = {"type": COND_FAILED, "status": "True", "reason": REASON_RUNTIME_NOT_SUPPORTED}
            set_status_condition(status, {**new, "message": f"unsupported runtime: {key}"}, ctx.stamp)
        elif not _finished(status):
            self._objects(ctx, key)
        self._suspended(ctx)
        if supported:
            jobset = ctx.owned.get(JOBSET, job.name)
            if jobset is not None and ctx.owned.controlled(jobset):
                jobset_plugin.status_from(jobset, status, ctx.stamp)
        self._deadline(ctx)

    def _objects(self, ctx: Ctx, key: str) -> None:
        runtime, problem = _runtime(ctx.job, ctx.observed, key)
        if runtime is None:
            _creation_failed(ctx, problem)
            return
        info = new_info(ctx.job.raw, runtime)
        plainml.enforce(info, ctx.job.raw)
        problem = torch.enforce(info, ctx.job.raw)
        jax.enforce(info, ctx.job.raw)
        xgboost.enforce(info, ctx.job.raw)
        mpi_policy, mpi_problem = mpi.enforce(info, ctx.job.raw)
        problem = problem or mpi_problem
        if problem:
            _creation_failed(ctx, problem)
            return
        podgroup.enforce(info, ctx.job.raw)
        desired = jobset_plugin.build(info, ctx.job.raw, ctx.owner())
        if not self._pod_groups(ctx, info, desired):
            return
        if mpi_policy is not None:
            self._mpi_objects(ctx, info, mpi_policy)
            if ctx.owned.blocked:
                return
        current = ctx.owned.get(JOBSET, ctx.job.name)
        if current is None:
            _warn_unimplemented_policies(ctx, info)
            ctx.owned.ensure(desired)
        elif desired["spec"].get("suspend") or as_dict(current.get("spec")).get("suspend"):
            ctx.owned.ensure(desired, jobset_plugin.suspended_differ)
        else:
            ctx.owned.controlled(current)  # running: left as it is (upstream builds nothing)

    def _pod_groups(self, ctx: Ctx, info: Info, jobset: JsonDict) -> bool:
        """The pod group plugins' `Build`: each PodGroup created when absent, and brought in line
        only while the TrainJob is suspended. False when the pass must stop here: a PodGroup kind
        the API server does not serve (upstream's error, and nothing built) or a namesake that is
        not the TrainJob's."""
        wanted = podgroup.build(info, ctx.job.raw, jobset, ctx.owner())
        for group in wanted:
            api_version = group["apiVersion"]
            if f"{api_version}/{podgroup.POD_GROUP}" not in ctx.observed.others:
                problem = f'no matches for kind "{podgroup.POD_GROUP}" in version "{api_version}"'
                _creation_failed(ctx, problem + POD_GROUP_CRD_MISSING_HINT)
                return False
        suspended = ctx.job.spec.get("suspend") is True
        for group in wanted:
            current = ctx.owned.get((group["apiVersion"], podgroup.POD_GROUP), ctx.job.name)
            if current is None or suspended:
                ctx.owned.ensure(group, podgroup.spec_differ)
            else:
                ctx.owned.controlled(current)
        return not ctx.owned.blocked

    def _mpi_objects(self, ctx: Ctx, info: Info, policy: mpi.MPIPolicy) -> None:
        """The MPI plugin's `Build`: the SSH Secret when absent (immutable, so one of ours is kept
        as it is), and the hostfile ConfigMap, created or brought in line with the pods' names."""
        raw, owner = ctx.job.raw, ctx.owner()
        secret = ctx.owned.get(SECRET, mpi.ssh_secret_name(ctx.job.name))
        if secret is None:
            ctx.plan.actions.append(CreateObject(mpi.ssh_auth_secret(raw, self.keygen(), owner)))
        elif not ctx.owned.controlled(secret):
            return
        text = mpi.hostfile(info, policy, jobset_plugin.endpoints(info, raw))
        ctx.owned.ensure(mpi.hostfile_config_map(raw, text, owner), data_differ)

    def _suspended(self, ctx: Ctx) -> None:
        status = ctx.status.data
        if ctx.job.spec.get("suspend") is True:
            new = {
                "type": COND_SUSPENDED,
                "status": "True",
                "reason": REASON_SUSPENDED,
                "message": MESSAGE_SUSPENDED,
            }
        elif is_true(status, COND_SUSPENDED):
            new = {
                "type": COND_SUSPENDED,
                "status": "False",
                "reason": REASON_RESUMED,
                "message": MESSAGE_RESUMED,
            }
        else:
            return
        set_status_condition(status, new, ctx.stamp)

    def _deadline(self, ctx: Ctx) -> None:
        """upstream `reconcileDeadline`: from creation, or from the last resume."""
        seconds = ctx.job.spec.get("activeDeadlineSeconds")
        status = ctx.status.data
        if (
            not isinstance(seconds, int)
            or seconds <= 0
            or _finished(status)
            or ctx.job.spec.get("suspend") is True
        ):
            return
        start = parse_time(ctx.job.metadata.get("creationTimestamp"))
        resumed = find(status.get("conditions"), COND_SUSPENDED)
        if resumed is not None and resumed.get("status") == "False":
            start = parse_time(resumed.get("lastTransitionTime")) or start
        if start is None:
            return
        try:
            deadline = start + timedelta(seconds=seconds)
        except OverflowError:  # past any date a datetime holds: never
            return
        if ctx.now > deadline:
            new = {"type": COND_FAILED, "status": "True", "reason": REASON_DEADLINE_EXCEEDED}
            set_status_condition(status, {**new, "message": MESSAGE_DEADLINE_EXCEEDED}, ctx.stamp)
            jobset = ctx.owned.get(JOBSET, ctx.job.name)
            if jobset is not None and ctx.owned.controlled(jobset):
                ctx.delete(jobset, None, None)
            return
        remaining = (deadline - ctx.now).total_seconds()
        ctx.requeue(remaining if remaining > 0 else 1.0)


KIND = TrainJobKind()


def parse(raw: Any) -> tuple[TrainJob | None, KindInfo | None, ErrorList]:
    obj, info, errors = _parse(raw)
    if obj is None:
        return None, info, errors
    status = None
    if isinstance(raw.get("status"), dict):
        status, _ = decode(TrainJobStatus, raw["status"], "status")
    job = TrainJob(
        api_version=obj.api_version, kind=obj.kind, metadata=obj.metadata, raw=obj.raw, status=status
    )
    return job, info, errors


def plan(
    job: JsonDict,
    observed: Observed,
    now: datetime,
    config: ControllerConfig,
    *,
    keygen: KeyGen | None = None,
) -> Plan:
    kind = KIND if keygen is None else TrainJobKind(keygen)
    return run_job(kind, job, parse(job), observed, now, config)
