"""training-operator's MPIJob v1 controller behaviours through the real runtime
(docs/upstream-behaviour.md#mpijob-v1, #upstream-tests).

The v1 mechanics: a ConfigMap with the hostfile and `kubexec.sh`, a ServiceAccount, Role and
RoleBinding that let the launcher `kubectl exec` into exactly its workers, workers that only
sleep, and a launcher *pod* whose init container delivers kubectl.
"""

from __future__ import annotations

from typing import Any

from .harness import NS, V1, MPICluster, conditions, has_condition, replica_statuses, v1_job

JsonDict = dict[str, Any]
DELIVERY = "registry.example.com/kubectl-delivery:v1.30"


def env_of(container: JsonDict) -> dict[str, str]:
    return {e["name"]: e.get("value", "") for e in container.get("env") or ()}


async def _pods(c: MPICluster, *names: str) -> None:
    async def all_there() -> bool:
        return await c.names("v1", "Pod") == sorted(names)

    await c.wait_for(all_there, what=f"pods {names}")


async def test_objects_statuses_and_success() -> None:
    async with MPICluster.start(mpi_kubectl_delivery_image=DELIVERY) as c:
        await c.create(v1_job("tf", slotsPerWorker=2))
        await _pods(c, "tf-launcher", "tf-worker-0", "tf-worker-1")

        assert await c.names("v1", "ServiceAccount") == ["tf-launcher"]
        role = await c.get("rbac.authorization.k8s.io/v1", "Role", "tf-launcher")
        assert role["rules"] == [
            {"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["pods"]},
            {
                "verbs": ["create"],
                "apiGroups": [""],
                "resources": ["pods/exec"],
                "resourceNames": ["tf-worker-0", "tf-worker-1"],
            },
        ]
        binding = await c.get("rbac.authorization.k8s.io/v1", "RoleBinding", "tf-launcher")
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "tf-launcher", "namespace": NS}]
        assert binding["roleRef"]["name"] == "tf-launcher"
        data = (await c.get("v1", "ConfigMap", "tf-config"))["data"]
        assert data["hostfile"] == "tf-worker-0 slots=2\ntf-worker-1 slots=2\n"
        assert "/opt/kube/kubectl exec ${POD_NAME}" in data["kubexec.sh"]
        assert data["discover_hosts.sh"] == "#!/bin/sh"  # upstream: no trailing newline
        # v1 creates none of v2beta1's objects.
        assert await c.names("v1", "Service") == []
        assert await c.names("v1", "Secret") == []
        assert await c.names("batch/v1", "Job") == []

        worker = await c.get("v1", "Pod", "tf-worker-0")
        main = worker["spec"]["containers"][0]
        assert (main["command"], main["args"]) == (["sleep"], ["365d"])
        labels = worker["metadata"]["labels"]
        assert labels["training.kubeflow.org/operator-name"] == "mpijob-controller"
        assert labels["training.kubeflow.org/replica-type"] == "worker"
        owner = worker["metadata"]["ownerReferences"][0]
        assert (owner["apiVersion"], owner["kind"]) == (V1, "MPIJob")

        launcher = await c.get("v1", "Pod", "tf-launcher")
        assert launcher["spec"]["serviceAccountName"] == "tf-launcher"
        (init,) = launcher["spec"]["initContainers"]
        assert (init["name"], init["image"]) == ("kubectl-delivery", DELIVERY)
        env = env_of(launcher["spec"]["containers"][0])
        assert env["OMPI_MCA_plm_rsh_agent"] == "/etc/mpi/kubexec.sh"
        assert env["OMPI_MCA_orte_default_hostfile"] == "/etc/mpi/hostfile"
        assert env["I_MPI_HYDRA_BOOTSTRAP"] == "rsh"
        assert env["I_MPI_HYDRA_BOOTSTRAP_EXEC"] == "/etc/mpi/kubexec.sh"
        assert launcher["metadata"]["labels"]["training.kubeflow.org/job-role"] == "master"

        job = await c.get(V1, "MPIJob", "tf")
        assert job["metadata"]["annotations"]["kubeflow.org/mpi-api-version"] == "v1"

        await c.kubelet.pending(NS, "tf-worker-0")
        await c.kubelet.running(NS, "tf-worker-1")
        await c.kubelet.running(NS, "tf-launcher")
        job = await c.wait_job(
            V1,
            "MPIJob",
            "tf",
            lambda j: (
                replica_statuses(j).get("Launcher") == {"active": 1}
                and replica_statuses(j).get("Worker") == {"active": 1}
            ),
            "launcher active 1, workers active 1 (one pending)",
        )
        assert conditions(job)[-1] == ("Running", "True", "MPIJobRunning")
        running = next(x for x in job["status"]["conditions"] if x["type"] == "Running")
        assert running["message"] == "MPIJob tf is running."

        await c.kubelet.running(NS, "tf-worker-0")

        async def discovered() -> bool:
            data = (await c.get("v1", "ConfigMap", "tf-config"))["data"]
            return bool(data["discover_hosts.sh"] == "#!/bin/sh\necho tf-worker-0:2\necho tf-worker-1:2")

        await c.wait_for(discovered, what="discover_hosts.sh lists the running workers")

        await c.kubelet.succeeded(NS, "tf-launcher")
        job = await c.wait_job(V1, "MPIJob", "tf", lambda j: has_condition(j, "Succeeded"), "Succeeded")
        succeeded = next(x for x in job["status"]["conditions"] if x["type"] == "Succeeded")
        assert (succeeded["reason"], succeeded["message"]) == (
            "MPIJobSucceeded",
            "MPIJob tf is successfully completed.",
        )
        assert replica_statuses(job)["Launcher"] == {"succeeded": 1}
        await c.wait_event("tf", "MPIJobSucceeded")

        async def workers_gone() -> bool:
            return await c.names("v1", "Pod") == ["tf-launcher"]

        await c.wait_for(workers_gone, what="workers cleaned up (cleanPodPolicy Running)")
        events = await c.events("tf")
        assert {e["source"]["component"] for e in events} == {"mpijob-controller"}
        assert {e["involvedObject"]["apiVersion"] for e in events} == {V1}
        assert not [e for e in events if e["reason"].endswith(" is exist")]


