"""One sync of a StatefulSet, as kube-controller-manager's stateful_set_control.go decides it."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.embedded.statefulset import revisions as rev
from kubetrain.embedded.statefulset.identity import new_pod, parent_and_ordinal
from kubetrain.embedded.statefulset.plan import Revisions, plan

JsonDict = dict[str, Any]
NOW = 1_000_000.0


def make_set(replicas: int, policy: str = "OrderedReady", **spec: Any) -> JsonDict:
    return {
        "metadata": {"name": "web", "namespace": "ns", "uid": "u1", "generation": 3},
        "spec": {
            "replicas": replicas,
            "serviceName": "web",
            "podManagementPolicy": policy,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c"}]}},
            **spec,
        },
    }


SET = make_set(3)
REVS = Revisions("web-a", "web-a", SET["spec"]["template"], SET["spec"]["template"], 0)


def pod(index: int, phase: str = "Running", ready: bool = True, deleting: bool = False) -> JsonDict:
    out = new_pod(SET, SET["spec"]["template"], index, "web-a")
    out["metadata"]["uid"] = f"p{index}"
    out["status"] = {
        "phase": phase,
        "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
    }
    if deleting:
        out["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return out


def names(pods: list[JsonDict]) -> list[str]:
    return [p["metadata"]["name"] for p in pods]


@pytest.mark.parametrize(
    ("pods", "creates", "deletes"),
    [
        ([], ["web-0"], []),
        ([pod(0, "Pending", ready=False)], [], []),
        ([pod(0, ready=False)], [], []),
        ([pod(0)], ["web-1"], []),
        ([pod(0), pod(1, "Failed", ready=False)], [], ["web-1"]),
        ([pod(0), pod(1, deleting=True)], [], []),
        ([pod(0), pod(1), pod(2), pod(3), pod(4)], [], ["web-4"]),
        ([pod(0), pod(1), pod(2), pod(3, ready=False), pod(4)], [], ["web-4"]),
        ([pod(0), pod(1), pod(2), pod(3), pod(4, ready=False)], [], ["web-4"]),
        ([pod(0), pod(1), pod(2), pod(3, ready=False), pod(4, ready=False)], [], []),
        ([pod(0), pod(1, ready=False), pod(2), pod(3)], [], []),
    ],
    ids=[
        "first pod",
        "waits for pod 0 to run",
        "waits for pod 0 to be ready",
        "pod 1 after pod 0 is ready",
        "a failed pod is deleted (and recreated later)",
        "waits for a terminating pod",
        "scale down: the highest ordinal first",
        "scale down: the highest even when a lower condemned pod is unready",
        "scale down: the first unhealthy pod may go",
        "scale down: blocked behind an unhealthy lower pod",
        "scale down waits for every wanted pod to be healthy",
    ],
)
def test_ordered_ready(pods: list[JsonDict], creates: list[str], deletes: list[str]) -> None:
    result = plan(SET, pods, REVS, NOW)
    assert names(result.creates) == creates
    assert names(result.deletes) == deletes


def test_parallel_creates_and_deletes_everything_at_once() -> None:
    parallel = make_set(3, "Parallel")
    assert names(plan(parallel, [pod(1, "Pending", ready=False)], REVS, NOW).creates) == ["web-0", "web-2"]
    shrunk = make_set(1, "Parallel")
    result = plan(shrunk, [pod(0), pod(1), pod(2, ready=False)], REVS, NOW)
    assert names(result.deletes) == ["web-2", "web-1"]


def test_status_counts_as_kubernetes() -> None:
    result = plan(SET, [pod(0), pod(1, ready=False), pod(2, "Pending", ready=False)], REVS, NOW)
    assert result.status == {
        "observedGeneration": 3,
        "currentRevision": "web-a",
        "updateRevision": "web-a",
        "collisionCount": 0,
        "replicas": 3,
        "readyReplicas": 1,
        "availableReplicas": 1,
        "currentReplicas": 3,
        "updatedReplicas": 3,
    }


def test_min_ready_seconds_delays_availability_and_asks_to_look_again() -> None:
    slow = make_set(2, minReadySeconds=10)
    ready = pod(0)
    ready["status"]["conditions"][0]["lastTransitionTime"] = "1970-01-12T13:46:36Z"  # NOW - 4 s
    result = plan(slow, [ready], REVS, NOW)
    assert result.creates == []  # pod 0 is ready but not yet available
    assert result.status["availableReplicas"] == 0
    assert result.requeue_after == pytest.approx(6.0)


def test_rolling_update_replaces_the_highest_outdated_pod_first() -> None:
    update = Revisions("web-a", "web-b", SET["spec"]["template"], SET["spec"]["template"], 0)
    result = plan(SET, [pod(0), pod(1), pod(2)], update, NOW)
    assert names(result.deletes) == ["web-2"]
    assert result.status["currentReplicas"] == 2


def test_a_new_pod_has_its_identity() -> None:
    made = new_pod(SET, SET["spec"]["template"], 2, "web-a")
    assert made["metadata"]["name"] == "web-2"
    assert made["metadata"]["generateName"] == "web-"
    assert made["metadata"]["labels"] == {
        "app": "web",
        "statefulset.kubernetes.io/pod-name": "web-2",
        "apps.kubernetes.io/pod-index": "2",
        "controller-revision-hash": "web-a",
    }
    assert made["spec"]["hostname"] == "web-2"
    assert made["spec"]["subdomain"] == "web"
    assert parent_and_ordinal("my-set-12") == ("my-set", 12)
    assert parent_and_ordinal("web") == ("", -1)


def test_revision_names_hash_the_template_as_kubernetes_does() -> None:
    """The data and name kube-controller-manager 1.36 wrote for a set (recorded from a real plane)."""
    template = {
        "metadata": {"labels": {"app": "cnt"}},
        "spec": {
            "containers": [
                {
                    "command": ["python", "-c", "import time; time.sleep(3600)"],
                    "image": "python:3.11-slim",
                    "imagePullPolicy": "IfNotPresent",
                    "name": "main",
                    "resources": {},
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File",
                }
            ],
            "dnsPolicy": "ClusterFirst",
            "nodeSelector": {"kubetrain.test/no-such-node": "true"},
            "restartPolicy": "Always",
            "schedulerName": "default-scheduler",
            "securityContext": {},
            "terminationGracePeriodSeconds": 1,
        },
    }
    cnt = {"metadata": {"name": "cnt", "namespace": "ns", "uid": "u"}, "spec": {"template": template}}
    revision = rev.new_revision(cnt, 1, 0)
    assert revision["metadata"]["name"] == "cnt-688b4b657"
    assert revision["metadata"]["labels"] == {"app": "cnt", "controller.kubernetes.io/hash": "688b4b657"}
    assert rev.new_revision(cnt, 1, 1)["metadata"]["name"] != "cnt-688b4b657"  # a collision renames
    assert rev.template_of(revision) == template


def test_volume_claim_templates_become_empty_dirs_of_the_same_name() -> None:
    """The local plane provisions no PVCs (docs/differences.md): each claim is an emptyDir."""
    claimed = make_set(1, volumeClaimTemplates=[{"metadata": {"name": "data"}, "spec": {}}])
    claimed["spec"]["template"]["spec"]["volumes"] = [{"name": "data", "hostPath": {"path": "/x"}}]
    made = new_pod(claimed, claimed["spec"]["template"], 0, "web-a")
    assert made["spec"]["volumes"] == [{"name": "data", "emptyDir": {}}]
