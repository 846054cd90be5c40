"""The same TFJob and PyTorchJob through upstream's training-operator v1.9.2, and the same MPIJob
v2beta1 through upstream's mpi-operator v0.8.0, as through `kubetrain operator`, on one real control
plane and one `kubetrain node`: the pods (names, labels, annotations, ownerReferences, env such as
TF_CONFIG / MASTER_ADDR / RANK / WORLD_SIZE, ports, restartPolicy, the whole spec), the Services,
ConfigMaps, Secrets and batch Jobs the job owns, and its final conditions (in order) and
replicaStatuses must be the same, or differ only as `deliberate.DELIBERATE` lists."""

from __future__ import annotations

import pytest

from tests.differential import compare, deliberate, scenarios
from tests.differential.conftest import Runs

INJECTED = {
    "tfjob-ps-worker-chief": ("TF_CONFIG",),
    "pytorch-ddp-digits": ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "PYTHONUNBUFFERED"),
    "mpi-v2beta1-allreduce": ("K_MPI_JOB_ROLE", "OMPI_MCA_orte_default_hostfile"),
}
"""Env upstream injects into every pod of the scenario: the comparison must have seen it."""


@pytest.mark.parametrize("scenario", list(scenarios.SCENARIOS))
def test_same_objects_and_status(differential: Runs, scenario: str) -> None:
    upstream = differential.upstream[scenario].view
    ours = differential.kubetrain[scenario].view
    pods = {p.split(".")[1] for p in upstream if p.startswith("Pod.")}
    assert pods, f"upstream created no pods: {upstream}"
    for pod in pods:
        paths = [p for p in upstream if p.startswith(f"Pod.{pod}.") and ".env[" in p]
        env = {p.split(".env[")[1].split("]")[0] for p in paths}
        assert set(INJECTED[scenario]) <= env, f"{pod}: {sorted(env)}"
    unexplained = [
        f"{path}: upstream {theirs!r}, kubetrain {mine!r}"
        for path, theirs, mine in compare.differences(upstream, ours)
        if deliberate.explained(path, theirs, mine, compare.MISSING) is None
    ]
    assert not unexplained, "\n".join(unexplained)