async def test_launcher_failure_fails_the_job_without_the_double_prefix() -> None:
    async with MPICluster.start() as c:
        await c.create(v1_job("bad", workers=1))
        await _pods(c, "bad-launcher", "bad-worker-0")
        await c.kubelet.running(NS, "bad-worker-0")
        await c.kubelet.failed(NS, "bad-launcher", exit_code=2)
        job = await c.wait_job(V1, "MPIJob", "bad", lambda j: has_condition(j, "Failed"), "Failed")
        failed = next(x for x in job["status"]["conditions"] if x["type"] == "Failed")
        assert (failed["reason"], failed["message"]) == (
            "MPIJobFailed",
            "MPIJob bad is failed because 1 Launcher replica(s) failed: container mpi exited with code 2.",
        )
        assert replica_statuses(job)["Launcher"] == {"failed": 1}


async def test_intel_mpi_env_is_kept_when_user_provided() -> None:
    async with MPICluster.start() as c:
        user_env = [
            {"name": "I_MPI_HYDRA_BOOTSTRAP", "value": "ssh"},
            {"name": "I_MPI_HYDRA_BOOTSTRAP_EXEC", "value": "/usr/bin/ssh"},
        ]
        await c.create(v1_job("intel", workers=1, launcher={"env": user_env}))
        await _pods(c, "intel-launcher", "intel-worker-0")
        launcher = await c.get("v1", "Pod", "intel-launcher")
        env = launcher["spec"]["containers"][0]["env"]
        assert [e for e in env if e["name"].startswith("I_MPI_")] == user_env


async def test_predefined_service_account_is_used_not_created() -> None:
    async with MPICluster.start() as c:
        job = v1_job("sa", workers=1)
        job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["serviceAccountName"] = "mine"
        await c.create(job)
        await _pods(c, "sa-launcher", "sa-worker-0")
        assert (await c.get("v1", "Pod", "sa-launcher"))["spec"]["serviceAccountName"] == "mine"
        assert await c.names("v1", "ServiceAccount") == []
        binding = await c.get("rbac.authorization.k8s.io/v1", "RoleBinding", "sa-launcher")
        assert binding["subjects"][0]["name"] == "mine"


async def test_config_map_not_controlled_blocks_until_removed() -> None:
    async with MPICluster.start() as c:
        await c.client.create(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "own-config"}, "data": {}},
            namespace=NS,
        )
        await c.create(v1_job("own", workers=1))
        event = await c.wait_event("own", "ErrResourceExists")
        assert (event["type"], event["message"]) == (
            "Warning",
            'Resource "own-config" of MPIJobKind "ConfigMap" already exists and is not managed by MPIJob',
        )
        await c.settle()
        assert await c.names("v1", "Pod") == []
        assert (await c.get("v1", "ConfigMap", "own-config"))["data"] == {}

        await c.client.delete("v1", "ConfigMap", NS, "own-config")
        await _pods(c, "own-launcher", "own-worker-0")
        data = (await c.get("v1", "ConfigMap", "own-config"))["data"]
        assert data["hostfile"] == "own-worker-0 slots=1\n"


async def test_suspend_resume_and_managed_by() -> None:
    async with MPICluster.start() as c:
        await c.create(v1_job("sus", workers=1, run_policy={"suspend": True}))
        await c.create(v1_job("ext", workers=1, run_policy={"managedBy": "kueue.x-k8s.io/multikueue"}))
        job = await c.wait_job(V1, "MPIJob", "sus", lambda j: has_condition(j, "Suspended"), "Suspended")
        assert [t for t, _, _ in conditions(job)] == ["Created", "Suspended"]
        assert "startTime" not in job["status"]
        assert await c.names("v1", "Pod") == []

        await c.patch(V1, "MPIJob", "sus", {"spec": {"runPolicy": {"suspend": False}}})
        await _pods(c, "sus-launcher", "sus-worker-0")
        job = await c.wait_job(V1, "MPIJob", "sus", lambda j: "startTime" in j["status"], "startTime")
        assert ("Suspended", "False", "MPIJobResumed") in conditions(job)

        ext = await c.get(V1, "MPIJob", "ext")
        assert not ext.get("status")
        assert "kubeflow.org/mpi-api-version" not in (ext["metadata"].get("annotations") or {})
