"""mpi-operator's integration suite against the real runtime: MPIJob v2beta1 over HTTP
(docs/upstream-behaviour.md#upstream-tests).

Each test mirrors one of `test/integration/mpi_job_controller_test.go`: the operator's writes
are observed through the API server; the test plays the kubelet (pod status) and the batch/v1
Job controller (the launcher Job's pod and status).
"""

from __future__ import annotations

from typing import Any

from .harness import (
    NS,
    SCHEDULER_PLUGINS,
    V2,
    VOLCANO,
    MPICluster,
    conditions,
    has_condition,
    replica_statuses,
    v2_job,
)

JsonDict = dict[str, Any]


async def _created(c: MPICluster, name: str, workers: int = 2) -> None:
    """The objects of a running v2beta1 job: Service, ConfigMap, Secret, workers, launcher Job."""
    await c.wait_for(lambda: c.get_or_none("batch/v1", "Job", f"{name}-launcher"), what="launcher Job")

    async def workers_created() -> bool:
        return await c.names("v1", "Pod") == [f"{name}-worker-{i}" for i in range(workers)]

    await c.wait_for(workers_created, what="worker pods")
    assert await c.names("v1", "Service") == [name]
    assert await c.names("v1", "ConfigMap") == [f"{name}-config"]
    assert await c.names("v1", "Secret") == [f"{name}-ssh"]


async def test_success() -> None:
    async with MPICluster.start() as c:
        await c.create(v2_job("test"))
        await c.wait_event("test", "MPIJobCreated")
        await _created(c, "test")

        service = await c.get("v1", "Service", "test")
        assert service["spec"]["clusterIP"] == "None"
        assert service["spec"]["selector"] == {
            "training.kubeflow.org/operator-name": "mpi-operator",
            "training.kubeflow.org/job-name": "test",
        }
        hostfile = (await c.get("v1", "ConfigMap", "test-config"))["data"]["hostfile"]
        assert hostfile == (f"test-worker-0.test.{NS}.svc slots=1\ntest-worker-1.test.{NS}.svc slots=1\n")
        secret = await c.get("v1", "Secret", "test-ssh")
        assert secret["type"] == "kubernetes.io/ssh-auth"
        assert set(secret["data"]) == {"ssh-privatekey", "ssh-publickey"}
        owner = (await c.get("v1", "Pod", "test-worker-0"))["metadata"]["ownerReferences"][0]
        assert (owner["apiVersion"], owner["kind"], owner["controller"]) == (V2, "MPIJob", True)
        job = await c.get(V2, "MPIJob", "test")
        assert job["metadata"]["annotations"]["kubeflow.org/mpi-api-version"] == "v2beta1"
        assert replica_statuses(job) == {"Launcher": {}, "Worker": {}}

        for i in range(2):
            await c.kubelet.running(NS, f"test-worker-{i}")
        await c.wait_job(
            V2,
            "MPIJob",
            "test",
            lambda j: replica_statuses(j).get("Worker") == {"active": 2},
            "2 active workers",
        )
        launcher_pod = await c.launcher_pod("test-launcher", "abcde")
        await c.kubelet.running(NS, launcher_pod)
        await c.wait_event("test", "MPIJobRunning")
        job = await c.wait_job(
            V2,
            "MPIJob",
            "test",
            lambda j: replica_statuses(j).get("Launcher") == {"active": 1},
            "active launcher",
        )
        assert has_condition(job, "Running")
        discover = (await c.get("v1", "ConfigMap", "test-config"))["data"]["discover_hosts.sh"]
        assert discover == f"#!/bin/sh\necho test-worker-0.test.{NS}.svc\necho test-worker-1.test.{NS}.svc\n"

        await c.kubelet.succeeded(NS, launcher_pod)
        await c.set_job_status(
            "test-launcher",
            {
                "succeeded": 1,
                "completionTime": "2024-01-01T00:00:10Z",
                "conditions": [{"type": "Complete", "status": "True"}],
            },
        )
        await c.wait_event("test", "MPIJobSucceeded")
        job = await c.wait_job(V2, "MPIJob", "test", lambda j: has_condition(j, "Succeeded"), "Succeeded")
        assert replica_statuses(job)["Launcher"] == {"succeeded": 1}
        assert job["status"]["completionTime"] == "2024-01-01T00:00:10Z"

        async def workers_gone() -> bool:
            return not [p for p in await c.names("v1", "Pod") if "-worker-" in p]

        await c.wait_for(workers_gone, what="workers cleaned up (cleanPodPolicy Running)")
        events = await c.events("test")
        assert {e["source"]["component"] for e in events} == {"mpi-job-controller"}  # mpi-operator's recorder
        assert {e["involvedObject"]["apiVersion"] for e in events} == {V2}
        # The annotation patch and the status write of the first pass did not conflict.
        errors = c.manager.metrics.registry.get_sample_value(
            "kubetrain_reconcile_errors_total", {"kind": "MPIJob"}
        )
        assert not errors


