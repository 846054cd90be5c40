"""A minimal batch/v1 Job controller for the embedded plane (the MPIJob v2beta1 launcher is a Job).

On a cluster kube-controller-manager turns a Job into pods; the embedded plane has no controller
manager, so this one does, through the Kubernetes API only (like the node agent and the binder,
it could run against any API server). It covers what MPI launchers and simple batch use need:

* pods from ``spec.template`` named ``<job>-<random>``, labelled ``batch.kubernetes.io/job-name``,
  ``batch.kubernetes.io/controller-uid``, ``job-name`` and ``controller-uid``, with a controller
  ownerReference to the Job; ``parallelism`` (default 1) and ``completions`` (unset: the first
  success completes the Job, as for a non-indexed Job without completions);
* ``backoffLimit`` (default 6): the Job fails when failed pods exceed it, or, for
  ``restartPolicy: OnFailure`` pods, when their container restarts reach it (the kubelet restarts
  in place); a failed pod is replaced after an exponential delay (``backoff_base`` doubled per
  failure, capped), and with ``podReplacementPolicy: Failed`` only once no pod is terminating;
* ``suspend`` (active pods deleted, ``Suspended`` condition; on resume ``startTime`` restarts),
  ``activeDeadlineSeconds`` (``DeadlineExceeded``) and ``ttlSecondsAfterFinished`` (the Job is
  deleted, its pods with it, in the background);
* status: ``active``, ``ready``, ``succeeded``, ``failed``, ``startTime``, ``completionTime`` and
  the ``Complete`` / ``Failed`` conditions with Kubernetes' reasons and messages, each after the
  interim ``SuccessCriteriaMet`` / ``FailureTarget`` condition that Kubernetes (1.31+) adds first;
  both land in one write here, since this controller deletes the remaining pods at once.

* ``completionMode: Indexed`` (what JobSet's Jobs use): one pod per index ``0..completions-1``,
  named ``<job>-<index>-<random>``, with hostname ``<job>-<index>``, the
  ``batch.kubernetes.io/job-completion-index`` annotation and label, and ``JOB_COMPLETION_INDEX``
  from that label in every container (as kube-controller-manager's ``indexed_job_utils.go``); the
  Job completes when every index has a succeeded pod (``status.completedIndexes``), a failed
  index gets a new pod with the same index.

Not covered (documented): pod failure and success policies, backoffLimitPerIndex,
finalizer-based pod tracking
(``status.failed`` is the most failed pods ever seen at once, kept monotonic), managedBy.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import time
from dataclasses import dataclass
from typing import Any

from kubetrain.embedded.keyedloop import KeyedLoop, controller_keys
from kubetrain.kube.client import KubeAPI, core_path, group_path
from kubetrain.kube.errors import ApiError
from kubetrain.kube.events import core_event, object_reference
from kubetrain.kube.informer import object_key
from kubetrain.kube.timefmt import format_time, parse_epoch

log = logging.getLogger(__name__)

JsonDict = dict[str, Any]

JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid"
LEGACY_JOB_NAME_LABEL = "job-name"
LEGACY_CONTROLLER_UID_LABEL = "controller-uid"
COMPLETION_INDEX_KEY = "batch.kubernetes.io/job-completion-index"
COMPLETION_INDEX_ENV = "JOB_COMPLETION_INDEX"
MAX_GENERATED_NAME_LENGTH = 58  # 63 minus the 5 random characters
DEFAULT_BACKOFF_LIMIT = 6
BACKOFF_LIMIT_MESSAGE = "Job has reached the specified backoff limit"
DEADLINE_MESSAGE = "Job was active longer than specified deadline"
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # the API server's generateName alphabet


def _jobs_path(namespace: str | None = None, name: str | None = None, sub: str | None = None) -> str:
    return group_path("batch", "v1", "jobs", namespace, name, sub)


def _condition(status: JsonDict, kind: str) -> JsonDict | None:
    return next((c for c in status.get("conditions") or [] if c.get("type") == kind), None)


def _is_true(status: JsonDict, kind: str) -> bool:
    cond = _condition(status, kind)
    return cond is not None and cond.get("status") == "True"


INTERIM = {"Complete": "SuccessCriteriaMet", "Failed": "FailureTarget"}
"""The condition Kubernetes sets before each terminal one, with the same reason and message."""


def _set_condition(status: JsonDict, kind: str, value: str, reason: str, message: str, now: str) -> None:
    conditions: list[JsonDict] = list(status.get("conditions") or [])
    for cond in conditions:
        if cond.get("type") == kind:
            if cond.get("status") != value:
                cond["lastTransitionTime"] = now
            cond.update({"status": value, "reason": reason, "message": message, "lastProbeTime": now})
            break
    else:
        conditions.append(
            {
                "type": kind,
                "status": value,
                "reason": reason,
                "message": message,
                "lastProbeTime": now,
                "lastTransitionTime": now,
            }
        )
    status["conditions"] = conditions


def _is_job(ref: JsonDict) -> bool:
    return ref.get("kind") == "Job" and str(ref.get("apiVersion", "")).startswith("batch/")


def _owned_by(pod: JsonDict, uid: str) -> bool:
    refs = (pod.get("metadata") or {}).get("ownerReferences") or []
    return any(r.get("controller") and r.get("uid") == uid for r in refs)


def _restarts(pod: JsonDict) -> int:
    status = pod.get("status") or {}
    return sum(
        int(c.get("restartCount") or 0)
        for c in [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]
    )


def _ready(pod: JsonDict) -> bool:
    return _is_true(pod.get("status") or {}, "Ready")


def _indexed(job: JsonDict) -> bool:
    return (job.get("spec") or {}).get("completionMode") == "Indexed"


def _pod_index(pod: JsonDict) -> int | None:
    meta = pod.get("metadata") or {}
    raw = (meta.get("annotations") or {}).get(COMPLETION_INDEX_KEY)
    if raw is None:
        raw = (meta.get("labels") or {}).get(COMPLETION_INDEX_KEY)
    try:
        return int(raw) if raw is not None else None
    except ValueError:
        return None


def succeeded_indexes(pods: list[JsonDict], completions: int) -> set[int]:
    """The indexes in ``0..completions-1`` that have a succeeded pod."""
    out: set[int] = set()
    for pod in pods:
        index = _pod_index(pod)
        succeeded = (pod.get("status") or {}).get("phase") == "Succeeded"
        if succeeded and index is not None and 0 <= index < completions:
            out.add(index)
    return out


def format_indexes(indexes: set[int]) -> str:
    """Kubernetes' interval form of ``completedIndexes``: ``1,3-5,7``."""
    parts: list[str] = []
    ordered = sorted(indexes)
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(parts)


