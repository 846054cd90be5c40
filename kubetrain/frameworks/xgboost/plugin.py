"""XGBoostJob: Rabit tracker / LightGBM env and the master-decides status rule.

Upstream's: docs/upstream-behaviour.md#xgboostjob.
"""

from __future__ import annotations

from functools import lru_cache
from typing import ClassVar

from kubetrain.api.kinds import RESTART_EXIT_CODE, KindInfo
from kubetrain.api.types import TrainingJob
from kubetrain.frameworks._env import (
    JsonDict,
    append_env_all,
    canonical,
    default_port,
    env,
    replica_name,
    replicas_of,
    total_replicas,
)
from kubetrain.frameworks._status import StatusRun, counts, ordered_specs
from kubetrain.frameworks.base import FrameworkSettings, StatusContext, TopologyError
from kubetrain.frameworks.xgboost.wire import XGBOOSTJOB

PORT_NOT_FOUND = "failed to found the port"
"""Upstream's message (sic)."""


@lru_cache(maxsize=256)
def _worker_addrs(job_name: str, total: int) -> str:
    """`<job>-worker-0,...` with total-1 names (upstream counts the master into `total`)."""
    return ",".join(replica_name(job_name, "worker", i) for i in range(total - 1))


def _port(job: TrainingJob, rtype: str) -> int:
    port = default_port(XGBOOSTJOB, job.replica_specs.get(rtype))
    if port is None:
        raise TopologyError(PORT_NOT_FOUND)
    return port


def xgboost_env(job: TrainingJob, rtype: str, index: int) -> list[JsonDict]:
    """Env of pod (rtype, index); workers' RANK is offset by the Master replicas."""
    rank = index
    if rtype == "Worker":
        rank += replicas_of(job.replica_specs.get("Master"))
    total = total_replicas(job)
    out = [
        env("MASTER_PORT", str(_port(job, "Master"))),
        env("MASTER_ADDR", replica_name(job.name, "master", 0)),
        env("WORLD_SIZE", str(total)),
        env("RANK", str(rank)),
        env("PYTHONUNBUFFERED", "1"),
    ]
    if total > 1:  # LightGBM reads these
        out.append(env("WORKER_PORT", str(_port(job, "Worker"))))
        out.append(env("WORKER_ADDRS", _worker_addrs(job.name, total)))
    return out


class XGBoost:
    """XGBoostJob plugin."""

    info: ClassVar[KindInfo] = XGBOOSTJOB
    sets_replica_selector: ClassVar[bool] = False

    def is_master_role(self, job: TrainingJob, rtype: str, index: int) -> bool:
        return canonical(XGBOOSTJOB, rtype) == "Master"

    def set_cluster_spec(
        self, job: TrainingJob, pod: JsonDict, rtype: str, index: int, settings: FrameworkSettings
    ) -> None:
        append_env_all(pod, xgboost_env(job, canonical(XGBOOSTJOB, rtype), index))

    def update_status(self, ctx: StatusContext) -> None:
        """The Master decides; any failed replica fails the job unless its policy is ExitCode.

        A running Master sets Running=True (so a resumed job runs again). On success and failure
        upstream first adds Running only when no Running condition exists yet (of any status), so
        they are always preceded by Running (then flipped to False). A failure
        under OnFailure/Always also fails the job (docs/upstream-behaviour.md#quirks-kept):
        reproduced, since users rely on XGBoost jobs failing fast.
        """
        job = ctx.job
        run = StatusRun(ctx, XGBOOSTJOB)
        running_msg = f"XGBoostJob {job.name} is running."
        for rtype, spec in ordered_specs(job, XGBOOSTJOB.replica_types):
            c = counts(ctx, rtype, spec)
            if rtype == "Master":
                if c.running > 0:
                    run.running(running_msg)
                if c.expected == 0:
                    run.running_if_absent(running_msg)
                    run.succeeded(f"XGBoostJob {job.name} is successfully completed.")
                    break
            if c.failed > 0:
                run.running_if_absent(running_msg)
                detail = f"{c.failed} {rtype} replica(s) failed."
                if spec.restart_policy == RESTART_EXIT_CODE:
                    run.restarting(f"XGBoostJob {job.name} is restarting because {detail}")
                else:
                    run.failed(f"XGBoostJob {job.name} is failed because {detail}")
        run.finish()

    def desired_children(self, job: TrainingJob, settings: FrameworkSettings) -> list[JsonDict]:
        return []


XGBOOST = XGBoost()
