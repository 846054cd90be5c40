"""The MPIJob v2beta1 planner: mpi-operator's `syncHandler` on the `run_job` template.

Upstream's: docs/upstream-behaviour.md#mpijob-v2beta1-sync.

managedBy elsewhere, being deleted           -> nothing                         (run_job)
invalid                                      -> Warning ValidationError, nothing else (run_job)
Created condition                             (first sight, with an event)
finished with completionTime                 -> clean workers per cleanPodPolicy, stop
launcher Job absent or running               -> Service, ConfigMap, SSH Secret,
                                                PodGroup + workers (unless suspended),
                                                launcher Job (AtStartup / workers Ready)
launcher Job suspension in step with the job
suspended                                    -> workers and PodGroup released
status                                        (v2_status)
"""

from __future__ import annotations

from datetime import datetime

from kubetrain.api.conditions import MPI_OPERATOR_RULES, TRUE, is_finished, set_condition
from kubetrain.api.fielderrors import ErrorList
from kubetrain.api.kinds import CLEAN_POD_ALL, CLEAN_POD_RUNNING, COND_CREATED, LABEL_JOB_ROLE, KindInfo
from kubetrain.api.types import JobStatus, ReplicaStatus, TrainingJob
from kubetrain.controller.context import JobReconcile
from kubetrain.controller.job import JobKind
from kubetrain.controller.names import (
    JsonDict,
    controller_of,
    is_controlled_by,
    labels_of,
    name_of,
    object_ref,
)
from kubetrain.controller.owned import (
    BATCH_JOB,
    POD,
    SECRET,
    OwnedObjects,
    as_dict,
    data_differ,
    job_finished,
)
from kubetrain.controller.plan import CreateObject, DeleteObject, PatchObject
from kubetrain.controller.pods import phase
from kubetrain.kinds.mpijob import v2_objects as objects
from kubetrain.kinds.mpijob import v2_podgroup as podgroup
from kubetrain.kinds.mpijob.defaults import default_v2
from kubetrain.kinds.mpijob.ssh import KeyGen
from kubetrain.kinds.mpijob.types import LAUNCHER_WAIT_FOR_WORKERS_READY, WORKER
from kubetrain.kinds.mpijob.v2_status import StatusInputs, update_status
from kubetrain.kinds.mpijob.validation import validate_v2, validation_event_message
from kubetrain.kinds.mpijob.wire import MPI_OPERATOR_CONTROLLER, v2_spec
from kubetrain.kube.timefmt import format_time

METRIC_CREATED = "mpi_operator_jobs_created_total"


class MPIV2Kind(JobKind[TrainingJob, JobStatus]):
    """mpi-operator's MPIJob: `run_job`'s shared steps (an invalid job only warns), then `_run`."""

    controller = MPI_OPERATOR_CONTROLLER
    one_step_per_pass = True

    def __init__(self, keygen: KeyGen) -> None:
        self.keygen = keygen

    def managed_by(self, job: TrainingJob) -> str | None:
        policy = v2_spec(job).run_policy
        return policy.managed_by if policy is not None else None

    def initial_status(self) -> JobStatus:
        return JobStatus()

    def prepare(
        self, job: TrainingJob, info: KindInfo, errors: ErrorList, now: datetime
    ) -> tuple[TrainingJob, str]:
        defaulted = default_v2(job)
        problems = validate_v2(defaulted)
        return defaulted, validation_event_message(problems) if problems else ""

    def exists_message(self, name: str, kind: str) -> str:
        return f'Resource "{name}" already exists and is not managed by MPIJob'

    def created(self, ctx: JobReconcile) -> None:
        """mpi-operator's Created: on a job without conditions, with an event, counted once."""
        if ctx.status.conditions:
            return
        message = f"MPIJob {ctx.namespace}/{ctx.name} is created."
        set_condition(ctx.status, COND_CREATED, TRUE, "MPIJobCreated", message, ctx.stamp, MPI_OPERATOR_RULES)
        ctx.event("Normal", "MPIJobCreated", message)
        ctx.metric(METRIC_CREATED, {})

    def reconcile(self, ctx: JobReconcile) -> None:
        job = objects.V2Job(ctx.name, ctx.namespace, v2_spec(ctx.job), ctx.config)
        _run(ctx.owned, job, ctx.status, ctx.job, ctx.now, self.keygen)


