"""The jobs both operators run: the same YAML, unchanged but for its namespace and, for an example
whose program is a file beside it, each container's `workingDir` (on a real node it is in the
image; the cluster tier does the same).

A scenario says which upstream operator serves it, which env upstream injects into its pods (the
comparison must have seen it), and how its run ends: most finish with every pod ended; a
cleanPodPolicy None job leaves pods running; a suspended job is resumed by the tier; a job managed
by another controller is watched for a while; a TTL job is also waited for until it is deleted.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

import yaml

from tests.integration.operator_process.procs import REPO

JsonDict = dict[str, Any]
HERE = Path(__file__).parent
JOBS = HERE / "jobs"
EXAMPLES = REPO / "examples" / "local"


class End(Enum):
    """When a scenario's run is over and its view is taken."""

    PODS_ENDED = "finished, every pod ended"
    PODS_MAY_RUN = "finished, pods left as the clean policy says (some may still run)"
    IGNORED = "a while after creation (the operator must not touch the job)"
    DELETED = "finished, then deleted by its TTL"
    CREATED = "its pods and children created (they stay Pending: no gang scheduler runs)"


@dataclass(frozen=True)
class Scenario:
    path: Path
    injected: tuple[str, ...] = ()
    """Env upstream injects into every pod of the scenario."""
    upstream: str = "training-operator"
    end: End = End.PODS_ENDED
    resume: bool = False
    """Created suspended: resumed (`runPolicy.suspend: false`) once the Suspended condition is True."""
    gang: bool = False
    """Run in the gang phase: both operators with `--gang-scheduler-name` and the PodGroup CRD."""


PYTORCH_ENV = ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "PYTHONUNBUFFERED")
WORKERS_ENV = ("PET_NNODES", "PET_NPROC_PER_NODE", "PYTHONUNBUFFERED")
"""A PyTorchJob of Workers only: no Master, so upstream sets no MASTER_ADDR/PORT, RANK or WORLD_SIZE."""

SCENARIOS: dict[str, Scenario] = {
    # Every kind.
    "tfjob-ps-worker-chief-evaluator": Scenario(JOBS / "tfjob-ps-worker-chief.yaml", ("TF_CONFIG",)),
    "pytorch-ddp-digits": Scenario(EXAMPLES / "pytorch-ddp-digits" / "job.yaml", PYTORCH_ENV),
    "pytorch-elastic": Scenario(JOBS / "pytorch-elastic.yaml", ("PET_NNODES", "PET_RDZV_ENDPOINT")),
    "xgboost-iris": Scenario(EXAMPLES / "xgboost-iris" / "job.yaml", ("MASTER_ADDR", "WORLD_SIZE", "RANK")),
    "paddle-collective": Scenario(
        EXAMPLES / "paddle-collective" / "job.yaml", ("PADDLE_MASTER", "PADDLE_NNODES")
    ),
    "paddle-ps": Scenario(JOBS / "paddle-ps.yaml", ("PADDLE_MASTER", "PADDLE_NNODES", "PADDLE_JOB_ID")),
    "jax-multiprocess": Scenario(
        EXAMPLES / "jax-multiprocess" / "job.yaml", ("COORDINATOR_ADDRESS", "NUM_PROCESSES", "PROCESS_ID")
    ),
    "mpi-v1-allreduce": Scenario(EXAMPLES / "mpi-v1-allreduce" / "job.yaml"),
    "mpi-v2beta1-allreduce": Scenario(
        EXAMPLES / "mpi-v2beta1-allreduce" / "job.yaml",
        ("K_MPI_JOB_ROLE",),  # the hostfile env is the launcher's only
        upstream="mpi-operator",
    ),
    # The policies.
    "restart-onfailure": Scenario(EXAMPLES / "restart-onfailure" / "job.yaml", WORKERS_ENV),
    "exitcode-retryable": Scenario(JOBS / "exitcode-retryable.yaml", WORKERS_ENV),
    "exitcode-permanent-clean-running": Scenario(JOBS / "exitcode-permanent.yaml", WORKERS_ENV),
    "backoff-limit-clean-none": Scenario(
        EXAMPLES / "backoff-exceeded" / "job.yaml", WORKERS_ENV, end=End.PODS_MAY_RUN
    ),
    "backoff-limit-clean-all": Scenario(EXAMPLES / "backoff-exceeded" / "job-clean-all.yaml", WORKERS_ENV),
    "active-deadline": Scenario(JOBS / "active-deadline.yaml", WORKERS_ENV),
    "ttl-after-finished": Scenario(JOBS / "ttl-after-finished.yaml", WORKERS_ENV, end=End.DELETED),
    "suspend-resume": Scenario(JOBS / "suspend-resume.yaml", WORKERS_ENV, resume=True),
    "managed-by": Scenario(JOBS / "managed-by.yaml", end=End.IGNORED),
    "gang-podgroup": Scenario(JOBS / "gang-podgroup.yaml", PYTORCH_ENV, end=End.CREATED, gang=True),
}


def of_upstream(name: str, *, gang: bool = False) -> list[str]:
    """The scenarios upstream's `name` operator serves, in its gang phase or not."""
    return [s for s, scenario in SCENARIOS.items() if scenario.upstream == name and scenario.gang == gang]


def of_phase(*, gang: bool) -> list[str]:
    """Every scenario of kubetrain's gang phase or other phase."""
    return [s for s, scenario in SCENARIOS.items() if scenario.gang == gang]


def manifest(scenario: str, namespace: str) -> JsonDict:
    path = SCENARIOS[scenario].path
    job: JsonDict = yaml.safe_load(path.read_text())
    job["metadata"]["namespace"] = namespace
    if path.parent != JOBS:
        for spec in next(v for k, v in job["spec"].items() if k.endswith("ReplicaSpecs")).values():
            for container in spec["template"]["spec"]["containers"]:
                container["workingDir"] = str(path.parent)
    return job