async def test_wait_for_workers_ready() -> None:
    async with MPICluster.start() as c:
        await c.create(v2_job("wait", launcherCreationPolicy="WaitForWorkersReady"))

        async def workers() -> bool:
            return await c.names("v1", "Pod") == ["wait-worker-0", "wait-worker-1"]

        await c.wait_for(workers, what="worker pods")
        for i in range(2):
            await c.kubelet.running(NS, f"wait-worker-{i}", ready=False)
        await c.wait_job(
            V2,
            "MPIJob",
            "wait",
            lambda j: replica_statuses(j).get("Worker") == {"active": 2},
            "2 running workers",
        )
        await c.settle()
        assert await c.get_or_none("batch/v1", "Job", "wait-launcher") is None

        for i in range(2):
            await c.kubelet.running(NS, f"wait-worker-{i}", ready=True)
        await c.wait_for(
            lambda: c.get_or_none("batch/v1", "Job", "wait-launcher"), what="launcher Job after Ready"
        )


async def test_resuming_and_suspending() -> None:
    async with MPICluster.start() as c:
        await c.create(v2_job("sus", run_policy={"suspend": True}))
        await c.wait_event("sus", "MPIJobSuspended")
        assert {"MPIJobCreated", "MPIJobSuspended"} <= set(await c.reasons("sus"))
        launcher = await c.wait_for(
            lambda: c.get_or_none("batch/v1", "Job", "sus-launcher"), what="launcher Job"
        )
        assert launcher["spec"]["suspend"] is True
        job = await c.get(V2, "MPIJob", "sus")
        assert "startTime" not in job["status"]
        assert has_condition(job, "Suspended")
        assert await c.names("v1", "Pod") == []

        # Resume, with the scheduling directives Kueue would inject into the launcher template.
        directives = {
            "nodeSelector": {"kubernetes.io/os": "linux"},
            "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "schedulingGates": [{"name": "example.com/gate"}],
        }
        await c.patch(
            V2,
            "MPIJob",
            "sus",
            {
                "spec": {
                    "runPolicy": {"suspend": False},
                    "mpiReplicaSpecs": {
                        "Launcher": {
                            "template": {
                                "metadata": {"labels": {"kueue": "yes"}, "annotations": {"note": "x"}},
                                "spec": directives,
                            }
                        }
                    },
                }
            },
        )
        await c.wait_event("sus", "MPIJobResumed")
        job = await c.wait_job(V2, "MPIJob", "sus", lambda j: "startTime" in j["status"], "startTime")
        assert ("Suspended", "False", "MPIJobResumed") in conditions(job)

        async def unsuspended() -> JsonDict | None:
            obj = await c.get("batch/v1", "Job", "sus-launcher")
            return obj if obj["spec"].get("suspend") is False else None

        launcher = await c.wait_for(unsuspended, what="launcher Job resumed")
        template = launcher["spec"]["template"]
        assert template["metadata"]["labels"]["kueue"] == "yes"
        assert template["metadata"]["annotations"]["note"] == "x"
        for key, value in directives.items():
            assert template["spec"][key] == value, key

        async def workers() -> bool:
            return await c.names("v1", "Pod") == ["sus-worker-0", "sus-worker-1"]

        await c.wait_for(workers, what="workers after resume")

        await c.patch(V2, "MPIJob", "sus", {"spec": {"runPolicy": {"suspend": True}}})

        async def suspended_again() -> JsonDict | None:
            obj = await c.get("batch/v1", "Job", "sus-launcher")
            return obj if obj["spec"].get("suspend") is True else None

        await c.wait_for(suspended_again, what="launcher Job suspended again")
        job = await c.wait_job(
            V2,
            "MPIJob",
            "sus",
            lambda j: has_condition(j, "Suspended") and has_condition(j, "Running", "False"),
            "Suspended=True, Running=False",
        )

        async def no_workers() -> bool:
            return await c.names("v1", "Pod") == []

        await c.wait_for(no_workers, what="workers released while suspended")