def _run(
    sync: OwnedObjects, job: objects.V2Job, status: JobStatus, raw: TrainingJob, now: datetime, keygen: KeyGen
) -> None:
    stamp = format_time(now)
    policy = job.spec.run_policy
    clean = policy.clean_pod_policy if policy is not None else None
    suspended = bool(policy is not None and policy.suspend)
    if is_finished(status) and status.completion_time is not None:
        if clean in (CLEAN_POD_ALL, CLEAN_POD_RUNNING):
            _clean_up_workers(sync, job, status, clean)
        return
    if status.start_time is None and not suspended:
        status.start_time = stamp
    launcher = sync.get(BATCH_JOB, job.launcher_name)
    if launcher is not None and not sync.controlled(launcher):
        return
    workers: list[JsonDict | None] = []
    if launcher is None or not job_finished(launcher):
        _ensure_shared_objects(sync, job, keygen)
        if sync.blocked:
            return
        if not suspended:
            if job.config.gang_scheduling:
                podgroup.sync_pod_group(sync, job, raw.metadata.get("annotations") or {})
            workers = _reconcile_workers(sync, job)
            if sync.blocked:
                return
    created = _maybe_create_launcher(sync, job, workers, suspended) if launcher is None else None
    if launcher is not None:
        _sync_launcher_suspension(sync, job, launcher, suspended)
    if suspended:
        _clean_up_workers(sync, job, status, clean)
    launcher_pods = _launcher_pods(sync, job, launcher)
    # A launcher created in this pass counts as existing for the status, as upstream's Create
    # returns it within the same sync (statuses {Launcher: {}, Worker: {}} from the first pass).
    shown = launcher if launcher is not None else created
    inputs = StatusInputs(job.name, job.namespace, suspended, shown, launcher_pods, workers)
    update_status(sync, status, inputs, stamp)


def _maybe_create_launcher(
    sync: OwnedObjects, job: objects.V2Job, workers: list[JsonDict | None], suspended: bool
) -> JsonDict | None:
    """Create the launcher Job when the policy allows it now; returns the created manifest."""
    if sync.blocked or not _may_create_launcher(job, workers):
        return None
    obj, warned = objects.launcher_job(sync, job, suspended)
    if warned:
        sync.event("Warning", objects.SET_RESTART_POLICY, objects.RESTART_POLICY_OVERRIDDEN)
    sync.plan.actions.append(CreateObject(obj))
    return obj


def _ensure_shared_objects(sync: OwnedObjects, job: objects.V2Job, keygen: KeyGen) -> None:
    sync.ensure(objects.service(sync, job), objects.service_differ)
    running = [name_of(p) for p in _worker_pods(sync, job) if phase(p) == "Running"]
    sync.ensure(objects.config_map(sync, job, running), data_differ)
    current = sync.get(SECRET, job.name + objects.SSH_SUFFIX)
    if current is None:
        sync.plan.actions.append(CreateObject(objects.ssh_secret(sync, job, keygen())))
    elif sync.controlled(current):
        data = as_dict(current.get("data"))
        if set(data) != {objects.SSH_PRIVATE_KEY, objects.SSH_PUBLIC_KEY}:
            fresh = objects.ssh_secret(sync, job, keygen())["data"]
            patch = {**{k: None for k in data if k not in fresh}, **fresh}
            sync.plan.actions.append(PatchObject(object_ref(current), {"data": patch}))


def _worker_pods(sync: OwnedObjects, job: objects.V2Job) -> list[JsonDict]:
    prefix = f"{job.name}-worker-"
    return [
        p
        for p in sync.objects(POD)
        if is_controlled_by(p, sync.uid)
        and name_of(p).startswith(prefix)
        and name_of(p)[len(prefix) :].isdigit()
    ]


