"""MPIJob v2beta1 plans: mpi-operator's integration suite replayed as plan tests, plus the exact
objects (docs/upstream-behaviour.md#upstream-tests, #mpijob-v2beta1-objects)."""

from __future__ import annotations

import base64

import pytest
from mpi_builders import (
    KEYS,
    UID,
    Cluster,
    at,
    conditions,
    created,
    deleted,
    env,
    events,
    stamp,
    v2_job,
)

from kubetrain.controller.config import ControllerConfig
from kubetrain.controller.plan import PatchObject
from kubetrain.kinds.mpijob.planner import plan

LABELS = {"training.kubeflow.org/operator-name": "mpi-operator", "training.kubeflow.org/job-name": "pi"}
OWNER = {
    "apiVersion": "kubeflow.org/v2beta1",
    "kind": "MPIJob",
    "name": "pi",
    "uid": UID,
    "controller": True,
    "blockOwnerDeletion": True,
}


def test_success() -> None:
    """TestMPIJobSuccess: objects, statuses through Running, success and worker cleanup."""
    c = Cluster(v2_job())
    first = c.step()
    assert ("Normal", "MPIJobCreated", "MPIJob default/pi is created.") in events(first)
    assert sorted(created(first)) == [
        "pi",
        "pi-config",
        "pi-launcher",
        "pi-ssh",
        "pi-worker-0",
        "pi-worker-1",
    ]
    assert isinstance(first.actions[0], PatchObject)  # the version is frozen in an annotation
    assert c.job["metadata"]["annotations"] == {"kubeflow.org/mpi-api-version": "v2beta1"}
    status = c.job["status"]
    assert status["replicaStatuses"] == {"Launcher": {}, "Worker": {}}
    assert conditions(status) == [("Created", "True", "MPIJobCreated")]
    assert status["startTime"] == stamp(0)
    assert c.step(1).is_empty  # idempotent once everything landed

    c.set_phase("pi-worker-0", "Running")
    c.set_phase("pi-worker-1", "Running")
    c.add_launcher_pod("Running")
    running = c.step(2)
    assert c.job["status"]["replicaStatuses"] == {"Launcher": {"active": 1}, "Worker": {"active": 2}}
    assert conditions(c.job["status"])[-1] == ("Running", "True", "MPIJobRunning")
    assert ("Normal", "MPIJobRunning", "MPIJob default/pi is running") in events(running)
    hosts = c.get("v1/ConfigMap", "pi-config")["data"]["discover_hosts.sh"]
    assert hosts == "#!/bin/sh\necho pi-worker-0.pi.default.svc\necho pi-worker-1.pi.default.svc\n"

    c.finish_launcher("Complete", 5)
    c.set_phase("pi-launcher-abcde", "Succeeded")
    done = c.step(6)
    assert ("Normal", "MPIJobSucceeded", "MPIJob default/pi successfully completed.") in events(done)
    assert [m.name for m in done.metrics] == ["mpi_operator_jobs_successful_total"]
    status = c.job["status"]
    assert status["replicaStatuses"] == {"Launcher": {"succeeded": 1}, "Worker": {}}
    assert conditions(status) == [
        ("Created", "True", "MPIJobCreated"),
        ("Running", "False", "MPIJobRunning"),
        ("Succeeded", "True", "MPIJobSucceeded"),
    ]
    assert status["completionTime"] == stamp(5)
    cleanup = c.step(7)
    assert deleted(cleanup) == ["pi-worker-0", "pi-worker-1"]  # cleanPodPolicy Running
    assert c.step(8).is_empty


