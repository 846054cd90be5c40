"""Poison objects on a real cluster (issue #17): kube-apiserver stores JSON nested 10,000 deep and
objects of ~1.5 MB, and none of them may blind the operator for their kind.

* a PyTorchJob nested 5,000 deep is refused by the webhook (when the API server can call it) or
  failed with `PyTorchJobFailedValidation`, without pods;
* an MPIJob nested 5,000 deep (no webhook, as upstream) gets a Warning `ValidationError` naming
  the path;
* a valid PyTorchJob of ~1 MB and a valid job created after all of them get their pods.
"""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.kube.errors import ApiError
from kubetrain.runtime.transport import KubeClient
from tests.e2e.cluster import tier
from tests.e2e.cluster.conftest import ClusterEnv
from tests.integration.operator_process.jobs import job, pods_of, wait_condition, wait_for

assert tier.KUBECONFIG  # importing tier skips this module without a cluster

DEPTH = 5000


def nested(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


def master(obj: dict[str, Any]) -> dict[str, Any]:
    container: dict[str, Any] = obj["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"][
        "containers"
    ][0]
    return container


async def test_deep_and_huge_jobs_do_not_blind_the_operator(
    kube: KubeClient, cluster_env: ClusterEnv
) -> None:
    ns = cluster_env.namespace
    deep = job("PyTorchJob", "poison-deep", ns)
    master(deep)["command"] = nested(DEPTH)
    try:
        created = await kube.create(deep)
    except ApiError as err:
        assert err.status == 403 and "nesting too deep" in str(err), err
    else:
        if cluster_env.webhook_installed or cluster_env.embedded:
            pytest.fail("the webhook is installed but the deep job was admitted")
        failed = await wait_condition(kube, created, "Failed", cluster_env.timeout)
        condition = next(c for c in failed["status"]["conditions"] if c["type"] == "Failed")
        assert (
            condition["reason"] == "PyTorchJobFailedValidation" and "nesting too deep" in condition["message"]
        )
        assert await pods_of(kube, ns, "poison-deep") == []

    launcher = {"name": "launcher", "image": "mpi", "command": nested(DEPTH)}
    await kube.create(
        {
            "apiVersion": "kubeflow.org/v2beta1",
            "kind": "MPIJob",
            "metadata": {"name": "poison-mpi", "namespace": ns},
            "spec": {
                "slotsPerWorker": 1,
                "mpiReplicaSpecs": {
                    "Launcher": {"replicas": 1, "template": {"spec": {"containers": [launcher]}}},
                    "Worker": {
                        "replicas": 1,
                        "template": {"spec": {"containers": [{"name": "w", "image": "mpi"}]}},
                    },
                },
            },
        }
    )

    async def warned() -> list[str]:
        events, _ = await kube.list("v1", "Event", ns)
        return [
            e["message"]
            for e in events
            if e["involvedObject"]["name"] == "poison-mpi" and e["reason"] == "ValidationError"
        ]

    messages = await wait_for(warned, cluster_env.timeout, "a ValidationError event on the deep MPIJob")
    assert "spec.mpiReplicaSpecs.Launcher.template.spec.containers[0].command[0]" in messages[0]

    huge = job("PyTorchJob", "poison-huge", ns, "print('ok')")
    master(huge)["env"] = [{"name": "BIG", "value": "b" * 1_000_000}]
    await kube.create(huge)
    after = await kube.create(job("PyTorchJob", "poison-after", ns, "print('ok')"))
    for name in ("poison-huge", "poison-after"):
        await wait_for(lambda n=name: pods_of(kube, ns, n), cluster_env.timeout, f"pods of {name}")
    await wait_condition(kube, after, "Succeeded", cluster_env.timeout)
