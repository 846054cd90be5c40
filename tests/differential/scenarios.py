"""The jobs both operators run: the same YAML, unchanged but for its namespace and, for an example
whose program is a file beside it, each container's `workingDir` (on a real node it is in the
image; the cluster tier does the same)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.integration.operator_process.procs import REPO

JsonDict = dict[str, Any]
HERE = Path(__file__).parent
EXAMPLES = REPO / "examples" / "local"

SCENARIOS: dict[str, Path] = {
    "tfjob-ps-worker-chief": HERE / "jobs" / "tfjob-ps-worker-chief.yaml",
    "pytorch-ddp-digits": EXAMPLES / "pytorch-ddp-digits" / "job.yaml",
    "mpi-v2beta1-allreduce": EXAMPLES / "mpi-v2beta1-allreduce" / "job.yaml",
}
UPSTREAM: dict[str, str] = {"mpi-v2beta1-allreduce": "mpi-operator"}
"""The upstream operator of a scenario, when not training-operator."""


def upstream_of(scenario: str) -> str:
    return UPSTREAM.get(scenario, "training-operator")


def manifest(scenario: str, namespace: str) -> JsonDict:
    path = SCENARIOS[scenario]
    job: JsonDict = yaml.safe_load(path.read_text())
    job["metadata"]["namespace"] = namespace
    if path.parent != HERE / "jobs":
        for spec in next(v for k, v in job["spec"].items() if k.endswith("ReplicaSpecs")).values():
            for container in spec["template"]["spec"]["containers"]:
                container["workingDir"] = str(path.parent)
    return job