def test_objects_are_upstreams() -> None:
    c = Cluster(v2_job(spec={"slotsPerWorker": 2}))
    objs = created(c.step())
    svc = objs["pi"]
    assert svc["metadata"]["labels"] == {"app": "pi"} and svc["metadata"]["ownerReferences"] == [OWNER]
    assert svc["spec"] == {"clusterIP": "None", "selector": LABELS, "publishNotReadyAddresses": False}
    assert objs["pi-config"]["data"] == {
        "hostfile": "pi-worker-0.pi.default.svc slots=2\npi-worker-1.pi.default.svc slots=2\n",
        "discover_hosts.sh": "#!/bin/sh\n",
    }
    secret = objs["pi-ssh"]
    assert secret["type"] == "kubernetes.io/ssh-auth"
    assert base64.b64decode(secret["data"]["ssh-privatekey"]) == KEYS[0]
    assert base64.b64decode(secret["data"]["ssh-publickey"]) == KEYS[1]
    worker = objs["pi-worker-1"]
    assert worker["metadata"]["labels"] == {
        **LABELS,
        "training.kubeflow.org/job-role": "worker",
        "training.kubeflow.org/replica-index": "1",
    }
    spec = worker["spec"]
    assert (spec["hostname"], spec["subdomain"], spec["restartPolicy"]) == ("pi-worker-1", "pi", "Never")
    assert spec["dnsConfig"] == {"searches": ["pi.default.svc.cluster.local"]}
    main = spec["containers"][0]
    assert main["command"] == ["/usr/sbin/sshd", "-De"] and env(main) == {"K_MPI_JOB_ROLE": "worker"}
    assert main["volumeMounts"] == [{"name": "ssh-auth", "mountPath": "/root/.ssh"}]
    assert spec["volumes"] == [
        {
            "name": "ssh-auth",
            "secret": {
                "secretName": "pi-ssh",
                "defaultMode": 0o600,
                "items": [
                    {"key": "ssh-privatekey", "path": "id_rsa"},
                    {"key": "ssh-publickey", "path": "id_rsa.pub"},
                    {"key": "ssh-publickey", "path": "authorized_keys"},
                ],
            },
        }
    ]
    launcher = objs["pi-launcher"]
    assert launcher["metadata"]["labels"] == {"app": "pi"}
    assert launcher["spec"]["podReplacementPolicy"] == "Failed" and "suspend" not in launcher["spec"]
    template = launcher["spec"]["template"]
    assert template["metadata"]["labels"] == {**LABELS, "training.kubeflow.org/job-role": "launcher"}
    lspec = template["spec"]
    assert (lspec["hostname"], lspec["subdomain"], lspec["restartPolicy"]) == (
        "pi-launcher",
        "pi",
        "OnFailure",
    )
    lmain = lspec["containers"][0]
    assert [e["name"] for e in lmain["env"]] == [
        "K_MPI_JOB_ROLE",
        "OMPI_MCA_orte_keep_fqdn_hostnames",
        "OMPI_MCA_orte_default_hostfile",
        "OMPI_MCA_plm_rsh_args",
        "OMPI_MCA_orte_set_default_slots",
        "NVIDIA_VISIBLE_DEVICES",
        "NVIDIA_DRIVER_CAPABILITIES",
    ]
    assert env(lmain)["OMPI_MCA_orte_set_default_slots"] == "2"
    assert lmain["volumeMounts"] == [
        {"name": "ssh-auth", "mountPath": "/root/.ssh"},
        {"name": "mpi-job-config", "mountPath": "/etc/mpi"},
    ]
    assert lspec["volumes"][1] == {
        "name": "mpi-job-config",
        "configMap": {
            "name": "pi-config",
            "items": [
                {"key": "hostfile", "path": "hostfile", "mode": 0o444},
                {"key": "discover_hosts.sh", "path": "discover_hosts.sh", "mode": 0o555},
            ],
        },
    }


@pytest.mark.parametrize(
    ("implementation", "hostfile", "expected_env"),
    [
        (
            "Intel",
            "pi-launcher.pi.default.svc:3\npi-worker-0.pi.default.svc:3\n",
            {
                "K_MPI_JOB_ROLE": "launcher",
                "I_MPI_HYDRA_HOST_FILE": "/etc/mpi/hostfile",
                "I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS": "-o ConnectionAttempts=10",
                "I_MPI_PERHOST": "3",
            },
        ),
        (
            "MPICH",
            "pi-launcher.pi.default.svc:3\npi-worker-0.pi.default.svc:3\n",
            {
                "K_MPI_JOB_ROLE": "launcher",
                "HYDRA_HOST_FILE": "/etc/mpi/hostfile",
                "HYDRA_LAUNCH_EXTRA_ARGS": "-o ConnectionAttempts=10",
            },
        ),
    ],
)
def test_implementations_and_launcher_as_worker(
    implementation: str, hostfile: str, expected_env: dict[str, str]
) -> None:
    spec = {"mpiImplementation": implementation, "runLauncherAsWorker": True, "slotsPerWorker": 3}
    objs = created(Cluster(v2_job(workers=1, spec=spec)).step())
    assert objs["pi-config"]["data"]["hostfile"] == hostfile
    assert objs["pi-config"]["data"]["discover_hosts.sh"] == "#!/bin/sh\necho pi-launcher.pi.default.svc\n"
    assert objs["pi"]["spec"]["publishNotReadyAddresses"] is True
    template = objs["pi-launcher"]["spec"]["template"]
    assert env(template["spec"]["containers"][0]) == expected_env  # no NVIDIA override: it works too
    assert template["metadata"]["labels"]["training.kubeflow.org/replica-index"] == "0"
    assert objs["pi-worker-0"]["metadata"]["labels"]["training.kubeflow.org/replica-index"] == "1"


