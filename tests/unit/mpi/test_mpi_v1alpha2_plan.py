"""MPIJob v1alpha2 plans: the original mpi-operator's (v0.2) procedure step by step, with the
exact objects of its `newConfigMap`, `newLauncherRole`, `newWorker` and `newLauncher`
(docs/upstream-behaviour.md#mpijob-v1alpha2)."""

from __future__ import annotations

from mpi_builders import UID, Cluster, conditions, created, env, events, v1alpha2_job

from kubetrain.controller.plan import CreateObject, PatchObject
from kubetrain.kinds.mpijob.conversion import written_version
from kubetrain.kinds.mpijob.validation import problems
from kubetrain.kinds.mpijob.wire import parse

OWNER = {
    "apiVersion": "kubeflow.org/v1alpha2",
    "kind": "MPIJob",
    "name": "pi",
    "uid": UID,
    "controller": True,
    "blockOwnerDeletion": True,
}
KUBEXEC = '#!/bin/sh\nset -x\nPOD_NAME=$1\nshift\n/opt/kube/kubectl exec ${POD_NAME} -- /bin/sh -c "$*"'
WORKER_LABELS = {"group_name": "kubeflow.org", "mpi_job_name": "pi", "mpi_role_type": "worker"}
LAUNCHER_LABELS = {"group_name": "kubeflow.org", "mpi_job_name": "pi", "mpi_role_type": "launcher"}
STS = "apps/v1/StatefulSet"
JOB = "batch/v1/Job"


def ready_workers(c: Cluster, ready: int) -> None:
    """What the StatefulSet controller reports once `ready` worker pods are Ready."""
    c.get(STS, "pi-worker")["status"] = {"replicas": 2, "readyReplicas": ready}


def test_first_pass_builds_every_object_of_the_procedure() -> None:
    c = Cluster(v1alpha2_job())
    result = c.step()
    assert isinstance(result.actions[0], PatchObject)
    assert c.job["metadata"]["annotations"] == {"kubeflow.org/mpi-api-version": "v1alpha2"}
    kinds = sorted(
        (a.obj["kind"], a.obj["metadata"]["name"]) for a in result.actions if isinstance(a, CreateObject)
    )
    assert kinds == [
        ("ConfigMap", "pi-config"),
        ("Job", "pi-launcher"),
        ("Role", "pi-launcher"),
        ("RoleBinding", "pi-launcher"),
        ("ServiceAccount", "pi-launcher"),
        ("StatefulSet", "pi-worker"),
    ]
    cm = c.get("v1/ConfigMap", "pi-config")
    assert cm["metadata"]["labels"] == {"app": "pi"} and cm["metadata"]["ownerReferences"] == [OWNER]
    assert cm["data"] == {"hostfile": "pi-worker-0 slots=2\npi-worker-1 slots=2\n", "kubexec.sh": KUBEXEC}
    role = c.get("rbac.authorization.k8s.io/v1/Role", "pi-launcher")
    assert role["rules"] == [
        {"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["pods"]},
        {
            "verbs": ["create"],
            "apiGroups": [""],
            "resources": ["pods/exec"],
            "resourceNames": ["pi-worker-0", "pi-worker-1"],
        },
    ]
    binding = c.get("rbac.authorization.k8s.io/v1/RoleBinding", "pi-launcher")
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "pi-launcher", "namespace": "default"}]
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": "pi-launcher",
    }
    assert c.get("v1/ServiceAccount", "pi-launcher")["metadata"]["ownerReferences"] == [OWNER]
    # Created (no event: upstream sets it in its informer's add handler) and the start time
    assert conditions(c.job["status"]) == [("Created", "True", "MPIJobCreated")]
    assert c.job["status"]["conditions"][0]["message"] == "MPIJob default/pi is created."
    assert c.job["status"]["startTime"]
    assert events(result) == []


def test_worker_stateful_set() -> None:
    c = Cluster(v1alpha2_job())
    c.step()
    sts = c.get(STS, "pi-worker")
    assert sts["metadata"]["labels"] == WORKER_LABELS
    assert sts["metadata"]["ownerReferences"] == [OWNER]
    spec = sts["spec"]
    assert spec["podManagementPolicy"] == "Parallel"
    assert spec["replicas"] == 2 and spec["serviceName"] == "pi-worker"
    assert spec["selector"] == {"matchLabels": WORKER_LABELS}
    template = spec["template"]
    # upstream's labels; kubetrain adds the job-name and replica-type labels its clients select on
    assert template["metadata"]["labels"] == {
        **WORKER_LABELS,
        "training.kubeflow.org/job-name": "pi",
        "training.kubeflow.org/replica-type": "worker",
    }
    pod = template["spec"]
    assert pod["restartPolicy"] == "Always"
    main = pod["containers"][0]
    assert main["command"] == ["sleep"] and main["args"] == ["365d"]
    assert main["volumeMounts"] == [{"name": "mpi-job-config", "mountPath": "/etc/mpi"}]
    assert pod["volumes"] == [
        {
            "name": "mpi-job-config",
            "configMap": {
                "name": "pi-config",
                "items": [{"key": "kubexec.sh", "path": "kubexec.sh", "mode": 0o555}],
            },
        }
    ]