def pod_generate_name_with_index(job_name: str, index: int) -> str:
    """``podGenerateNameWithIndex``: ``<job>-<index>-``, the job name cut so the prefix fits."""
    append = f"-{index}-"
    prefix = job_name + append
    if len(prefix) > MAX_GENERATED_NAME_LENGTH:
        prefix = prefix[: MAX_GENERATED_NAME_LENGTH - len(append)] + append
    return prefix


def _with_completion_index_env(containers: list[JsonDict]) -> list[JsonDict]:
    out = []
    for container in containers:
        env = list(container.get("env") or [])
        if not any(e.get("name") == COMPLETION_INDEX_ENV for e in env):
            path = f"metadata.labels['{COMPLETION_INDEX_KEY}']"
            env.append({"name": COMPLETION_INDEX_ENV, "valueFrom": {"fieldRef": {"fieldPath": path}}})
        out.append({**container, "env": env})
    return out


@dataclass
class _Memory:
    """What the controller remembers per Job uid between syncs (the exponential back-off)."""

    failed_seen: int = 0
    next_create: float = 0.0


@dataclass
class _Pods:
    active: list[JsonDict]
    terminating: list[JsonDict]
    succeeded: int
    failed: int


def _classify(pods: list[JsonDict]) -> _Pods:
    out = _Pods([], [], 0, 0)
    for pod in pods:
        phase = (pod.get("status") or {}).get("phase")
        if phase == "Succeeded":
            out.succeeded += 1
        elif phase == "Failed":
            out.failed += 1
        elif (pod.get("metadata") or {}).get("deletionTimestamp"):
            out.terminating.append(pod)
        else:
            out.active.append(pod)
    return out