def test_custom_ssh_path_and_cluster_domain() -> None:
    c = Cluster(
        v2_job(spec={"sshAuthMountPath": "/home/mpiuser/.ssh"}), ControllerConfig(cluster_domain="corp")
    )
    objs = created(c.step())
    assert "defaultMode" not in objs["pi-worker-0"]["spec"]["volumes"][0]["secret"]
    assert objs["pi-worker-0"]["spec"]["dnsConfig"] == {"searches": ["pi.default.svc.corp"]}
    assert objs["pi-config"]["data"]["hostfile"].startswith("pi-worker-0.pi.default.svc.corp slots=1\n")


def test_user_command_and_restart_policy_warning() -> None:
    worker = {"template": {"spec": {"containers": [{"name": "w", "image": "x", "args": ["sleep"]}]}}}
    launcher = {
        "template": {"spec": {"restartPolicy": "Always", "containers": [{"name": "l", "image": "x"}]}}
    }
    result = Cluster(v2_job(worker=worker, launcher=launcher)).step()
    assert "command" not in created(result)["pi-worker-0"]["spec"]["containers"][0]
    assert (
        "Warning",
        "SetPodTemplateRestartPolicy",
        "Restart policy in pod template overridden by restart policy in replica spec",
    ) in events(result)


def test_wait_for_workers_ready() -> None:
    """TestMPIJobWaitWorkers: no launcher Job until every worker pod is Ready."""
    c = Cluster(v2_job(spec={"launcherCreationPolicy": "WaitForWorkersReady"}))
    assert "pi-launcher" not in created(c.step())
    c.set_phase("pi-worker-0", "Running")
    c.set_phase("pi-worker-1", "Running")
    assert "pi-launcher" not in created(c.step(1))
    c.set_phase("pi-worker-0", "Running", ready=True)
    c.set_phase("pi-worker-1", "Running", ready=True)
    assert "pi-launcher" in created(c.step(2))


def test_suspend_and_resume() -> None:
    """TestMPIJobResumingAndSuspending."""
    c = Cluster(v2_job(spec={"runPolicy": {"cleanPodPolicy": "Running", "suspend": True}}))
    first = c.step()
    assert [e[1] for e in events(first)] == ["MPIJobCreated", "MPIJobSuspended"]
    objs = created(first)
    assert objs["pi-launcher"]["spec"]["suspend"] is True
    assert not [n for n in objs if n.startswith("pi-worker")]
    assert "startTime" not in c.job["status"]
    assert conditions(c.job["status"])[1:] == [
        ("Suspended", "True", "MPIJobSuspended"),
        ("Running", "False", "MPIJobSuspended"),
    ]
    # Kueue admits: scheduling directives injected into the MPIJob's launcher template, then resume.
    launcher_tpl = c.job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]
    launcher_tpl.setdefault("metadata", {})["labels"] = {"kueue": "yes"}
    launcher_tpl["spec"]["nodeSelector"] = {"pool": "a"}
    c.job["spec"]["runPolicy"]["suspend"] = False
    resumed = c.step(10)
    assert ("Normal", "MPIJobResumed", "MPIJob resumed") in events(resumed)
    assert c.job["status"]["startTime"] == stamp(10)
    launcher = c.get("batch/v1/Job", "pi-launcher")
    assert launcher["spec"]["suspend"] is False
    assert launcher["spec"]["template"]["spec"]["nodeSelector"] == {"pool": "a"}
    assert launcher["spec"]["template"]["metadata"]["labels"]["kueue"] == "yes"
    assert c.names("v1/Pod") == ["pi-worker-0", "pi-worker-1"]
    c.set_phase("pi-worker-0", "Running")
    c.set_phase("pi-worker-1", "Pending")
    c.job["spec"]["runPolicy"]["suspend"] = True
    again = c.step(20)
    assert c.get("batch/v1/Job", "pi-launcher")["spec"]["suspend"] is True
    assert deleted(again) == ["pi-worker-0", "pi-worker-1"]
    assert ("Suspended", "True", "MPIJobSuspended") in conditions(c.job["status"])
    assert ("Running", "False", "MPIJobSuspended") in conditions(c.job["status"])