def _reconcile_workers(sync: OwnedObjects, job: objects.V2Job) -> list[JsonDict | None]:
    """Scale down (index >= replicas), then create missing indices; failed workers stay failed
    (the launcher decides the job's fate)."""
    prefix = f"{job.name}-worker-"
    owned = _worker_pods(sync, job)
    for pod in owned:
        if int(name_of(pod)[len(prefix) :]) >= job.workers:
            sync.plan.actions.append(DeleteObject(object_ref(pod)))
    found: list[JsonDict | None] = []
    for index in range(job.workers):
        current = sync.get(POD, job.worker_name(index))
        if current is None:
            sync.plan.actions.append(CreateObject(objects.worker_pod(sync, job, index)))
        elif not sync.controlled(current):
            return []
        found.append(current)
    return found


def _is_ready(pod: JsonDict | None) -> bool:
    status = as_dict(pod.get("status")) if pod is not None else {}
    return any(
        isinstance(c, dict) and c.get("type") == "Ready" and c.get("status") == TRUE
        for c in status.get("conditions") or ()
    )


def _may_create_launcher(job: objects.V2Job, workers: list[JsonDict | None]) -> bool:
    if job.spec.launcher_creation_policy != LAUNCHER_WAIT_FOR_WORKERS_READY:
        return True
    return all(_is_ready(pod) for pod in workers) and len(workers) == job.workers


def _sync_launcher_suspension(
    sync: OwnedObjects, job: objects.V2Job, launcher: JsonDict, suspended: bool
) -> None:
    """Keep the launcher Job's `suspend` equal to the MPIJob's; on resume also carry over the
    scheduling directives Kueue may have injected into the MPIJob's launcher template.

    The template may only change while the Job has never started (`status.startTime` unset):
    upstream clears that field first through the Job's status subresource, which a plan cannot
    do, so a Job that had started resumes without the template update instead of being refused.
    """
    spec = as_dict(launcher.get("spec"))
    launcher_suspended = bool(spec.get("suspend"))
    if not suspended and launcher_suspended:
        patch: JsonDict = {"suspend": False}
        launcher_status = launcher.get("status")
        started = launcher_status.get("startTime") if isinstance(launcher_status, dict) else None
        if not started:
            template, _ = objects.launcher_template(job)
            directives = objects.scheduling_directives_patch(launcher, template)
            if directives:
                patch["template"] = directives
        sync.plan.actions.append(PatchObject(object_ref(launcher), {"spec": patch}))
    elif suspended and not launcher_suspended:
        sync.plan.actions.append(PatchObject(object_ref(launcher), {"spec": {"suspend": True}}))


def _clean_up_workers(sync: OwnedObjects, job: objects.V2Job, status: JobStatus, clean: str | None) -> None:
    """Delete worker pods (policy Running keeps pods that are neither Running nor Pending), the
    PodGroup, and reset the Worker replica status (mpi-operator's `cleanUpWorkerPods`)."""
    for pod in _worker_pods(sync, job):
        if clean == CLEAN_POD_RUNNING and phase(pod) not in ("Running", "Pending"):
            continue
        if not pod.get("metadata", {}).get("deletionTimestamp"):
            sync.plan.actions.append(DeleteObject(object_ref(pod)))
    podgroup.delete_pod_group(sync, job)
    status.replica_statuses[WORKER] = ReplicaStatus()


def _launcher_pods(sync: OwnedObjects, job: objects.V2Job, launcher: JsonDict | None) -> list[JsonDict]:
    """The pods of the launcher Job (the batch Job controller owns them, not the MPIJob)."""
    if launcher is None:
        return []
    uid = (launcher.get("metadata") or {}).get("uid")
    out = []
    for pod in sync.objects(POD):
        ref = controller_of(pod)
        if ref is None or ref.get("kind") != "Job" or labels_of(pod).get(LABEL_JOB_ROLE) != "launcher":
            continue
        if (uid and ref.get("uid") == uid) or (not uid and ref.get("name") == job.launcher_name):
            out.append(pod)
    return out
