"""TFJob: TF_CONFIG in the `tensorflow` container and the chief/worker-0 success rules.

Upstream's: docs/upstream-behaviour.md#tfjob.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any, ClassVar

from kubetrain.api.conditions import get_condition
from kubetrain.api.kinds import COND_RESTARTING, LABEL_REPLICA_INDEX, LABEL_REPLICA_TYPE, KindInfo
from kubetrain.api.types import ReplicaSpec, TrainingJob
from kubetrain.frameworks._env import (
    JsonDict,
    append_env,
    canonical,
    default_port,
    env,
    go_json,
    pod_containers,
    replica_name,
)
from kubetrain.frameworks._status import StatusRun, counts, ordered_specs
from kubetrain.frameworks.base import FrameworkSettings, StatusContext, TopologyError
from kubetrain.frameworks.tensorflow.wire import TFJOB, TFJobSpec

TF_CONFIG = "TF_CONFIG"
SUCCESS_POLICY_ALL_WORKERS = "AllWorkers"
STATUS_ORDER = ("Chief", "Evaluator", "Master", "PS", "Worker")
"""Upstream's iteration order in UpdateJobStatus; also the types counted by isDistributed."""
EXIT_CODE_UNKNOWN = 0xBEEF
"""Upstream's sentinel exit code of a container that has not terminated."""

_ClusterKey = tuple[tuple[str, int, int], ...]


@lru_cache(maxsize=256)
def _cluster(name: str, namespace: str, domain: str, types: _ClusterKey) -> tuple[dict[str, list[str]], str]:
    """The `cluster` map (keys sorted, as Go marshals maps) and its JSON; shared read-only.

    Keyed on everything it depends on, so all pods of one job (and later reconciles of an
    unchanged job) reuse one O(replicas) build instead of one per pod.
    """
    suffix = f".{namespace}.svc" + (f".{domain}" if domain else "")
    cluster = {
        rt: [f"{replica_name(name, rt, i)}{suffix}:{port}" for i in range(count)]
        for rt, count, port in sorted(types)
    }
    return cluster, go_json(cluster)


def _tf_spec(job: TrainingJob) -> TFJobSpec:
    return job.spec if isinstance(job.spec, TFJobSpec) else TFJobSpec()


def _has_chief_or_master(job: TrainingJob) -> bool:
    """Upstream's ContainsChiefOrMasterSpec tests key presence."""
    return "Chief" in job.replica_specs or "Master" in job.replica_specs


def is_distributed(job: TrainingJob) -> bool:
    """A job of exactly one replica (over the five known types; unset replicas count 1) is local."""
    total = 0
    for rtype in STATUS_ORDER:
        spec = job.replica_specs.get(rtype)
        if spec is not None:
            total += 1 if spec.replicas is None else spec.replicas
    return total != 1


def _port(spec: ReplicaSpec) -> int:
    """`tfjob-port` on that type's `tensorflow` container; TF alone falls back to 2222."""
    port = default_port(TFJOB, spec)
    return TFJOB.default_port if port is None else port


def cluster_spec(job: TrainingJob, domain: str) -> tuple[dict[str, list[str]], str]:
    """The job's TF cluster: per present type, `<job>-<rt>-<i>.<ns>.svc[.<domain>]:<port>`."""
    types = tuple(
        (rtype.lower(), spec.replicas or 0, _port(spec))
        for rtype, spec in job.replica_specs.items()
        if spec is not None
    )
    return _cluster(job.name, job.namespace, domain, types)


def tf_config(job: TrainingJob, rtype: str, index: int, domain: str = "") -> str:
    """The TF_CONFIG value for one task, byte-identical to upstream's `json.Marshal` output."""
    rt = rtype.lower()
    cluster, cluster_json = cluster_spec(job, domain)
    task = go_json({"type": rt, "index": index})
    if not _tf_spec(job).enable_dynamic_worker:
        return f'{{"cluster":{cluster_json},"task":{task},"environment":"cloud"}}'
    # Sparse form (ClusterSpec propagation): a worker knows itself and all PS, a PS only itself.
    workers: dict[str, str] = {}
    ps: list[str] | None = []
    try:
        if rt == "ps":
            ps = [cluster["ps"][index]]
        elif rt == "worker":
            ps = cluster.get("ps")  # None (JSON null) when the job has no PS, as in Go
            workers = {str(index): cluster["worker"][index]}
    except (KeyError, IndexError) as exc:
        raise TopologyError(f"{rtype} index {index} is outside the TFJob's replicas") from exc
    return go_json({"cluster": {"worker": workers, "ps": ps}, "task": {"type": rt, "index": index}})


