"""ChainerJob and Caffe2Job (kubeflow.org/v1alpha1, docs/upstream-behaviour.md#chainerjob and
#caffe2job) reconciled by the real runtime, from the examples of their archived operators."""

from __future__ import annotations

import json

from .harness import NS, MPICluster, example, has_condition

V1ALPHA1 = "kubeflow.org/v1alpha1"


async def test_chainerjob_master_job_worker_sets_and_copied_status() -> None:
    async with MPICluster.start() as c:
        await c.create(example("chainer/chainerjob-mn.yaml"))
        name = "example-job-mn"
        statefulset = f"{name}-workerset-ws0"
        await c.wait_for(lambda: c.get_or_none("apps/v1", "StatefulSet", statefulset), what="worker set")
        master = await c.wait_for(lambda: c.get_or_none("batch/v1", "Job", f"{name}-master"), what="master")
        assert master["spec"]["backoffLimit"] == 60
        assert master["spec"]["activeDeadlineSeconds"] == 6000
        assert await c.names("v1", "ServiceAccount") == [f"{name}-launcher"]
        role = await c.get("rbac.authorization.k8s.io/v1", "Role", f"{name}-launcher-role")
        assert {
            "apiGroups": [""],
            "verbs": ["create"],
            "resources": ["pods/exec"],
            "resourceNames": [f"{statefulset}-0", f"{statefulset}-1"],
        } in role["rules"]
        assert await c.names("rbac.authorization.k8s.io/v1", "RoleBinding") == [
            f"{name}-launcher-rolebinding"
        ]
        assets = (await c.get("v1", "ConfigMap", f"{name}-assets"))["data"]
        assert assets["statefulsets_and_slots"] == f"{statefulset} slots=1\n"
        assert (await c.get("apps/v1", "StatefulSet", statefulset))["spec"]["replicas"] == 2

        await c.set_job_status(
            f"{name}-master",
            {"succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]},
        )

        async def copied() -> bool:
            job = await c.get(V1ALPHA1, "ChainerJob", name)
            return has_condition(job, "Complete") and job["status"].get("succeeded") == 1

        await c.wait_for(copied, what="the master Job's status copied to the ChainerJob")

        async def scaled_down() -> bool:
            return bool((await c.get("apps/v1", "StatefulSet", statefulset))["spec"]["replicas"] == 0)

        await c.wait_for(scaled_down, what="worker set scaled to 0 once the master completed")


async def test_caffe2job_pods_env_and_status() -> None:
    async with MPICluster.start() as c:
        await c.create(example("caffe2/caffe2job-resnet50.yaml"))
        name = "example-caffe2-resnet50"
        pods = [f"{name}-worker-0", f"{name}-worker-1"]

        async def created() -> bool:
            return await c.names("v1", "Pod") == pods

        await c.wait_for(created, what="two worker pods")
        pod = await c.get("v1", "Pod", pods[1])
        env = {e["name"]: e["value"] for e in pod["spec"]["containers"][0]["env"]}
        assert (env["SHARD_ID"], env["NUM_SHARDS"], env["REDIS_HOST"]) == ("1", "2", "redis-service.default")
        assert json.loads(env["CAFFE2_CONFIG"])["task"] == {"type": "worker", "index": 1}
        assert pod["metadata"]["labels"]["caffe2_job_key"] == f"{NS}-{name}"

        for p in pods:
            await c.kubelet.running(NS, p)
        await c.wait_job(V1ALPHA1, "Caffe2Job", name, lambda j: has_condition(j, "Running"), "Running")
        for p in pods:
            await c.kubelet.succeeded(NS, p)
        job = await c.wait_job(
            V1ALPHA1, "Caffe2Job", name, lambda j: has_condition(j, "Succeeded"), "Succeeded"
        )
        assert job["status"]["replicaStatuses"] == {"succeeded": 2}
        events = await c.events(name)
        assert not [e for e in events if e["type"] == "Warning"], events
