"""The shared core/v1 Event builder: what kubectl describe and get events read."""

from __future__ import annotations

from kubetrain.kube.events import core_event, object_reference

POD = {"namespace": "ns", "name": "p", "uid": "u1", "labels": {"ignored": "yes"}}


def test_server_named_event_without_a_host() -> None:
    involved = object_reference("v1", "Pod", POD)
    assert involved == {"apiVersion": "v1", "kind": "Pod", "namespace": "ns", "name": "p", "uid": "u1"}
    event = core_event(involved, "Warning", "FailedScheduling", "no room", "default-scheduler", 0.0)
    assert event["metadata"] == {"namespace": "ns", "generateName": "p."}
    assert event["source"] == {"component": "default-scheduler"}
    assert "reportingInstance" not in event
    assert (event["count"], event["firstTimestamp"], event["lastTimestamp"]) == (
        1,
        "1970-01-01T00:00:00Z",
        "1970-01-01T00:00:00Z",
    )


def test_named_event_with_a_host_reports_its_instance() -> None:
    involved = object_reference("kubeflow.org/v1", "PyTorchJob", {"name": "job"})
    event = core_event(
        involved, "Normal", "Created", "ok", "pytorchjob-controller", 1.0, host="", name="job.1f"
    )
    assert event["metadata"] == {"namespace": "default", "name": "job.1f"}
    assert event["source"] == {"component": "pytorchjob-controller"} and event["reportingInstance"] == ""
    kubelet = core_event(involved, "Normal", "Pulled", "ok", "kubelet", 1.0, host="node-1")
    assert kubelet["source"] == {"component": "kubelet", "host": "node-1"}
    assert kubelet["reportingInstance"] == "node-1"
