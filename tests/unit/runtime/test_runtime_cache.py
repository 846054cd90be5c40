from typing import Any

from kubetrain.runtime.cache import (
    INDEX_JOB_NAME,
    INDEX_NAMESPACE,
    INDEX_OWNER_UID,
    Store,
    controller_owner,
    object_key,
)
from kubetrain.runtime.trim import trim_for, trim_generic, trim_pod, trim_service


def full_pod(name: str = "job-worker-0", rv: str = "1", owner_uid: str = "uid-1") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": f"pod-{name}",
            "resourceVersion": rv,
            "labels": {"training.kubeflow.org/job-name": "job", "training.kubeflow.org/replica-index": "0"},
            "annotations": {"a": "b", "kubectl.kubernetes.io/last-applied-configuration": "{...}"},
            "ownerReferences": [
                {
                    "apiVersion": "kubeflow.org/v1",
                    "kind": "PyTorchJob",
                    "name": "job",
                    "uid": owner_uid,
                    "controller": True,
                    "blockOwnerDeletion": True,
                },
                {"apiVersion": "v1", "kind": "Other", "name": "x", "uid": "other"},
            ],
            "creationTimestamp": "2024-01-01T00:00:00Z",
            "managedFields": [{"manager": "kubetrain", "fieldsV1": {"f:spec": {}}}],
            "generateName": "ignored-",
        },
        "spec": {
            "nodeName": "node-1",
            "restartPolicy": "OnFailure",
            "containers": [{"name": "pytorch", "image": "img", "env": [{"name": "X", "value": "1"}]}],
            "initContainers": [{"name": "init-pytorch", "image": "alpine"}],
            "volumes": [{"name": "v"}],
        },
        "status": {
            "phase": "Running",
            "podIP": "10.0.0.1",
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [{"name": "pytorch", "restartCount": 2, "state": {"running": {}}}],
            "qosClass": "BestEffort",
            "hostIP": "1.2.3.4",
        },
    }


def test_trim_pod_keeps_only_what_the_reconciler_reads() -> None:
    t = trim_pod(full_pod())
    meta = t["metadata"]
    assert set(meta) == {
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "labels",
        "annotations",
        "ownerReferences",
        "creationTimestamp",
    }
    assert meta["annotations"] == {"a": "b"}
    assert t["spec"] == {
        "nodeName": "node-1",
        "restartPolicy": "OnFailure",
        "containers": [{"name": "pytorch"}],
        "initContainers": [{"name": "init-pytorch"}],
    }
    assert t["status"] == {
        "phase": "Running",
        "podIP": "10.0.0.1",
        "conditions": [{"type": "Ready", "status": "True"}],
        "containerStatuses": [{"name": "pytorch", "restartCount": 2, "state": {"running": {}}}],
    }
    assert t["kind"] == "Pod" and t["apiVersion"] == "v1"


def test_trim_does_not_alias_the_input() -> None:
    src = full_pod()
    t = trim_pod(src)
    src["metadata"]["labels"]["x"] = "y"
    assert "x" not in t["metadata"]["labels"]


def test_trim_service_and_generic() -> None:
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "s", "namespace": "ns", "managedFields": [{}]},
        "spec": {
            "clusterIP": "None",
            "ports": [{"port": 23456}],
            "selector": {"a": "b"},
            "type": "ClusterIP",
        },
        "status": {"loadBalancer": {}},
    }
    assert trim_service(svc) == {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "s", "namespace": "ns"},
        "spec": {"clusterIP": "None", "ports": [{"port": 23456}], "selector": {"a": "b"}},
    }
    job = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {
            "name": "j",
            "namespace": "ns",
            "managedFields": [{}],
            "generateName": "j-",
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "big"},
        },
        "spec": {"pytorchReplicaSpecs": {}},
        "status": {"conditions": []},
    }
    t = trim_generic(job)
    assert t["spec"] == job["spec"] and t["status"] == job["status"]
    assert t["metadata"] == {"name": "j", "namespace": "ns", "generateName": "j-", "annotations": {}}
    assert trim_for("v1", "Pod") is trim_pod
    assert trim_for("kubeflow.org/v1", "TFJob") is trim_generic


def test_keys_and_controller_owner() -> None:
    pod = full_pod()
    assert object_key(pod) == "ns/job-worker-0"
    assert object_key({"metadata": {"name": "cluster-thing"}}) == "cluster-thing"
    assert controller_owner(pod)["uid"] == "uid-1"  # type: ignore[index]
    assert controller_owner({"metadata": {}}) is None


def test_store_indexes_follow_updates_and_deletes() -> None:
    s = Store(trim_pod)
    change = s.upsert(full_pod("a", rv="1", owner_uid="u1"))
    assert change is not None and change.type == "ADDED" and change.old is None
    s.upsert(full_pod("b", rv="2", owner_uid="u1"))
    assert [p["metadata"]["name"] for p in s.by_index(INDEX_OWNER_UID, "u1")] == ["a", "b"]
    assert len(s.by_index(INDEX_JOB_NAME, "ns/job")) == 2
    assert len(s.by_index(INDEX_NAMESPACE, "ns")) == 2 and s.list("other") == []
    # Re-owned object moves between index buckets.
    change = s.upsert(full_pod("a", rv="3", owner_uid="u2"))
    assert (
        change is not None and change.type == "MODIFIED" and change.old["metadata"]["resourceVersion"] == "1"
    )  # type: ignore[index]
    assert [p["metadata"]["name"] for p in s.by_index(INDEX_OWNER_UID, "u1")] == ["b"]
    assert [p["metadata"]["name"] for p in s.by_index(INDEX_OWNER_UID, "u2")] == ["a"]
    removed = s.remove(full_pod("a"))
    assert removed is not None and removed.type == "DELETED" and removed.new is None
    assert s.by_index(INDEX_OWNER_UID, "u2") == []
    assert s.remove(full_pod("a")) is None
    assert len(s) == 1 and "ns/b" in s


def test_store_ignores_same_resource_version() -> None:
    s = Store()
    assert s.upsert(full_pod("a", rv="5")) is not None
    assert s.upsert(full_pod("a", rv="5")) is None


def test_store_replace_reports_diff() -> None:
    s = Store(trim_pod)
    s.upsert(full_pod("a", rv="1"))
    s.upsert(full_pod("b", rv="1"))
    changes = s.replace([full_pod("a", rv="1"), full_pod("b", rv="2"), full_pod("c", rv="1")])
    assert [(c.type, (c.new or c.old)["metadata"]["name"]) for c in changes] == [
        ("MODIFIED", "b"),
        ("ADDED", "c"),
    ]  # type: ignore[index]
    changes = s.replace([full_pod("c", rv="1")])
    assert sorted((c.type, c.old["metadata"]["name"]) for c in changes) == [
        ("DELETED", "a"),
        ("DELETED", "b"),
    ]  # type: ignore[index]
    assert list(s.keys()) == ["ns/c"]
    assert s.by_index(INDEX_JOB_NAME, "ns/job") == [s.get("ns", "c")]