def _exit_code(pod: JsonDict, container_name: str) -> int:
    for cs in (pod.get("status") or {}).get("containerStatuses") or []:
        if cs.get("name") == container_name:
            terminated = (cs.get("state") or {}).get("terminated")
            if terminated is not None:
                return int(terminated.get("exitCode", 0))
    return EXIT_CODE_UNKNOWN


def worker0_completed(job: TrainingJob, pods: Sequence[JsonDict]) -> bool:
    """Worker 0 is a single Succeeded pod whose `tensorflow` container exited 0 (IsWorker0Completed)."""
    if "Worker" not in job.replica_specs:
        return True
    candidates = [
        pod
        for pod in pods
        if (labels := (pod.get("metadata") or {}).get("labels") or {}).get(LABEL_REPLICA_TYPE) == "worker"
        and labels.get(LABEL_REPLICA_INDEX) == "0"
    ]
    if len(candidates) != 1:
        return False
    pod = candidates[0]
    succeeded = (pod.get("status") or {}).get("phase") == "Succeeded"
    return succeeded and _exit_code(pod, TFJOB.default_container) == 0


class TensorFlow:
    """TFJob plugin."""

    info: ClassVar[KindInfo] = TFJOB
    sets_replica_selector: ClassVar[bool] = False

    def is_master_role(self, job: TrainingJob, rtype: str, index: int) -> bool:
        rt = canonical(TFJOB, rtype)
        if _has_chief_or_master(job):
            return rt in ("Chief", "Master")
        return rt == "Worker" and index == 0

    def set_cluster_spec(
        self, job: TrainingJob, pod: JsonDict, rtype: str, index: int, settings: FrameworkSettings
    ) -> None:
        """TF_CONFIG goes only into the first `tensorflow` container and only for distributed jobs."""
        if not is_distributed(job):
            return
        for container in pod_containers(pod):
            if container.get("name") == TFJOB.default_container:
                append_env(container, [env(TF_CONFIG, tf_config(job, rtype, index, settings.cluster_domain))])
                return

    def update_status(self, ctx: StatusContext) -> None:
        """Chief/Master decide when present, else Worker (all, or worker 0 by default policy).

        A Restarting condition present when the call begins (usually just set by the pod pass)
        is re-asserted for failed types, since a Running set in between removes it.
        """
        job = ctx.job
        run = StatusRun(ctx, TFJOB)
        previous = get_condition(ctx.status, COND_RESTARTING)
        remembered: tuple[Any, Any] | None = (previous.reason, previous.message) if previous else None
        spec_fields = _tf_spec(job)
        chief_mode = _has_chief_or_master(job)
        worker0 = not chief_mode and worker0_completed(job, ctx.pods)
        all_workers = spec_fields.success_policy == SUCCESS_POLICY_ALL_WORKERS
        key = f"{job.namespace}/{job.name}"
        for rtype, spec in ordered_specs(job, STATUS_ORDER):
            c = counts(ctx, rtype, spec)
            if chief_mode:
                if rtype in ("Chief", "Master"):
                    if c.running > 0:
                        run.running(f"TFJob {key} is running.")
                    if c.expected == 0:
                        run.succeeded(f"TFJob {key} successfully completed.")
            elif rtype == "Worker":
                if c.expected == 0 or (worker0 and not all_workers):
                    run.succeeded(f"TFJob {key} successfully completed.")
                elif c.running > 0:
                    run.running(f"TFJob {key} is running.")
            if c.failed > 0:
                if remembered is not None:
                    run.restarting(remembered[1] or "", remembered[0] or "", event=False)
                elif spec_fields.enable_dynamic_worker and rtype == "Worker":
                    continue
                else:
                    run.failed(f"TFJob {key} has failed because {c.failed} {rtype} replica(s) failed.")
        run.finish()

    def desired_children(self, job: TrainingJob, settings: FrameworkSettings) -> list[JsonDict]:
        return []


TENSORFLOW = TensorFlow()
