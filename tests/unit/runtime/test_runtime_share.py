"""Equal subtrees of cached objects are stored once (runtime/share.py, trim.py)."""

from typing import Any

from kubetrain.runtime.share import Sharer
from kubetrain.runtime.trim import trim_pod, trim_service


def pod(name: str, job_uid: str = "job-uid", node: str = "node-1") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": f"uid-{name}",
            "resourceVersion": "7",
            "labels": {"training.kubeflow.org/job-name": "job"},
            "ownerReferences": [
                {
                    "apiVersion": "kubeflow.org/v1",
                    "kind": "PyTorchJob",
                    "name": "job",
                    "uid": job_uid,
                    "controller": True,
                }
            ],
        },
        "spec": {
            "nodeName": node,
            "restartPolicy": "OnFailure",
            "containers": [{"name": "pytorch", "image": "i"}],
        },
        "status": {
            "phase": "Pending",
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": "no nodes available to schedule pods",
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                    "lastProbeTime": None,
                    "observedGeneration": 1,
                }
            ],
        },
    }


def test_sharer_returns_the_first_equal_value() -> None:
    share = Sharer()
    first = share({"a": [1, 2], "b": "x"})
    again = share({"b": "x", "a": [1, 2]})
    other = share({"a": [1, 3], "b": "x"})
    assert again is first
    assert other is not first and other == {"a": [1, 3], "b": "x"}


def test_sharer_is_bounded_and_keeps_values_it_cannot_key() -> None:
    share = Sharer(max_entries=2)
    share(["a"]), share(["b"]), share(["c"])
    assert len(share) == 1  # started over when full
    huge = [2**70]  # not JSON-encodable by orjson: returned as given, never shared
    assert share(huge) is huge and share([2**70]) is not huge


def test_pods_of_one_job_share_owner_references_and_spec() -> None:
    a, b = trim_pod(pod("a")), trim_pod(pod("b"))
    assert a["metadata"]["ownerReferences"] is b["metadata"]["ownerReferences"]
    assert a["spec"] is b["spec"] and a["spec"] == {
        "nodeName": "node-1",
        "restartPolicy": "OnFailure",
        "containers": [{"name": "pytorch"}],
    }
    assert a["metadata"]["uid"] == "uid-a" and b["metadata"]["uid"] == "uid-b"
    c = trim_pod(pod("c", job_uid="other-job", node="node-2"))
    assert c["metadata"]["ownerReferences"] is not a["metadata"]["ownerReferences"]
    assert c["spec"] is not a["spec"] and c["spec"]["nodeName"] == "node-2"


def test_services_share_owner_references() -> None:
    def svc(name: str) -> dict[str, Any]:
        p = pod(name)
        return {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": p["metadata"],
            "spec": {"clusterIP": "None"},
        }

    assert (
        trim_service(svc("a"))["metadata"]["ownerReferences"]
        is trim_service(svc("b"))["metadata"]["ownerReferences"]
    )


def test_shared_subtrees_do_not_alias_the_input() -> None:
    src = pod("a")
    trimmed = trim_pod(src)
    src["spec"]["restartPolicy"] = "Never"
    src["metadata"]["ownerReferences"][0]["uid"] = "changed"
    assert trimmed["spec"]["restartPolicy"] == "OnFailure"
    assert trimmed["metadata"]["ownerReferences"][0]["uid"] == "job-uid"
    assert trim_pod(pod("b"))["spec"] is trimmed["spec"]


def test_pod_conditions_keep_what_the_reconciler_reads() -> None:
    (condition,) = trim_pod(pod("a"))["status"]["conditions"]
    assert condition == {
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": "no nodes available to schedule pods",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }


def test_pods_that_changed_state_together_share_their_conditions() -> None:
    a, b = trim_pod(pod("a")), trim_pod(pod("b"))
    assert a["status"]["conditions"] is b["status"]["conditions"]
    later = pod("c")
    later["status"]["conditions"][0]["lastTransitionTime"] = "2026-01-01T00:00:01Z"
    c = trim_pod(later)
    assert c["status"]["conditions"] is not a["status"]["conditions"]
    assert c["status"]["conditions"][0]["lastTransitionTime"] == "2026-01-01T00:00:01Z"
    assert a["status"]["conditions"][0]["lastTransitionTime"] == "2026-01-01T00:00:00Z"


def test_pods_waiting_for_the_same_thing_share_status_and_creation_time() -> None:
    def created(name: str, at: str) -> dict[str, Any]:
        p = pod(name)
        p["metadata"]["creationTimestamp"] = "".join(at)  # a fresh string, as a decoder makes
        return p

    a = trim_pod(created("a", "2026-01-01T00:00:00Z"))
    b = trim_pod(created("b", "2026-01-01T00:00:00Z"))
    assert a["status"] is b["status"] and a["status"]["phase"] == "Pending"
    assert a["metadata"]["creationTimestamp"] is b["metadata"]["creationTimestamp"]
    running = created("c", "2026-01-01T00:00:00Z")
    running["status"] = {"phase": "Running", "podIP": "10.0.0.3"}
    c = trim_pod(running)
    assert c["status"] is not a["status"] and c["status"] == {"phase": "Running", "podIP": "10.0.0.3"}
