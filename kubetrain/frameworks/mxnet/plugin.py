"""MXJob (training-operator <= 1.8): MX_CONFIG and the DMLC_* parameter-server env.

Upstream's: docs/upstream-behaviour.md#mxjob.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, ClassVar

from kubetrain.api.kinds import RESTART_EXIT_CODE, KindInfo
from kubetrain.api.types import ReplicaSpec, TrainingJob
from kubetrain.frameworks._env import (
    JsonDict,
    append_env_all,
    canonical,
    default_port,
    env,
    go_json,
    replica_name,
)
from kubetrain.frameworks._status import StatusRun, counts, ordered_specs
from kubetrain.frameworks.base import FrameworkSettings, StatusContext, TopologyError
from kubetrain.frameworks.mxnet.wire import MXJOB

TUNER_SERVER_KEY = "tuner-server-key"
"""Template annotation copied into MX_CONFIG `labels` (TVM auto-tuning)."""
PORT_NOT_FOUND = "failed to found the port"

_Types = tuple[tuple[str, int, int, str], ...]


def _tuner_label(spec: ReplicaSpec) -> str:
    metadata = (spec.template or {}).get("metadata") or {}
    return str((metadata.get("annotations") or {}).get(TUNER_SERVER_KEY, ""))


@lru_cache(maxsize=256)
def _cluster(job_name: str, types: _Types) -> tuple[str, dict[str, Any]]:
    """The job-wide head of MX_CONFIG (`{"cluster":...,"labels":...`) and the DMLC_* values."""
    ordered = sorted(types)
    cluster = {
        rt: [{"url": replica_name(job_name, rt, i), "port": port} for i in range(count)]
        for rt, count, port, _ in ordered
    }
    labels = {rt: label for rt, _, _, label in ordered}
    head = go_json({"cluster": cluster, "labels": labels})[:-1]
    scheduler = cluster.get("scheduler") or [{"url": "", "port": 0}]
    dmlc = {
        "DMLC_PS_ROOT_PORT": str(scheduler[0]["port"]),
        "DMLC_PS_ROOT_URI": scheduler[0]["url"],
        "DMLC_NUM_SERVER": str(len(cluster.get("server", []))),
        "DMLC_NUM_WORKER": str(len(cluster.get("worker", []))),
    }
    return head, dmlc


def _types(job: TrainingJob) -> _Types:
    out = []
    for rtype, spec in job.replica_specs.items():
        if spec is None:
            continue
        port = default_port(MXJOB, spec)
        if port is None:
            raise TopologyError(PORT_NOT_FOUND)
        out.append((rtype.lower(), spec.replicas or 0, port, _tuner_label(spec)))
    return tuple(out)


def _with_task(head: str, rt: str, index: int) -> str:
    return f'{head},"task":{go_json({"type": rt, "index": index})}}}'


def mx_config(job: TrainingJob, rtype: str, index: int) -> str:
    """MX_CONFIG for one task: Go key order `cluster`, `labels`, `task`; map keys sorted."""
    head, _ = _cluster(job.name, _types(job))
    return _with_task(head, rtype.lower(), index)


def mxnet_env(job: TrainingJob, rtype: str, index: int) -> list[JsonDict]:
    """MX_CONFIG, then the DMLC_* values derived from it; workers also get DMLC_WORKER_ID (BytePS)."""
    rt = rtype.lower()
    head, dmlc = _cluster(job.name, _types(job))
    out = [env("MX_CONFIG", _with_task(head, rt, index))]
    out += [env(name, value) for name, value in dmlc.items()]
    out += [env("DMLC_ROLE", rt), env("DMLC_USE_KUBERNETES", "1")]
    if rt == "worker":
        out.append(env("DMLC_WORKER_ID", str(index)))
    return out


def _decisive_type(job: TrainingJob) -> str | None:
    """The Scheduler decides; a job of a single Worker (no Scheduler/Server) is decided by it."""
    specs = job.replica_specs
    if specs.get("Scheduler") is not None:
        return "Scheduler"
    worker = specs.get("Worker")
    if specs.get("Server") is None and worker is not None and worker.replicas == 1:
        return "Worker"
    return None


class MXNet:
    """MXJob plugin."""

    info: ClassVar[KindInfo] = MXJOB
    sets_replica_selector: ClassVar[bool] = False

    def is_master_role(self, job: TrainingJob, rtype: str, index: int) -> bool:
        """Upstream labels the Server pods (sic), not the Scheduler."""
        return canonical(MXJOB, rtype) == "Server"

    def set_cluster_spec(
        self, job: TrainingJob, pod: JsonDict, rtype: str, index: int, settings: FrameworkSettings
    ) -> None:
        append_env_all(pod, mxnet_env(job, rtype, index))

    def update_status(self, ctx: StatusContext) -> None:
        """Restart/failure messages use a lower-case `mxjob` prefix, as upstream wrote them."""
        job = ctx.job
        run = StatusRun(ctx, MXJOB)
        decisive = _decisive_type(job)
        for rtype, spec in ordered_specs(job, MXJOB.replica_types):
            c = counts(ctx, rtype, spec)
            if rtype == decisive:
                if c.running > 0:
                    run.running(f"MXJob {job.name} is running.")
                if c.expected == 0:
                    run.succeeded(f"MXJob {job.name} is successfully completed.")
                    break
            if c.failed > 0:
                detail = f"{c.failed} {rtype} replica(s) failed."
                if spec.restart_policy == RESTART_EXIT_CODE:
                    run.restarting(f"mxjob {job.name} is restarting because {detail}")
                else:
                    run.failed(f"mxjob {job.name} is failed because {detail}")
        run.finish()

    def desired_children(self, job: TrainingJob, settings: FrameworkSettings) -> list[JsonDict]:
        return []


MXNET = MXNet()
