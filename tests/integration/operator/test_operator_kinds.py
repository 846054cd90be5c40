"""Every kind, end to end over HTTP: Created -> Running -> Succeeded, with upstream's events."""

from __future__ import annotations

import functools

import pytest

from kubetrain.runtime import RuntimeConfig
from tests.builders import pod_name
from tests.integration.operator.harness import KIND_CASES, Cluster, default_job, wait_for


@pytest.mark.parametrize("kind", sorted(KIND_CASES))
async def test_job_goes_created_running_succeeded(cluster: Cluster, kind: str) -> None:
    case = KIND_CASES[kind]
    name = f"{kind.lower()}-life"
    await cluster.create(default_job(kind, name, replicas=2))
    expected = {
        pod_name(name, rtype, i) for rtype in case.replica_types for i in range(2 if rtype == "Worker" else 1)
    }
    await cluster.wait_children(name, expected)
    created = ("Created", "True", f"{kind}Created", f"{kind} {name} is created.")
    await cluster.wait_conditions(kind, name, [created])
    await cluster.wait_events(
        name,
        [("Normal", "SuccessfulCreatePod", f"Created pod: {p}") for p in sorted(expected)]
        + [("Normal", "SuccessfulCreateService", f"Created service: {p}") for p in sorted(expected)],
    )

    await cluster.kubelet.run_all(name)
    running = ("Running", "True", f"{kind}Running", case.running(name))
    job = await cluster.wait_conditions(kind, name, [created, running])
    assert job["status"]["startTime"]
    active = {rtype: rs.get("active", 0) for rtype, rs in job["status"]["replicaStatuses"].items()}
    assert active == {rtype: 2 if rtype == "Worker" else 1 for rtype in case.replica_types}

    await cluster.kubelet.succeed_all(name)
    succeeded_msg = case.succeeded(name)
    done = await cluster.wait_conditions(
        kind,
        name,
        [
            created,
            ("Running", "False", f"{kind}Running", case.running(name)),
            ("Succeeded", "True", f"{kind}Succeeded", succeeded_msg),
        ],
    )
    assert done["status"]["completionTime"]
    assert all(rs.get("active", 0) == 0 for rs in done["status"]["replicaStatuses"].values())
    await cluster.wait_events(name, [("Normal", f"{kind}Succeeded", succeeded_msg)])
    # cleanPodPolicy defaults to None: every pod and service is still there.
    assert await cluster.pod_names(name) == expected


async def test_operator_installs_its_crds_then_serves_every_kind() -> None:
    """With `install_crds` the harness installs nothing: the operator applies the CRDs itself."""
    async with Cluster.start(RuntimeConfig(install_crds=True)) as cluster:
        crds, _ = await cluster.client.list("apiextensions.k8s.io/v1", "CustomResourceDefinition")
        assert {c["spec"]["names"]["kind"] for c in crds} >= set(KIND_CASES)
        for kind in KIND_CASES:
            await cluster.create(default_job(kind, f"{kind.lower()}-crd"))
        for kind in KIND_CASES:
            await wait_for(
                functools.partial(cluster.pod_names, f"{kind.lower()}-crd"), message=f"{kind} pods"
            )
