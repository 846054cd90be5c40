"""Every scenario (every kind, and the run policies) through upstream's training-operator v1.9.2 (or
mpi-operator v0.8.0 for MPIJob v2beta1) and through `kubetrain operator`, on one real control plane
and one `kubetrain node`: the pods (names, labels, annotations, ownerReferences, env such as
TF_CONFIG / MASTER_ADDR / RANK / WORLD_SIZE, ports, restartPolicy, the whole spec), the children
the job owns, its condition transitions, final conditions, replicaStatuses and Events must be the
same, or differ only as `deliberate.DELIBERATE` lists (each naming the upstream issue it fixes)."""

from __future__ import annotations

import pytest

from tests.differential import compare, deliberate, scenarios
from tests.differential.conftest import Runs


@pytest.mark.parametrize("scenario", list(scenarios.SCENARIOS))
def test_same_objects_and_status(differential: Runs, scenario: str) -> None:
    theirs, mine = differential.upstream[scenario], differential.kubetrain[scenario]
    assert not theirs.error, f"upstream's run: {theirs.error} (log: {theirs.logs}){theirs.logs_tail()}"
    assert not mine.error, f"kubetrain's run: {mine.error} (log: {mine.logs}){mine.logs_tail()}"
    upstream, ours, recorded = theirs.view, mine.view, theirs.events_recorded
    pods = {p.split(".")[1] for p in upstream if p.startswith("Pod.")}
    created = [p for p in upstream if p.startswith("job.events.Normal.SuccessfulCreatePod.")]
    if scenarios.SCENARIOS[scenario].end is not scenarios.End.IGNORED:
        assert pods or created, f"upstream created no pods: {upstream}"
    for pod in pods:
        paths = [p for p in upstream if p.startswith(f"Pod.{pod}.") and ".env[" in p]
        env = {p.split(".env[")[1].split("]")[0] for p in paths}
        assert set(scenarios.SCENARIOS[scenario].injected) <= env, f"{pod}: {sorted(env)}"
    unexplained = [
        f"{path}: upstream {theirs!r}, kubetrain {mine!r}"
        for path, theirs, mine in compare.differences(upstream, ours)
        if deliberate.explained(path, theirs, mine, compare.MISSING, scenario, recorded) is None
    ]
    assert not unexplained, "\n".join(unexplained) + theirs.logs_tail(2000) + mine.logs_tail()
