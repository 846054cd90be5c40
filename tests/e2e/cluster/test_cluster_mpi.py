"""MPIJob on a real cluster (issue 6): a v2beta1 job (mpi-operator's mechanics: SSH Secret,
hostfile, launcher batch Job) whose mpirun reaches both workers, and a malformed mpirun that fails
the job with the launcher's exit code in the Failed message.

On real nodes the pods run `KUBETRAIN_E2E_MPI_IMAGE` (default `mpioperator/openmpi:latest`,
mpi-operator's base image with OpenMPI and sshd); on a node joined by `kubetrain node` the image is
not run and the machine's OpenMPI is used.
"""

from __future__ import annotations

import os
from typing import Any

from kubetrain.runtime.transport import KubeClient
from tests.e2e.cluster import tier
from tests.e2e.cluster.conftest import ClusterEnv
from tests.integration.operator_process.jobs import conditions, get_or_none, wait_condition, wait_for

assert tier.KUBECONFIG  # importing tier skips this module without a cluster

IMAGE = os.environ.get("KUBETRAIN_E2E_MPI_IMAGE", "mpioperator/openmpi:latest")


def mpijob(name: str, namespace: str, launcher_command: list[str]) -> dict[str, Any]:
    def template(container: str, command: list[str]) -> dict[str, Any]:
        return {"spec": {"containers": [{"name": container, "image": IMAGE, "command": command}]}}

    return {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "slotsPerWorker": 1,
            "runPolicy": {"cleanPodPolicy": "Running", "backoffLimit": 0},
            "mpiReplicaSpecs": {
                "Launcher": {
                    "replicas": 1,
                    "restartPolicy": "Never",
                    "template": template("launcher", launcher_command),
                },
                "Worker": {"replicas": 2, "template": template("worker", ["/usr/sbin/sshd", "-De"])},
            },
        },
    }


async def _launcher_job(kube: KubeClient, namespace: str, name: str) -> dict[str, Any]:
    async def check() -> dict[str, Any] | None:
        return await get_or_none(kube, "batch/v1", "Job", namespace, f"{name}-launcher")

    found: dict[str, Any] = await wait_for(check, 60, f"launcher Job of {name}")
    return found


async def test_mpijob_v2beta1_runs_mpirun_across_its_workers(
    kube: KubeClient, cluster_env: ClusterEnv
) -> None:
    command = ["mpirun", "--allow-run-as-root", "-np", "2", "sh", "-c", "echo rank $OMPI_COMM_WORLD_RANK"]
    created = await kube.create(mpijob("mpi-ok", cluster_env.namespace, command))
    done = await wait_condition(kube, created, "Succeeded", cluster_env.timeout)
    assert conditions(done).get("Failed") != "True"
    launcher = await _launcher_job(kube, cluster_env.namespace, "mpi-ok")
    assert launcher["metadata"]["ownerReferences"][0]["kind"] == "MPIJob"
    for child in (
        ("v1", "Secret", "mpi-ok-ssh"),
        ("v1", "ConfigMap", "mpi-ok-config"),
        ("v1", "Service", "mpi-ok"),
    ):
        assert await get_or_none(kube, child[0], child[1], cluster_env.namespace, child[2]), child


async def test_malformed_mpirun_fails_with_the_launchers_exit_code(
    kube: KubeClient, cluster_env: ClusterEnv
) -> None:
    created = await kube.create(mpijob("mpi-bad", cluster_env.namespace, ["mpirun", "--no-such-option"]))
    done = await wait_condition(kube, created, "Failed", cluster_env.timeout)
    failed = next(c for c in done["status"]["conditions"] if c["type"] == "Failed")
    assert "exited with code" in failed["message"], failed
