"""The MPIJob v2beta1 planner: mpi-operator's `syncHandler` (spec §5.3) as a pure function.

managedBy elsewhere, being deleted           -> nothing
invalid                                      -> Warning ValidationError, nothing else
Created condition                             (first sight)
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

from kubetrain.api.codec import encode
from kubetrain.api.conditions import TRUE, is_finished
from kubetrain.api.defaults_mpi import default_v2
from kubetrain.api.kinds import CLEAN_POD_ALL, CLEAN_POD_RUNNING, COND_CREATED, LABEL_JOB_ROLE
from kubetrain.api.kinds_mpi import MPI_OPERATOR_CONTROLLER, MPIJOB_V2BETA1, v2_spec
from kubetrain.api.types import JobStatus, ReplicaStatus, TrainingJob
from kubetrain.api.types_mpi import LAUNCHER_WAIT_FOR_WORKERS_READY, WORKER
from kubetrain.api.validation_mpi import validate_v2, validation_event_message
from kubetrain.controller.config import ControllerConfig
from kubetrain.controller.mpi import v2_objects as objects
from kubetrain.controller.mpi import v2_podgroup as podgroup
from kubetrain.controller.mpi.common import BATCH_JOB, POD, SECRET, Sync, as_dict, controller_ref, data_differ
from kubetrain.controller.mpi.conditions import set_condition
from kubetrain.controller.mpi.ssh import KeyGen
from kubetrain.controller.mpi.v2_status import StatusInputs, job_finished, update_status
from kubetrain.controller.names import (
    JsonDict,
    controller_of,
    is_controlled_by,
    labels_of,
    name_of,
    object_ref,
)
from kubetrain.controller.plan import CreateObject, DeleteObject, Observed, PatchObject, Plan
from kubetrain.controller.pods import phase
from kubetrain.controller.status import changed_status
from kubetrain.kube.timefmt import format_time

METRIC_CREATED = "mpi_operator_jobs_created_total"


def exists_message(name: str, kind: str) -> str:
    return f'Resource "{name}" already exists and is not managed by MPIJob'


def plan_v2(
    job: TrainingJob, observed: Observed, now: datetime, config: ControllerConfig, keygen: KeyGen
) -> Plan:
    spec = v2_spec(job)
    manager = spec.run_policy.managed_by if spec.run_policy is not None else None
    if manager is not None and manager != MPI_OPERATOR_CONTROLLER:
        return Plan()  # e.g. MultiKueue: not even a condition
    if job.metadata.get("deletionTimestamp"):
        return Plan()
    owner = controller_ref(MPIJOB_V2BETA1.api_version, "MPIJob", job.name, job.uid)
    sync = Sync(observed, job.uid, job.namespace, owner, exists_message)
    defaulted = default_v2(job)
    errors = validate_v2(defaulted)
    if errors:
        sync.event("Warning", "ValidationError", validation_event_message(errors))
        return sync.plan
    status = job.status if job.status is not None else JobStatus()
    before = encode(status)
    _run(sync, objects.V2Job(job.name, job.namespace, v2_spec(defaulted), config), status, job, now, keygen)
    sync.plan.status = changed_status(before, status)
    return sync.plan


def _run(
    sync: Sync, job: objects.V2Job, status: JobStatus, raw: TrainingJob, now: datetime, keygen: KeyGen
) -> None:
    stamp = format_time(now)
    key = f"{job.namespace}/{job.name}"
    if not status.conditions:
        set_condition(status, COND_CREATED, TRUE, "MPIJobCreated", f"MPIJob {key} is created.", stamp)
        sync.event("Normal", "MPIJobCreated", f"MPIJob {key} is created.")
        sync.metric(METRIC_CREATED)
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
    sync: Sync, job: objects.V2Job, workers: list[JsonDict | None], suspended: bool
) -> JsonDict | None:
    """Create the launcher Job when the policy allows it now; returns the created manifest."""
    if sync.blocked or not _may_create_launcher(job, workers):
        return None
    obj, warned = objects.launcher_job(sync, job, suspended)
    if warned:
        sync.event("Warning", objects.SET_RESTART_POLICY, objects.RESTART_POLICY_OVERRIDDEN)
    sync.plan.actions.append(CreateObject(obj))
    return obj


def _ensure_shared_objects(sync: Sync, job: objects.V2Job, keygen: KeyGen) -> None:
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


def _worker_pods(sync: Sync, job: objects.V2Job) -> list[JsonDict]:
    prefix = f"{job.name}-worker-"
    return [
        p
        for p in sync.objects(POD)
        if is_controlled_by(p, sync.uid)
        and name_of(p).startswith(prefix)
        and name_of(p)[len(prefix) :].isdigit()
    ]


def _reconcile_workers(sync: Sync, job: objects.V2Job) -> list[JsonDict | None]:
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


def _sync_launcher_suspension(sync: Sync, job: objects.V2Job, launcher: JsonDict, suspended: bool) -> None:
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


def _clean_up_workers(sync: Sync, job: objects.V2Job, status: JobStatus, clean: str | None) -> None:
    """Delete worker pods (policy Running keeps pods that are neither Running nor Pending), the
    PodGroup, and reset the Worker replica status (mpi-operator's `cleanUpWorkerPods`)."""
    for pod in _worker_pods(sync, job):
        if clean == CLEAN_POD_RUNNING and phase(pod) not in ("Running", "Pending"):
            continue
        if not pod.get("metadata", {}).get("deletionTimestamp"):
            sync.plan.actions.append(DeleteObject(object_ref(pod)))
    podgroup.delete_pod_group(sync, job)
    status.replica_statuses[WORKER] = ReplicaStatus()


def _launcher_pods(sync: Sync, job: objects.V2Job, launcher: JsonDict | None) -> list[JsonDict]:
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
