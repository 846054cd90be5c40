"""MPIJob v1 plans: training-operator's MPIJob controller tests as plan tests, with the exact
objects (docs/upstream-behaviour.md#upstream-tests, #mpijob-v1)."""

from __future__ import annotations

from mpi_builders import UID, Cluster, conditions, created, deleted, env, events, v1_job

from kubetrain.controller.plan import PatchObject

OWNER = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "MPIJob",
    "name": "tf",
    "uid": UID,
    "controller": True,
    "blockOwnerDeletion": True,
}
KUBEXEC = '#!/bin/sh\nset -x\nPOD_NAME=$1\nshift\n/opt/kube/kubectl exec ${POD_NAME} -- /bin/sh -c "$*"'


def test_objects() -> None:
    c = Cluster(v1_job(spec={"slotsPerWorker": 2}))
    result = c.step()
    assert isinstance(result.actions[0], PatchObject)
    assert c.job["metadata"]["annotations"] == {"kubeflow.org/mpi-api-version": "v1"}
    objs = created(result)
    assert sorted(objs) == ["tf-config", "tf-launcher", "tf-worker-0", "tf-worker-1"]
    by_kind = sorted((a.obj["kind"], a.obj["metadata"]["name"]) for a in result.actions if hasattr(a, "obj"))
    assert by_kind == [
        ("ConfigMap", "tf-config"),
        ("Pod", "tf-launcher"),
        ("Pod", "tf-worker-0"),
        ("Pod", "tf-worker-1"),
        ("Role", "tf-launcher"),
        ("RoleBinding", "tf-launcher"),
        ("ServiceAccount", "tf-launcher"),
    ]
    cm = c.get("v1/ConfigMap", "tf-config")
    assert cm["metadata"]["labels"] == {"app": "tf"} and cm["metadata"]["ownerReferences"] == [OWNER]
    assert cm["data"] == {
        "hostfile": "tf-worker-0 slots=2\ntf-worker-1 slots=2\n",
        "kubexec.sh": KUBEXEC,
        "discover_hosts.sh": "#!/bin/sh",
    }
    role = c.get("rbac.authorization.k8s.io/v1/Role", "tf-launcher")
    assert role["rules"] == [
        {"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["pods"]},
        {
            "verbs": ["create"],
            "apiGroups": [""],
            "resources": ["pods/exec"],
            "resourceNames": ["tf-worker-0", "tf-worker-1"],
        },
    ]
    binding = c.get("rbac.authorization.k8s.io/v1/RoleBinding", "tf-launcher")
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "tf-launcher", "namespace": "default"}]
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": "tf-launcher",
    }
    worker = c.get("v1/Pod", "tf-worker-1")
    assert worker["metadata"]["labels"] == {
        "training.kubeflow.org/operator-name": "mpijob-controller",
        "training.kubeflow.org/job-name": "tf",
        "training.kubeflow.org/replica-type": "worker",
        "training.kubeflow.org/replica-index": "1",
    }
    main = worker["spec"]["containers"][0]
    assert (main["command"], main["args"]) == (["sleep"], ["365d"])
    assert main["volumeMounts"] == [{"name": "mpi-job-config", "mountPath": "/etc/mpi"}]
    assert worker["spec"]["volumes"] == [
        {
            "name": "mpi-job-config",
            "configMap": {
                "name": "tf-config",
                "items": [{"key": "kubexec.sh", "path": "kubexec.sh", "mode": 0o555}],
            },
        }
    ]
    launcher = c.get("v1/Pod", "tf-launcher")
    assert launcher["metadata"]["labels"] == {
        "training.kubeflow.org/operator-name": "mpijob-controller",
        "training.kubeflow.org/job-name": "tf",
        "training.kubeflow.org/replica-type": "launcher",
        "training.kubeflow.org/job-role": "master",
    }
    spec = launcher["spec"]
    assert spec["serviceAccountName"] == "tf-launcher" and spec["restartPolicy"] == "Never"
    (init,) = spec["initContainers"]
    assert init["name"] == "kubectl-delivery"
    assert init["image"] == "ghcr.io/kubeflow/training-v1/kubectl-delivery:latest"
    assert env(init) == {"TARGET_DIR": "/opt/kube", "NAMESPACE": "default"}
    assert init["resources"]["limits"] == {"cpu": "100m", "memory": "512Mi", "ephemeral-storage": "5Gi"}
    assert env(spec["containers"][0]) == {
        "OMPI_MCA_plm_rsh_agent": "/etc/mpi/kubexec.sh",
        "OMPI_MCA_orte_default_hostfile": "/etc/mpi/hostfile",
        "NVIDIA_VISIBLE_DEVICES": "",
        "NVIDIA_DRIVER_CAPABILITIES": "",
        "I_MPI_HYDRA_BOOTSTRAP": "rsh",
        "I_MPI_HYDRA_BOOTSTRAP_EXEC": "/etc/mpi/kubexec.sh",
    }
    assert spec["volumes"][1]["configMap"]["items"] == [
        {"key": "kubexec.sh", "path": "kubexec.sh", "mode": 0o555},
        {"key": "hostfile", "path": "hostfile", "mode": 0o444},
        {"key": "discover_hosts.sh", "path": "discover_hosts.sh", "mode": 0o555},
    ]
    assert ("Normal", "MPIJobRunning", "launcher pod created success: tf-launcher") in events(result)
    assert c.step(1).is_empty