class JobController:
    """``await controller.start()``; it then keeps batch/v1 Jobs and their pods in step."""

    def __init__(self, api: KubeAPI, *, backoff_base: float = 1.0, backoff_cap: float = 60.0) -> None:
        self.api = api
        self.backoff_base = backoff_base
        self.backoff_cap = backoff_cap
        self._queue = KeyedLoop("embedded job controller", "job", self._sync, log=log, coalesce=False)
        self._jobs = self._queue.watch(api, _jobs_path(), self._job_keys, primary=True)
        self._pods = self._queue.watch(api, core_path("pods"), self._pod_keys)
        self._memory: dict[str, _Memory] = {}

    async def start(self) -> None:
        await self._queue.start()

    async def stop(self) -> None:
        await self._queue.stop()

    # -- watches -------------------------------------------------------------------------------------

    def _job_keys(self, kind: str, job: JsonDict) -> list[str]:
        if kind == "DELETED":
            self._memory.pop((job.get("metadata") or {}).get("uid", ""), None)
            self._queue.forget(object_key(job))
            return []
        return [object_key(job)]

    @staticmethod
    def _pod_keys(kind: str, pod: JsonDict) -> list[str]:
        return controller_keys(pod, _is_job)

    # -- sync -------------------------------------------------------------------------------------------

    async def _sync(self, job: JsonDict) -> None:
        meta, spec = job.get("metadata") or {}, job.get("spec") or {}
        if meta.get("deletionTimestamp"):
            return
        key, uid = object_key(job), meta.get("uid", "")
        status: JsonDict = dict(job.get("status") or {})
        before = dict(status)
        now = time.time()
        if _is_true(status, "Complete") or _is_true(status, "Failed"):
            await self._expire(job, status, now)
            return
        pods = [p for p in self._pods.items.values() if _owned_by(p, uid)]
        seen = _classify(pods)
        failed = max(int(status.get("failed") or 0), seen.failed)
        memory = self._memory.setdefault(uid, _Memory())
        if failed > memory.failed_seen:
            delay = min(self.backoff_base * 2 ** (failed - 1), self.backoff_cap)
            memory.next_create = now + delay
            memory.failed_seen = failed
        status.update({"failed": failed, "succeeded": seen.succeeded})
        if _indexed(job):
            done = succeeded_indexes(pods, int(spec.get("completions") or 0))
            status["succeeded"] = len(done)
            if done:
                status["completedIndexes"] = format_indexes(done)
        stamp = format_time(now)

        if spec.get("suspend"):
            await self._delete_pods(seen.active, job)
            if not _is_true(status, "Suspended"):
                _set_condition(status, "Suspended", "True", "JobSuspended", "Job suspended", stamp)
                self._event(job, "Normal", "Suspended", "Job suspended")
            status.pop("startTime", None)
            status.update({"active": 0, "ready": 0})
            await self._write(job, before, status)
            return
        if _condition(status, "Suspended") is not None and _is_true(status, "Suspended"):
            _set_condition(status, "Suspended", "False", "JobResumed", "Job resumed", stamp)
            self._event(job, "Normal", "Resumed", "Job resumed")
        status.setdefault("startTime", stamp)

        verdict = self._verdict(job, status, seen, failed, now)
        if verdict is not None:
            kind, reason, message = verdict
            await self._delete_pods(seen.active, job)
            _set_condition(status, INTERIM[kind], "True", reason, message, stamp)
            _set_condition(status, kind, "True", reason, message, stamp)
            if kind == "Complete":
                status["completionTime"] = stamp
                self._event(job, "Normal", "Completed", "Job completed")
            else:
                self._event(job, "Warning", reason, message)
            status.update({"active": 0, "ready": 0})
            await self._write(job, before, status)
            await self._expire(job, status, now)
            return

        active = await self._scale(job, seen, memory, now, pods)
        status.update({"active": active, "ready": sum(1 for p in seen.active if _ready(p))})
        await self._write(job, before, status)
        deadline = spec.get("activeDeadlineSeconds")
        start = parse_epoch(status.get("startTime"))
        if deadline is not None and start is not None:
            self._queue.enqueue_after(key, start + float(deadline) - now + 0.05)

    def _verdict(
        self, job: JsonDict, status: JsonDict, seen: _Pods, failed: int, now: float
    ) -> tuple[str, str, str] | None:
        """("Complete"|"Failed", reason, message) when the Job is finished, else None."""
        spec = job.get("spec") or {}
        completions = spec.get("completions")
        succeeded = int(status.get("succeeded") or 0) if _indexed(job) else seen.succeeded
        if succeeded >= (completions if completions is not None else 1):
            return "Complete", "CompletionsReached", "Reached expected number of succeeded pods"
        limit = spec.get("backoffLimit")
        limit = DEFAULT_BACKOFF_LIMIT if limit is None else int(limit)
        if failed > limit or self._past_limit_on_failure(job, seen.active, limit):
            return "Failed", "BackoffLimitExceeded", BACKOFF_LIMIT_MESSAGE
        deadline = spec.get("activeDeadlineSeconds")
        start = parse_epoch(status.get("startTime"))
        if deadline is not None and start is not None and now - start >= float(deadline):
            return "Failed", "DeadlineExceeded", DEADLINE_MESSAGE
        return None

    @staticmethod
    def _past_limit_on_failure(job: JsonDict, active: list[JsonDict], limit: int) -> bool:
        """OnFailure pods restart in place; their restarts count against the limit (as upstream)."""
        template = ((job.get("spec") or {}).get("template") or {}).get("spec") or {}
        if template.get("restartPolicy") != "OnFailure":
            return False
        restarts = sum(_restarts(p) for p in active)
        return restarts > 0 if limit == 0 else restarts >= limit

    async def _scale(
        self, job: JsonDict, seen: _Pods, memory: _Memory, now: float, pods: list[JsonDict]
    ) -> int:
        """Create the pods still wanted (after the back-off); the number of active pods."""
        spec = job.get("spec") or {}
        raw_parallelism = spec.get("parallelism")
        parallelism = 1 if raw_parallelism is None else int(raw_parallelism)
        completions = spec.get("completions")
        indexes: list[int | None] = []
        if _indexed(job):
            total = int(completions or 0)
            taken = succeeded_indexes(pods, total) | {_pod_index(p) for p in seen.active + seen.terminating}
            pending = [i for i in range(total) if i not in taken]
            indexes = list(pending[: max(parallelism - len(seen.active), 0)])
            wanted = len(seen.active) + len(indexes)
        elif completions is None:
            wanted = parallelism
        else:
            wanted = min(parallelism, int(completions) - seen.succeeded)
        missing = wanted - len(seen.active)
        if spec.get("podReplacementPolicy") == "Failed" and seen.terminating:
            missing = 0  # default TerminatingOrFailed replaces terminating pods at once
        if missing <= 0:
            return len(seen.active)
        if now < memory.next_create:
            self._queue.enqueue_after(object_key(job), memory.next_create - now)
            return len(seen.active)
        for n in range(missing):
            await self._create_pod(job, indexes[n] if n < len(indexes) else None)
        return len(seen.active) + missing

    async def _create_pod(self, job: JsonDict, index: int | None = None) -> None:
        meta = job.get("metadata") or {}
        name, namespace, uid = meta.get("name", ""), meta.get("namespace") or "default", meta.get("uid", "")
        template = (job.get("spec") or {}).get("template") or {}
        tmeta = dict(template.get("metadata") or {})
        labels = {
            **(tmeta.get("labels") or {}),
            CONTROLLER_UID_LABEL: uid,
            JOB_NAME_LABEL: name,
            LEGACY_CONTROLLER_UID_LABEL: uid,
            LEGACY_JOB_NAME_LABEL: name,
        }
        suffix = "".join(secrets.choice(_SUFFIX_ALPHABET) for _ in range(5))
        pod_name = f"{name[:57]}-{suffix}"
        pod_spec = dict(template.get("spec") or {})
        annotations = dict(tmeta.get("annotations") or {})
        if index is not None:
            labels[COMPLETION_INDEX_KEY] = annotations[COMPLETION_INDEX_KEY] = str(index)
            pod_name = pod_generate_name_with_index(name, index) + suffix
            pod_spec["hostname"] = f"{name}-{index}"
            for key in ("initContainers", "containers"):
                if pod_spec.get(key):
                    pod_spec[key] = _with_completion_index_env(pod_spec[key])
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                **{
                    k: v for k, v in tmeta.items() if k not in ("name", "namespace", "uid", "resourceVersion")
                },
                "name": pod_name,
                "namespace": namespace,
                "labels": labels,
                **({"annotations": annotations} if annotations else {}),
                "ownerReferences": [
                    {
                        "apiVersion": "batch/v1",
                        "kind": "Job",
                        "name": name,
                        "uid": uid,
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": pod_spec,
        }
        try:
            await self.api.create(core_path("pods", namespace), pod)
        except ApiError as err:
            self._event(job, "Warning", "FailedCreate", f"Error creating: {err.message}")
            raise
        self._event(job, "Normal", "SuccessfulCreate", f"Created pod: {pod_name}")

    async def _delete_pods(self, pods: list[JsonDict], job: JsonDict) -> None:
        for pod in pods:
            meta = pod.get("metadata") or {}
            with contextlib.suppress(ApiError):
                await self.api.delete(core_path("pods", meta.get("namespace"), meta.get("name")))
                self._event(job, "Normal", "SuccessfulDelete", f"Deleted pod: {meta.get('name')}")

    async def _expire(self, job: JsonDict, status: JsonDict, now: float) -> None:
        """ttlSecondsAfterFinished: delete the finished Job (and, in the background, its pods)."""
        ttl = (job.get("spec") or {}).get("ttlSecondsAfterFinished")
        if ttl is None:
            return
        finished = parse_epoch(status.get("completionTime")) or parse_epoch(
            (_condition(status, "Failed") or _condition(status, "Complete") or {}).get("lastTransitionTime")
        )
        if finished is None:
            return
        meta = job.get("metadata") or {}
        left = finished + float(ttl) - now
        if left > 0:
            self._queue.enqueue_after(object_key(job), left + 0.05)
            return
        body = {
            "apiVersion": "v1",
            "kind": "DeleteOptions",
            "propagationPolicy": "Background",
            "preconditions": {"uid": meta.get("uid")},
        }
        with contextlib.suppress(ApiError):
            await self.api.delete(_jobs_path(meta.get("namespace"), meta.get("name")), body)

    async def _write(self, job: JsonDict, before: JsonDict, status: JsonDict) -> None:
        if status == before:
            return
        meta = job.get("metadata") or {}
        patch = {"status": {**status, **{k: None for k in before if k not in status}}}
        await self.api.merge_patch(_jobs_path(meta.get("namespace"), meta.get("name"), "status"), patch)

    def _event(self, job: JsonDict, kind: str, reason: str, message: str) -> None:
        meta = job.get("metadata") or {}
        involved = object_reference("batch/v1", "Job", meta)
        body = core_event(involved, kind, reason, message, "job-controller", time.time())
        self._queue.spawn(self._post(body))

    async def _post(self, body: JsonDict) -> None:
        with contextlib.suppress(Exception):
            await self.api.create(core_path("events", body["metadata"]["namespace"]), body)