def test_worker_with_a_command_keeps_it() -> None:
    job = v1alpha2_job()
    job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["command"] = [
        "/usr/sbin/sshd"
    ]
    c = Cluster(job)
    c.step()
    main = c.get(STS, "pi-worker")["spec"]["template"]["spec"]["containers"][0]
    assert main["command"] == ["/usr/sbin/sshd"] and "args" not in main


def test_launcher_job() -> None:
    c = Cluster(v1alpha2_job(spec={"backoffLimit": 3, "activeDeadlineSeconds": 600}))
    c.step()
    launcher = c.get(JOB, "pi-launcher")
    assert launcher["metadata"]["labels"] == LAUNCHER_LABELS
    assert launcher["metadata"]["ownerReferences"] == [OWNER]
    assert launcher["spec"]["backoffLimit"] == 3 and launcher["spec"]["activeDeadlineSeconds"] == 600
    pod = launcher["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "pi-launcher"
    assert pod["restartPolicy"] == "OnFailure"  # the launcher's default
    (delivery,) = pod["initContainers"]
    assert delivery["name"] == "kubectl-delivery"
    assert delivery["image"] == "mpioperator/kubectl-delivery:latest"
    assert env(delivery) == {"TARGET_DIR": "/opt/kube", "NAMESPACE": "default"}
    assert delivery["volumeMounts"] == [
        {"name": "mpi-job-kubectl", "mountPath": "/opt/kube"},
        {"name": "mpi-job-config", "mountPath": "/etc/mpi"},
    ]
    limits = {"cpu": "100m", "memory": "512Mi", "ephemeral-storage": "5Gi"}
    assert delivery["resources"] == {"limits": limits, "requests": limits}
    main = pod["containers"][0]
    assert env(main) == {
        "OMPI_MCA_plm_rsh_agent": "/etc/mpi/kubexec.sh",
        "OMPI_MCA_orte_default_hostfile": "/etc/mpi/hostfile",
        "NVIDIA_VISIBLE_DEVICES": "",
        "NVIDIA_DRIVER_CAPABILITIES": "",
    }
    items = pod["volumes"][1]["configMap"]["items"]
    assert pod["volumes"][0] == {"name": "mpi-job-kubectl", "emptyDir": {}}
    assert items == [
        {"key": "kubexec.sh", "path": "kubexec.sh", "mode": 0o555},
        {"key": "hostfile", "path": "hostfile", "mode": 0o444},
    ]


def test_run_policy_overrides_the_top_level_limits_and_main_container_reaches_kubexec() -> None:
    job = v1alpha2_job(
        spec={
            "backoffLimit": 3,
            "mainContainer": "trainer",
            "runPolicy": {"backoffLimit": 1, "activeDeadlineSeconds": 9},
        }
    )
    c = Cluster(job)
    c.step()
    launcher = c.get(JOB, "pi-launcher")
    assert launcher["spec"]["backoffLimit"] == 1 and launcher["spec"]["activeDeadlineSeconds"] == 9
    assert c.get("v1/ConfigMap", "pi-config")["data"]["kubexec.sh"].endswith(
        '/opt/kube/kubectl exec ${POD_NAME} --container trainer -- /bin/sh -c "$*"'
    )


def test_launcher_restart_policy_in_the_template_warns_and_is_overwritten() -> None:
    job = v1alpha2_job()
    job["spec"]["mpiReplicaSpecs"]["Launcher"]["restartPolicy"] = "Never"
    job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["restartPolicy"] = "Always"
    c = Cluster(job)
    result = c.step()
    assert c.get(JOB, "pi-launcher")["spec"]["template"]["spec"]["restartPolicy"] == "Never"
    assert ("Warning", "SettedPodTemplateRestartPolicy") in [(t, r) for t, r, _ in events(result)]


def test_running_needs_an_active_launcher_and_every_worker_ready() -> None:
    c = Cluster(v1alpha2_job())
    c.step()
    c.get(JOB, "pi-launcher")["status"] = {"active": 1}
    ready_workers(c, 1)
    c.step()
    assert [t for t, _, _ in conditions(c.job["status"])] == ["Created"]
    assert c.job["status"]["replicaStatuses"] == {"Launcher": {"active": 1}, "Worker": {"active": 1}}
    ready_workers(c, 2)
    result = c.step()
    assert conditions(c.job["status"]) == [
        ("Created", "True", "MPIJobCreated"),
        ("Running", "True", "MPIJobRunning"),
    ]
    assert c.job["status"]["conditions"][1]["message"] == "MPIJob default/pi is running."
    assert created(result) == {}  # the launcher Job is created once


def test_success_then_the_worker_set_is_scaled_to_zero() -> None:
    c = Cluster(v1alpha2_job(spec={"cleanPodPolicy": "Running"}))
    c.step()
    ready_workers(c, 2)
    c.get(JOB, "pi-launcher")["status"] = {"active": 1}
    c.step()
    c.finish_launcher("Complete", 30)
    result = c.step(30)
    assert ("Normal", "MPIJobSucceeded", "MPIJob default/pi successfully completed.") in events(result)
    assert conditions(c.job["status"]) == [
        ("Created", "True", "MPIJobCreated"),
        ("Running", "False", "MPIJobRunning"),
        ("Succeeded", "True", "MPIJobSucceeded"),
    ]
    assert c.job["status"]["completionTime"]
    assert c.job["status"]["replicaStatuses"]["Launcher"] == {"succeeded": 1}
    assert c.get(STS, "pi-worker")["spec"]["replicas"] == 2  # the finishing pass only reports
    result = c.step(31)
    assert [a.patch for a in result.actions if isinstance(a, PatchObject)] == [{"spec": {"replicas": 0}}]
    assert c.get(STS, "pi-worker")["spec"]["replicas"] == 0
    assert c.job["status"]["replicaStatuses"]["Worker"] == {}


def test_clean_pod_policy_none_keeps_the_workers() -> None:
    """Upstream's default (None) leaves the worker StatefulSet as it is after the job ends."""
    c = Cluster(v1alpha2_job())
    c.step()
    c.finish_launcher("Complete")
    c.step()
    c.step(1)
    assert c.get(STS, "pi-worker")["spec"]["replicas"] == 2


def test_failed_launcher_fails_the_job_and_restarts_are_reported() -> None:
    c = Cluster(v1alpha2_job(spec={"cleanPodPolicy": "All"}))
    c.step()
    c.get(JOB, "pi-launcher")["status"] = {"failed": 1, "active": 1}
    c.step()
    assert ("Restarting", "True", "MPIJobRestarting") in conditions(c.job["status"])
    c.finish_launcher("Failed", 5, reason="BackoffLimitExceeded")
    result = c.step(5)
    assert ("Warning", "MPIJobFailed", "MPIJob default/pi has failed") in events(result)
    assert ("Failed", "True", "MPIJobFailed") in conditions(c.job["status"])
    c.step(6)
    assert c.get(STS, "pi-worker")["spec"]["replicas"] == 0


def test_scaling_the_workers_follows_the_job() -> None:
    c = Cluster(v1alpha2_job())
    c.step()
    c.job["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] = 3
    result = c.step()
    assert [a.patch for a in result.actions if isinstance(a, PatchObject)] == [{"spec": {"replicas": 3}}]


def test_a_namesake_stateful_set_is_refused() -> None:
    c = Cluster(v1alpha2_job())
    c.objects[(STS, "pi-worker")] = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "pi-worker", "namespace": "default", "uid": "other"},
        "spec": {"replicas": 1},
    }
    result = c.step()
    assert ("Warning", "ErrResourceExists") in [(t, r) for t, r, _ in events(result)]
    assert created(result, "Job") == {}  # upstream returns the error before the launcher


def test_invalid_jobs_warn_and_create_nothing() -> None:
    c = Cluster(v1alpha2_job(workers=None))
    result = c.step()
    assert created(result) == {}
    ((etype, reason, message),) = events(result)
    assert (etype, reason) == ("Warning", "ValidationError")
    assert "spec.mpiReplicaSpecs[Worker]: Required value" in message


def test_version_markers_and_problems() -> None:
    job = v1alpha2_job()
    assert written_version(job) == "v1alpha2"
    # read back through the storage version (v1), the defaulted backoffLimit still tells
    assert written_version({**job, "apiVersion": "kubeflow.org/v1"}) == "v1alpha2"
    no_marker = v1alpha2_job()
    del no_marker["spec"]["backoffLimit"]
    assert written_version({**no_marker, "apiVersion": "kubeflow.org/v1"}) == "v1"
    bad = v1alpha2_job(workers=0)
    parsed, info, errors = parse(bad)
    assert parsed is not None and info is not None and info.version == "v1alpha2" and not errors
    assert problems(parsed, info) == [
        "spec.mpiReplicaSpecs[Worker].replicas: Invalid value: 0: must be greater than or equal to 1"
    ]