def test_gpu_launcher_and_main_container() -> None:
    gpu = {
        "template": {
            "spec": {
                "containers": [{"name": "mpi", "image": "x", "resources": {"limits": {"nvidia.com/gpu": 1}}}]
            }
        }
    }
    c = Cluster(v1_job(launcher=gpu, spec={"mainContainer": "trainer"}))
    c.step()
    c.set_phase("tf-worker-1", "Running")
    c.set_phase("tf-worker-0", "Running")
    c.step(1)
    data = c.get("v1/ConfigMap", "tf-config")["data"]
    assert data["hostfile"] == "tf-launcher slots=1\ntf-worker-0 slots=1\ntf-worker-1 slots=1\n"
    assert (
        data["discover_hosts.sh"] == "#!/bin/sh\necho tf-launcher:1\n\necho tf-worker-0:1\necho tf-worker-1:1"
    )
    assert "--container trainer --" in data["kubexec.sh"]
    assert "NVIDIA_VISIBLE_DEVICES" not in env(c.get("v1/Pod", "tf-launcher")["spec"]["containers"][0])


def test_intel_env_kept_when_user_sets_it() -> None:
    user = {
        "template": {
            "spec": {
                "containers": [
                    {"name": "mpi", "image": "x", "env": [{"name": "I_MPI_HYDRA_BOOTSTRAP", "value": "ssh"}]}
                ]
            }
        }
    }
    launcher = created(Cluster(v1_job(launcher=user)).plan())["tf-launcher"]
    names = [e["name"] for e in launcher["spec"]["containers"][0]["env"]]
    assert names.count("I_MPI_HYDRA_BOOTSTRAP") == 1 and "I_MPI_HYDRA_BOOTSTRAP_EXEC" in names


def test_predefined_service_account() -> None:
    user = {
        "template": {"spec": {"serviceAccountName": "mine", "containers": [{"name": "mpi", "image": "x"}]}}
    }
    result = Cluster(v1_job(launcher=user)).plan()
    assert not [a for a in result.actions if getattr(a, "obj", {}).get("kind") == "ServiceAccount"]
    objs = created(result)
    assert objs["tf-launcher"]["spec"]["serviceAccountName"] == "mine"


