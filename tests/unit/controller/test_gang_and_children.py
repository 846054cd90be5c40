"""Gang scheduling PodGroups and framework children: PyTorch's HPA
(docs/upstream-behaviour.md#gang-scheduling, #pytorchjob-elastic)."""

from __future__ import annotations

from kubetrain.controller.config import ChildType, ControllerConfig
from kubetrain.controller.plan import DeleteObject, PatchObject
from kubetrain.kinds.registry import watched_children

from .builders import Cluster, at, conditions, created, deleted, event_list, job, stamp

VOLCANO = ControllerConfig(gang_scheduler_name="volcano")
PLUGINS = ControllerConfig(gang_scheduler_name="scheduler-plugins-scheduler")
VOLCANO_KEY = "scheduling.volcano.sh/v1beta1/PodGroup"
PLUGINS_KEY = "scheduling.x-k8s.io/v1alpha1/PodGroup"
HPA_KEY = "autoscaling/v2/HorizontalPodAutoscaler"
OWNER = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "PyTorchJob",
    "name": "test-job",
    "uid": "job-uid-1",
    "controller": True,
    "blockOwnerDeletion": True,
}


def _gang_job():  # type: ignore[no-untyped-def]
    return (
        job("PyTorchJob")
        .replicas("Master", 1, resources={"requests": {"cpu": "500m", "memory": "1Gi"}})
        .replicas("Worker", 2, resources={"limits": {"cpu": "1", "memory": "512Mi", "nvidia.com/gpu": "1"}})
        .annotations(team="a")
    )


def test_watched_children() -> None:
    assert watched_children(ControllerConfig()) == [
        ChildType("autoscaling/v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", None)
    ]
    assert [c.key for c in watched_children(VOLCANO)] == [VOLCANO_KEY, HPA_KEY]
    assert [c.key for c in watched_children(PLUGINS)] == [PLUGINS_KEY, HPA_KEY]


def test_volcano_pod_group_created_and_pods_gated_until_inqueue() -> None:
    c = Cluster(_gang_job().scheduling(queue="q1", priorityClass="high").build(), config=VOLCANO)
    first = c.step()
    (group,) = created(first, "PodGroup").values()
    assert group == {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {
            "name": "test-job",
            "namespace": "default",
            "annotations": {"team": "a"},
            "ownerReferences": [OWNER],
        },
        "spec": {
            "minMember": 3,
            "queue": "q1",
            "priorityClassName": "high",
            "minResources": {"cpu": "2500m", "memory": "2Gi", "nvidia.com/gpu": "2"},
        },
    }
    assert created(first) == {}
    assert first.status is not None and first.status["lastReconcileTime"] == stamp()
    assert "startTime" not in first.status
    # Still Pending: nothing new, and lastReconcileTime is not re-stamped every pass.
    c.others[VOLCANO_KEY]["test-job"]["status"] = {"phase": "Pending"}
    pending = c.plan(at(5))
    assert pending.actions == [] and pending.status is None
    c.others[VOLCANO_KEY]["test-job"]["status"] = {"phase": "Inqueue"}
    go = c.step(at(6))
    pods = created(go)
    assert len(pods) == 3
    master = pods["test-job-master-0"]
    assert master["spec"]["schedulerName"] == "volcano"
    assert master["metadata"]["annotations"] == {
        "scheduling.k8s.io/group-name": "test-job",
        "volcano.sh/task-spec": "master",
    }
    assert pods["test-job-worker-1"]["metadata"]["annotations"]["volcano.sh/task-spec"] == "worker"
    assert c.plan(at(7)).actions == []


def test_volcano_queue_default_and_existing_queue_wins() -> None:
    c = Cluster(_gang_job().build(), config=VOLCANO)
    (group,) = created(c.step(), "PodGroup").values()
    assert group["spec"]["queue"] == "default"
    c.others[VOLCANO_KEY]["test-job"]["spec"]["queue"] = "set-by-admin"
    c.others[VOLCANO_KEY]["test-job"]["status"] = {"phase": "Running"}
    assert not [a for a in c.step(at(1)).actions if isinstance(a, PatchObject)]