async def test_failure() -> None:
    async with MPICluster.start() as c:
        await c.create(v2_job("fail"))
        await _created(c, "fail")
        pod = await c.launcher_pod("fail-launcher", "x1")
        await c.kubelet.failed(NS, pod, exit_code=3)
        await c.set_job_status("fail-launcher", {"failed": 1})
        job = await c.wait_job(
            V2,
            "MPIJob",
            "fail",
            lambda j: replica_statuses(j).get("Launcher") == {"failed": 1},
            "launcher failed 1",
        )
        await c.settle()
        assert not has_condition(await c.get(V2, "MPIJob", "fail"), "Failed")

        await c.set_job_status(
            "fail-launcher",
            {
                "failed": 1,
                "conditions": [
                    {
                        "type": "Failed",
                        "status": "True",
                        "reason": "BackoffLimitExceeded",
                        "message": "Job has reached the specified backoff limit",
                    }
                ],
            },
        )
        job = await c.wait_job(V2, "MPIJob", "fail", lambda j: has_condition(j, "Failed"), "Failed")
        assert replica_statuses(job)["Launcher"] == {"failed": 1}
        failed = next(cond for cond in job["status"]["conditions"] if cond["type"] == "Failed")
        assert failed["reason"] == "BackoffLimitExceeded"
        assert failed["message"] == (
            "Job has reached the specified backoff limit: container launcher exited with code 3"
        )
        event = await c.wait_event("fail", "BackoffLimitExceeded")
        assert event["type"] == "Warning"


async def _pod_group(c: MPICluster, group: tuple[str, str], name: str) -> JsonDict:
    api_version = f"{group[0]}/{group[1]}"
    found: JsonDict = await c.wait_for(
        lambda: c.get_or_none(api_version, "PodGroup", name), what=f"PodGroup {name}"
    )
    return found


RESOURCES = {"requests": {"cpu": "1", "memory": "1Gi"}}