def test_statuses_and_success_with_cleanup() -> None:
    c = Cluster(v1_job(spec={"runPolicy": {"cleanPodPolicy": "Running"}}))
    c.step()
    c.set_phase("tf-worker-0", "Running")
    c.set_phase("tf-worker-1", "Pending")
    c.set_phase("tf-launcher", "Running")
    c.step(1)
    status = c.job["status"]
    assert status["replicaStatuses"] == {"Launcher": {"active": 1}, "Worker": {"active": 1}}
    assert conditions(status) == [("Created", "True", "MPIJobCreated"), ("Running", "True", "MPIJobRunning")]
    c.set_phase("tf-launcher", "Succeeded")
    done = c.step(2)
    assert ("Normal", "MPIJobSucceeded", "MPIJob tf is successfully completed.") in events(done)
    assert conditions(c.job["status"])[-1] == ("Succeeded", "True", "MPIJobSucceeded")
    assert c.job["status"]["replicaStatuses"]["Launcher"] == {"succeeded": 1}
    assert deleted(done) == ["tf-worker-0", "tf-worker-1"]  # workers cleaned when the launcher finishes


def test_launcher_failure_has_single_prefix_reason() -> None:
    c = Cluster(v1_job())
    c.step()
    c.set_phase("tf-launcher", "Failed")
    result = c.step(1)
    last = c.job["status"]["conditions"][-1]
    assert (last["type"], last["reason"]) == ("Failed", "MPIJobFailed")  # upstream: MPIJobMPIJobFailed
    assert last["message"] == "MPIJob tf is failed because 1 Launcher replica(s) failed."
    assert ("Normal", "MPIJobFailed", last["message"]) in events(result)
    assert c.job["status"]["replicaStatuses"]["Launcher"] == {"failed": 1}


def test_objects_not_controlled_block_the_job() -> None:
    for kind, api in (("ConfigMap", "v1"), ("Role", "rbac.authorization.k8s.io/v1"), ("Pod", "v1")):
        c = Cluster(v1_job())
        name = "tf-config" if kind == "ConfigMap" else ("tf-launcher" if kind != "Pod" else "tf-worker-0")
        c.objects[(f"{api}/{kind}", name)] = {
            "apiVersion": api,
            "kind": kind,
            "metadata": {"name": name, "uid": "x"},
        }
        result = c.plan()
        message = f'Resource "{name}" of MPIJobKind "{kind}" already exists and is not managed by MPIJob'
        assert ("Warning", "ErrResourceExists", message) in events(result), kind
        assert "tf-launcher" not in {n for n, o in created(result).items() if o["kind"] == "Pod"}


def test_suspend_and_resume() -> None:
    c = Cluster(v1_job(spec={"runPolicy": {"suspend": True}}))
    c.step()
    assert c.names("v1/Pod") == []
    assert conditions(c.job["status"]) == [
        ("Created", "True", "MPIJobCreated"),
        ("Suspended", "True", "MPIJobSuspended"),
    ]
    c.job["spec"]["runPolicy"]["suspend"] = False
    c.step(5)
    assert conditions(c.job["status"])[-1] == ("Suspended", "False", "MPIJobResumed")
    assert c.names("v1/Pod") == ["tf-launcher", "tf-worker-0", "tf-worker-1"]
    c.job["spec"]["runPolicy"]["suspend"] = True
    assert deleted(c.step(6)) == ["tf-launcher", "tf-worker-0", "tf-worker-1"]


def test_managed_by_and_validation() -> None:
    external = v1_job(spec={"runPolicy": {"managedBy": "kueue.x-k8s.io/multikueue"}})
    assert Cluster(external).plan().is_empty
    bad = v1_job()
    bad["spec"]["mpiReplicaSpecs"]["Launcher"]["replicas"] = 2
    c = Cluster(bad)
    result = c.step()
    assert (
        "Warning",
        "MPIJobFailedValidation",
        "MPIReplicaSpec is not valid: There must be only 1 launcher pod",
    ) in events(result)
    assert conditions(c.job["status"])[-1] == ("Failed", "True", "MPIJobFailedValidation")
    assert created(result) == {}