def test_failure() -> None:
    """TestMPIJobFailure: a failed launcher pod is not yet a failed job; the Job's Failed is."""
    c = Cluster(v2_job())
    c.step()
    c.get("batch/v1/Job", "pi-launcher")["status"] = {"failed": 1}
    c.add_launcher_pod("Failed")
    c.step(1)
    assert c.job["status"]["replicaStatuses"]["Launcher"] == {"failed": 1}
    assert "Failed" not in [t for t, _, _ in conditions(c.job["status"])]
    c.finish_launcher("Failed")
    c.get("batch/v1/Job", "pi-launcher")["status"]["failed"] = 2
    failed = c.step(2)
    assert ("Warning", "MPIJobFailed", "MPIJob default/pi has failed") in events(failed)
    assert c.job["status"]["replicaStatuses"]["Launcher"] == {"failed": 2}
    assert conditions(c.job["status"])[-1] == ("Failed", "True", "MPIJobFailed")
    assert c.job["status"]["completionTime"] == stamp(2)


def test_backoff_limit_failure_names_the_exit_code() -> None:
    c = Cluster(v2_job())
    c.step()
    terminated = {"name": "mpi", "state": {"terminated": {"exitCode": 134}}}
    c.add_launcher_pod("Failed", containerStatuses=[terminated])
    c.finish_launcher(
        "Failed", reason="BackoffLimitExceeded", message="Job has reached the specified backoff limit"
    )
    c.step(1)
    last = c.job["status"]["conditions"][-1]
    assert last["reason"] == "BackoffLimitExceeded"
    assert (
        last["message"] == "Job has reached the specified backoff limit: container mpi exited with code 134"
    )


def test_evicted_worker_fails_the_job() -> None:
    c = Cluster(v2_job())
    c.step()
    c.set_phase("pi-worker-0", "Failed", reason="Evicted")
    result = c.step(1)
    assert ("Warning", "MPIJobEvicted", "1/2 workers are evicted") in events(result)
    assert conditions(c.job["status"])[-1] == ("Failed", "True", "MPIJobEvicted")