async def test_with_scheduler_plugins() -> None:
    async with MPICluster.start(gang="scheduler-plugins-scheduler", podgroups=(SCHEDULER_PLUGINS,)) as c:
        for name, value in (("high", 100), ("low", 10)):
            await c.client.create(
                {
                    "apiVersion": "scheduling.k8s.io/v1",
                    "kind": "PriorityClass",
                    "metadata": {"name": name},
                    "value": value,
                }
            )
        classes = c.manager.child_informers["scheduling.k8s.io/v1/PriorityClass"].store
        await c.wait_for(lambda: len(classes) == 2, what="PriorityClasses cached")
        job = v2_job(
            "sp",
            launcher={"priorityClassName": "low"},
            worker={"priorityClassName": "high"},
            run_policy={"schedulingPolicy": {"minAvailable": 2, "scheduleTimeoutSeconds": 100}},
        )
        job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["resources"] = {
            "requests": {"cpu": "500m", "memory": "512Mi"}
        }
        job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["resources"] = RESOURCES
        await c.create(job)
        group = await _pod_group(c, SCHEDULER_PLUGINS, "sp")
        # 3 pods > minAvailable 2: mpi-operator trims the lower-priority replica type to
        # minMember-1 pods. The workers outrank the launcher (PriorityClass values, read from the
        # cache), so the launcher is trimmed (to its 1 pod) and both workers count; without the
        # classes the tie would trim the workers to 1 (1500m, 1536Mi).
        assert group["spec"]["minMember"] == 2
        assert group["spec"]["scheduleTimeoutSeconds"] == 100
        assert group["spec"]["minResources"] == {"cpu": "2500m", "memory": "2560Mi"}
        worker = await c.get("v1", "Pod", "sp-worker-0")
        assert worker["spec"]["schedulerName"] == "scheduler-plugins-scheduler"
        assert worker["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == "sp"
        launcher = await c.get("batch/v1", "Job", "sp-launcher")
        assert launcher["spec"]["template"]["spec"]["schedulerName"] == "scheduler-plugins-scheduler"

        await c.patch(
            V2,
            "MPIJob",
            "sp",
            {"spec": {"runPolicy": {"schedulingPolicy": {"minResources": {"cpu": "10", "memory": "10Gi"}}}}},
        )

        async def updated() -> bool:
            found = await c.get(f"{SCHEDULER_PLUGINS[0]}/{SCHEDULER_PLUGINS[1]}", "PodGroup", "sp")
            return bool(found["spec"]["minResources"] == {"cpu": "10", "memory": "10Gi"})

        await c.wait_for(updated, what="PodGroup minResources updated")


async def test_with_volcano() -> None:
    async with MPICluster.start(gang="volcano", podgroups=(VOLCANO,)) as c:
        job = v2_job("vc", launcher={"priorityClassName": "launcher-pc"}, worker={"priorityClassName": "w"})
        job["metadata"]["annotations"] = {"scheduling.volcano.sh/queue-name": "q1"}
        job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["resources"] = RESOURCES
        await c.create(job)
        group = await _pod_group(c, VOLCANO, "vc")
        assert group["spec"]["minMember"] == 3
        assert group["spec"]["queue"] == "q1"
        assert group["spec"]["priorityClassName"] == "launcher-pc"
        assert group["spec"]["minResources"] == {"cpu": "2", "memory": "2Gi"}
        owner = group["metadata"]["ownerReferences"][0]
        assert (owner["apiVersion"], owner["name"], owner["controller"]) == (V2, "vc", True)
        worker = await c.get("v1", "Pod", "vc-worker-1")
        assert worker["spec"]["schedulerName"] == "volcano"
        assert worker["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "vc"

        await c.patch(V2, "MPIJob", "vc", {"spec": {"runPolicy": {"schedulingPolicy": {"queue": "q2"}}}})

        async def updated() -> bool:
            found = await c.get(f"{VOLCANO[0]}/{VOLCANO[1]}", "PodGroup", "vc")
            return bool(found["spec"]["queue"] == "q2")

        await c.wait_for(updated, what="PodGroup queue updated")


async def test_managed_externally() -> None:
    async with MPICluster.start() as c:
        await c.create(v2_job("ext", run_policy={"managedBy": "kueue.x-k8s.io/multikueue"}))
        await c.create(v2_job("ours", run_policy={"managedBy": "kubeflow.org/mpi-operator"}))
        await c.wait_for(lambda: c.get_or_none("batch/v1", "Job", "ours-launcher"), what="ours launched")
        await c.settle()
        job = await c.get(V2, "MPIJob", "ext")
        assert "status" not in job or not job["status"]
        assert "kubeflow.org/mpi-api-version" not in (job["metadata"].get("annotations") or {})
        assert await c.get_or_none("batch/v1", "Job", "ext-launcher") is None
        assert await c.get_or_none("v1", "Service", "ext") is None


async def test_namesake_launcher_job_blocks_until_removed() -> None:
    async with MPICluster.start() as c:
        await c.client.create(
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {"name": "taken-launcher", "namespace": NS},
                "spec": {
                    "template": {
                        "spec": {"restartPolicy": "Never", "containers": [{"name": "x", "image": "busybox"}]}
                    }
                },
            },
            namespace=NS,
        )
        await c.create(v2_job("taken"))
        event = await c.wait_event("taken", "ErrResourceExists")
        assert event["type"] == "Warning"
        assert event["message"] == 'Resource "taken-launcher" already exists and is not managed by MPIJob'
        assert await c.names("v1", "Pod") == []

        await c.client.delete("batch/v1", "Job", NS, "taken-launcher")

        async def ours() -> bool:
            job = await c.get_or_none("batch/v1", "Job", "taken-launcher")
            refs = (job or {}).get("metadata", {}).get("ownerReferences") or []
            return any(r.get("kind") == "MPIJob" for r in refs)

        await c.wait_for(ours, what="launcher Job created once the namesake is gone")
