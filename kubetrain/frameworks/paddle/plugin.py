"""PaddleJob: PADDLE_* env for collective and parameter-server modes.

Upstream's: docs/upstream-behaviour.md#paddlejob.
"""

from __future__ import annotations

from typing import ClassVar

from kubetrain.api.kinds import KindInfo
from kubetrain.api.types import TrainingJob
from kubetrain.frameworks._env import (
    JsonDict,
    append_env_all,
    canonical,
    default_port,
    env,
    replica_name,
    total_replicas,
)
from kubetrain.frameworks._status import PyTorchLikeStatus
from kubetrain.frameworks.base import FrameworkSettings
from kubetrain.frameworks.paddle.wire import PADDLEJOB

POD_IP_DUMMY = "POD_IP_DUMMY"


def _pod_ip_dummy() -> JsonDict:
    """The pod's own IP through the downward API; PADDLE_MASTER references it as $(POD_IP_DUMMY)."""
    return {"name": POD_IP_DUMMY, "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}


def paddle_env(job: TrainingJob, rtype: str, index: int) -> list[JsonDict]:
    """Env of pod (rtype, index): the rendezvous pod advertises its own IP, others dial it by name.

    Collective mode (no Master) rendezvous at worker-0, PS mode at master-0; the port is the
    `master` port of that type's `paddle` container, else 36543.
    """
    out = [
        env("PYTHONUNBUFFERED", "1"),
        env("PADDLE_JOB_ID", job.name),
        env("PADDLE_NNODES", str(total_replicas(job))),
    ]
    ps_mode = job.replica_specs.get("Master") is not None
    host_type = "Master" if ps_mode else "Worker"
    port = default_port(PADDLEJOB, job.replica_specs.get(host_type))
    if port is None:
        port = PADDLEJOB.default_port
    if index == 0 and (not ps_mode or rtype == "Master"):
        out += [_pod_ip_dummy(), env("PADDLE_MASTER", f"$({POD_IP_DUMMY}):{port}")]
    else:
        out.append(env("PADDLE_MASTER", f"{replica_name(job.name, host_type, 0)}:{port}"))
    if ps_mode:
        out.append(env("PADDLE_SERVER_NUM", "1") if rtype == "Master" else env("PADDLE_TRAINER_NUM", "1"))
    return out


class Paddle(PyTorchLikeStatus):
    """PaddleJob plugin (status rule shared with PyTorch, without the elastic shortcut)."""

    info: ClassVar[KindInfo] = PADDLEJOB
    sets_replica_selector: ClassVar[bool] = True

    def is_master_role(self, job: TrainingJob, rtype: str, index: int) -> bool:
        return canonical(PADDLEJOB, rtype) == "Master"

    def set_cluster_spec(
        self, job: TrainingJob, pod: JsonDict, rtype: str, index: int, settings: FrameworkSettings
    ) -> None:
        append_env_all(pod, paddle_env(job, canonical(PADDLEJOB, rtype), index))

    def desired_children(self, job: TrainingJob, settings: FrameworkSettings) -> list[JsonDict]:
        return []


PADDLE = Paddle()