def test_scheduler_plugins_pod_group() -> None:
    """TestMPIJobWithSchedulerPlugins: PodGroup created, then updated when the spec changes."""
    requests = {"resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}
    worker = {"template": {"spec": {"containers": [{"name": "mpi", "image": "x", **requests}]}}}
    config = ControllerConfig(gang_scheduler_name="scheduler-plugins-scheduler")
    c = Cluster(v2_job(worker=worker), config)
    c.step()
    group = c.get("scheduling.x-k8s.io/v1alpha1/PodGroup", "pi")
    assert group["spec"] == {
        "minMember": 3,
        "minResources": {"cpu": "2", "memory": "2Gi"},
        "scheduleTimeoutSeconds": 0,
    }
    assert group["metadata"]["ownerReferences"] == [OWNER]
    pod = c.get("v1/Pod", "pi-worker-0")
    assert pod["spec"]["schedulerName"] == "scheduler-plugins-scheduler"
    assert pod["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == "pi"
    c.job["spec"]["runPolicy"]["schedulingPolicy"] = {"minAvailable": 2, "scheduleTimeoutSeconds": 30}
    result = c.step(1)
    (patch,) = [a for a in result.actions if isinstance(a, PatchObject) and a.ref.kind == "PodGroup"]
    assert patch.patch == {
        "spec": {"minMember": 2, "minResources": {"cpu": "1", "memory": "1Gi"}, "scheduleTimeoutSeconds": 30}
    }


def test_volcano_pod_group() -> None:
    """TestMPIJobWithVolcanoScheduler: queue from the annotation, priority class from the
    launcher template, minResources trimmed to minMember with workers as the lower priority."""
    res = {"resources": {"limits": {"cpu": "2"}, "requests": {"memory": "1Gi"}}}
    launcher = {
        "template": {
            "spec": {"priorityClassName": "high", "containers": [{"name": "l", "image": "x", **res}]}
        }
    }
    worker = {"template": {"spec": {"containers": [{"name": "w", "image": "x", **res}]}}}
    job = v2_job(
        workers=3, launcher=launcher, worker=worker, annotations={"scheduling.volcano.sh/queue-name": "q1"}
    )
    job["spec"]["runPolicy"]["schedulingPolicy"] = {"minAvailable": 2}
    c = Cluster(job, ControllerConfig(gang_scheduler_name="volcano"))
    c.step()
    group = c.get("scheduling.volcano.sh/v1beta1/PodGroup", "pi")
    assert group["spec"] == {
        "minMember": 2,
        "queue": "q1",
        "priorityClassName": "high",
        "minResources": {"cpu": "4", "memory": "2Gi"},
    }
    pod = c.get("v1/Pod", "pi-worker-0")
    assert pod["spec"]["schedulerName"] == "volcano"
    assert pod["metadata"]["annotations"] == {"scheduling.k8s.io/group-name": "pi"}


def test_managed_externally() -> None:
    """TestMPIJobManagedExternally: no startTime, no conditions, no launcher, no Service."""
    job = v2_job(spec={"runPolicy": {"cleanPodPolicy": "Running", "managedBy": "kueue.x-k8s.io/multikueue"}})
    result = Cluster(job).plan()
    assert result.is_empty and result.events == []


def test_explicitly_managed_by_mpi_operator() -> None:
    job = v2_job(spec={"runPolicy": {"cleanPodPolicy": "Running", "managedBy": "kubeflow.org/mpi-operator"}})
    assert "pi-launcher" in created(Cluster(job).plan())


def test_validation_error_is_an_event_only() -> None:
    job = v2_job(spec={"mpiImplementation": "LAM"})
    result = Cluster(job).plan()
    assert result.status is None
    assert [a for a in result.actions if not isinstance(a, PatchObject)] == []
    assert events(result) == [
        (
            "Warning",
            "ValidationError",
            'Found validation errors: spec.mpiImplementation: Unsupported value: "LAM": '
            'supported values: "Intel", "MPICH", "OpenMPI"',
        )
    ]


def test_foreign_config_map_blocks_the_job() -> None:
    c = Cluster(v2_job())
    foreign = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "pi-config", "uid": "x"},
        "data": {},
    }
    c.objects[("v1/ConfigMap", "pi-config")] = foreign
    result = c.plan()
    assert (
        "Warning",
        "ErrResourceExists",
        'Resource "pi-config" already exists and is not managed by MPIJob',
    ) in events(result)
    assert not [n for n in created(result) if n.startswith("pi-worker")]


def test_scale_down_and_config_map_update() -> None:
    c = Cluster(v2_job(workers=3))
    c.step()
    c.job["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] = 1
    result = c.step(1)
    assert deleted(result) == ["pi-worker-1", "pi-worker-2"]
    assert c.get("v1/ConfigMap", "pi-config")["data"]["hostfile"] == "pi-worker-0.pi.default.svc slots=1\n"


def test_ssh_keys_generated_only_when_absent() -> None:
    calls: list[int] = []

    def keygen() -> tuple[bytes, bytes]:
        calls.append(1)
        return KEYS

    c = Cluster(v2_job())
    c.apply(plan(c.job, c.observed(), at(0), c.config, keygen=keygen))
    plan(c.job, c.observed(), at(1), c.config, keygen=keygen)
    assert calls == [1]
    c.get("v1/Secret", "pi-ssh")["data"] = {"other": "eA=="}
    result = plan(c.job, c.observed(), at(2), c.config, keygen=keygen)
    (patch,) = [a for a in result.actions if isinstance(a, PatchObject) and a.ref.kind == "Secret"]
    assert patch.patch["data"]["other"] is None
    assert set(patch.patch["data"]) == {"other", "ssh-privatekey", "ssh-publickey"}


def test_real_key_pair_format() -> None:
    from kubetrain.kinds.mpijob.ssh import generate_key_pair

    private, public = generate_key_pair()
    assert private.startswith(b"-----BEGIN EC PRIVATE KEY-----\n")
    assert public.startswith(b"ecdsa-sha2-nistp521 ") and public.endswith(b"\n")