def test_pod_group_patched_when_spec_differs_only_in_managed_fields() -> None:
    c = Cluster(_gang_job().build(), config=VOLCANO)
    c.step()
    stored = c.others[VOLCANO_KEY]["test-job"]
    stored["status"] = {"phase": "Running"}
    stored["spec"]["minResources"] = {"cpu": "2.5", "memory": "2048Mi", "nvidia.com/gpu": "2"}  # same values
    stored["spec"]["minTaskMember"] = {"worker": 1}  # not ours: left alone
    assert not [a for a in c.step(at(1)).actions if isinstance(a, PatchObject)]
    c.job["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = 3
    patches = [a for a in c.step(at(2)).actions if isinstance(a, PatchObject)]
    assert [p.patch for p in patches] == [
        {
            "spec": {
                "minMember": 4,
                "minResources": {"cpu": "3500m", "memory": "2560Mi", "nvidia.com/gpu": "3"},
            }
        }
    ]


def test_scheduler_plugins_pod_group_and_pods_not_gated() -> None:
    c = Cluster(_gang_job().scheduling(minAvailable=2, scheduleTimeoutSeconds=30).build(), config=PLUGINS)
    first = c.step()
    (group,) = created(first, "PodGroup").values()
    assert group["apiVersion"] == "scheduling.x-k8s.io/v1alpha1"
    assert group["spec"] == {
        "minMember": 2,
        "minResources": {"cpu": "1500m", "memory": "1536Mi", "nvidia.com/gpu": "1"},
        "scheduleTimeoutSeconds": 30,
    }
    pods = created(first)
    assert len(pods) == 3
    assert pods["test-job-worker-0"]["spec"]["schedulerName"] == "scheduler-plugins-scheduler"
    assert pods["test-job-worker-0"]["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == "test-job"
    assert "annotations" not in pods["test-job-worker-0"]["metadata"]


def test_custom_scheduler_kept_with_warning() -> None:
    builder = job("TFJob").replicas("Worker", 1, pod_spec={"schedulerName": "mine"})
    c = Cluster(builder.build(), config=PLUGINS)
    result = c.step()
    assert created(result)["test-job-worker-0"]["spec"]["schedulerName"] == "mine"
    assert (
        "Warning",
        "SetPodTemplateSchedulerName",
        "Another scheduler is specified when gang-scheduling is enabled and it will not be overwritten",
    ) in event_list(result)


def test_pod_group_deleted_when_finished_and_when_suspended() -> None:
    c = Cluster(job("TFJob").replicas("Worker", 1).build(), config=PLUGINS)
    c.step()
    c.set_pods(None, lambda p: p.succeeded())
    done = c.step(at(1))
    assert deleted(done, "PodGroup") == ["test-job"]
    assert ("Normal", "JobTerminated", "Job has been terminated. Deleting PodGroup") in event_list(done)
    assert ("Normal", "SuccessfulDeletePodGroup", "Deleted PodGroup: test-job") in event_list(done)
    assert c.plan(at(2)).actions == []

    s = Cluster(job("TFJob").replicas("Worker", 1).build(), config=VOLCANO)
    s.step()
    s.job["spec"]["runPolicy"] = {"suspend": True}
    assert deleted(s.step(at(1)), "PodGroup") == ["test-job"]
    assert s.plan(at(2)).actions == []


def _elastic_job():  # type: ignore[no-untyped-def]
    metrics = [
        {
            "type": "Resource",
            "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}},
        }
    ]
    return (
        job("PyTorchJob")
        .replicas("Worker", 1)
        .spec(
            elasticPolicy={
                "minReplicas": 1,
                "maxReplicas": 3,
                "maxRestarts": 3,
                "rdzvBackend": "c10d",
                "metrics": metrics,
            }
        )
    )


def test_pytorch_hpa_created_env_elastic_and_deleted_on_suspend() -> None:
    c = Cluster(_elastic_job().build())
    first = c.step()
    (hpa,) = created(first, "HorizontalPodAutoscaler").values()
    assert hpa["metadata"] == {"name": "test-job", "namespace": "default", "ownerReferences": [OWNER]}
    assert hpa["spec"]["scaleTargetRef"] == {
        "kind": "PyTorchJob",
        "name": "test-job",
        "apiVersion": "kubeflow.org/v1",
    }
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (1, 3)
    env = dict(
        (v["name"], v["value"]) for v in created(first)["test-job-worker-0"]["spec"]["containers"][0]["env"]
    )
    assert env["PET_RDZV_BACKEND"] == "c10d" and env["PET_NNODES"] == "1:3" and env["PET_MAX_RESTARTS"] == "3"
    assert env["PET_RDZV_ENDPOINT"] == "test-job-worker-0:23456"
    # API-server defaults on the stored HPA do not cause patches.
    c.others[HPA_KEY]["test-job"]["spec"]["behavior"] = {"scaleDown": {"stabilizationWindowSeconds": 300}}
    assert c.plan(at(1)).actions == []
    c.job["spec"]["elasticPolicy"]["maxReplicas"] = 5
    patches = [a for a in c.step(at(2)).actions if isinstance(a, PatchObject)]
    assert len(patches) == 1 and patches[0].patch["spec"]["maxReplicas"] == 5
    c.job["spec"]["runPolicy"] = {"suspend": True}
    suspended = c.step(at(3))
    assert any(
        isinstance(a, DeleteObject) and a.ref.kind == "HorizontalPodAutoscaler" for a in suspended.actions
    )
    assert c.others[HPA_KEY] == {}
    assert conditions(suspended.status)[-1][0] == "Suspended"


def test_hpa_deleted_when_metrics_removed() -> None:
    c = Cluster(_elastic_job().build())
    c.step()
    del c.job["spec"]["elasticPolicy"]["metrics"]
    assert deleted(c.step(at(1)), "HorizontalPodAutoscaler") == ["test-job"]


LOCAL = ControllerConfig(gang_schedulers_named_by_pods=("volcano", "scheduler-plugins-scheduler"))
"""The local plane's operator: no `--gang-scheduler-name`, the pods' scheduler decides."""


def test_the_pods_scheduler_decides_the_pod_group_when_none_is_declared() -> None:
    assert [c.key for c in watched_children(LOCAL)] == [VOLCANO_KEY, PLUGINS_KEY, HPA_KEY]
    builder = (
        job("PyTorchJob").replicas("Master", 1).replicas("Worker", 2, pod_spec={"schedulerName": "volcano"})
    )
    first = Cluster(builder.scheduling(minAvailable=3).build(), config=LOCAL).step()
    (group,) = created(first, "PodGroup").values()
    assert (group["apiVersion"], group["spec"]["minMember"]) == ("scheduling.volcano.sh/v1beta1", 3)
    assert created(first) == {}  # gated until Volcano moves the group to Inqueue, as on a cluster

    plugins = job("TFJob").replicas("Worker", 2, pod_spec={"schedulerName": "scheduler-plugins-scheduler"})
    first = Cluster(plugins.build(), config=LOCAL).step()
    (group,) = created(first, "PodGroup").values()
    assert group["apiVersion"] == "scheduling.x-k8s.io/v1alpha1"
    worker = created(first)["test-job-worker-0"]
    assert worker["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == "test-job"


def test_pods_naming_no_gang_scheduler_get_no_pod_group_and_a_declared_one_wins() -> None:
    mine = job("TFJob").replicas("Worker", 2, pod_spec={"schedulerName": "mine"})
    assert created(Cluster(mine.build(), config=LOCAL).step(), "PodGroup") == {}
    plain = job("TFJob").replicas("Worker", 2)
    assert created(Cluster(plain.build(), config=LOCAL).step(), "PodGroup") == {}

    declared = ControllerConfig(
        gang_scheduler_name="volcano", gang_schedulers_named_by_pods=LOCAL.gang_schedulers_named_by_pods
    )
    other = job("TFJob").replicas("Worker", 2, pod_spec={"schedulerName": "scheduler-plugins-scheduler"})
    (group,) = created(Cluster(other.build(), config=declared).step(), "PodGroup").values()
    assert group["apiVersion"] == "scheduling.volcano.sh/v1beta1"
