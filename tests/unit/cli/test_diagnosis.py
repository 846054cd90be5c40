"""client.diagnosis: each pod problem in the node's and the scheduler's words, fatal when no retry helps."""

from __future__ import annotations

from typing import Any

from kubetrain.client.diagnosis import pod_findings, waiting_for

JOB = "job"
UNSCHEDULABLE = "0/1 nodes are available: 1 Insufficient cpu."


def _pod(containers: list[dict[str, Any]] | None = None, **status: Any) -> dict[str, Any]:
    return {
        "metadata": {
            "name": f"{JOB}-worker-1",
            "uid": "u1",
            "labels": {
                "training.kubeflow.org/replica-type": "worker",
                "training.kubeflow.org/replica-index": "1",
            },
        },
        "spec": {"containers": containers or [{"name": "c"}], "restartPolicy": "OnFailure"},
        "status": {"phase": "Pending", **status},
    }


def _node(**allocatable: str) -> dict[str, Any]:
    return {"metadata": {"name": "n"}, "status": {"allocatable": {"pods": "110", **allocatable}}}


def _unschedulable(requests: dict[str, str], limits: dict[str, str] | None = None) -> dict[str, Any]:
    resources = {"requests": requests, **({"limits": limits} if limits else {})}
    condition = {
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": UNSCHEDULABLE,
    }
    return _pod([{"name": "c", "resources": resources}], conditions=[condition])


def test_a_request_larger_than_every_node_is_fatal_and_says_by_how_much() -> None:
    [finding] = pod_findings(_unschedulable({"cpu": "64"}), JOB, [_node(cpu="2", memory="8Gi")])
    assert finding.fatal
    assert (
        finding.message
        == f"worker-1 can never be scheduled (it requests 64 cpu; the node has 2): {UNSCHEDULABLE}"
    )


def test_memory_is_said_in_binary_units_and_a_missing_gpu_as_zero() -> None:
    [memory] = pod_findings(_unschedulable({"memory": "64Gi"}), JOB, [_node(cpu="2", memory="8Gi")])
    assert "it requests 64Gi memory; the node has 8Gi" in memory.message
    [gpu] = pod_findings(_unschedulable({}, {"nvidia.com/gpu": "1"}), JOB, [_node(cpu="2")])
    assert gpu.fatal and "it requests 1 nvidia.com/gpu; the node has 0" in gpu.message


def test_a_request_that_fits_an_empty_node_only_waits() -> None:
    [finding] = pod_findings(_unschedulable({"cpu": "1"}), JOB, [_node(cpu="2")])
    assert not finding.fatal and finding.message == f"worker-1 is not scheduled: {UNSCHEDULABLE}"
    [unknown] = pod_findings(_unschedulable({"cpu": "64"}), JOB, [])  # no nodes known: cannot tell
    assert not unknown.fatal


def test_the_largest_of_several_nodes_is_named() -> None:
    nodes = [_node(cpu="2"), _node(cpu="8")]
    [finding] = pod_findings(_unschedulable({"cpu": "64"}), JOB, nodes)
    assert "it requests 64 cpu; the largest node has 8" in finding.message


def test_a_start_error_is_said_at_once_and_is_fatal_when_a_restart_met_it_again() -> None:
    message = 'exec: "/nonexistent/train": executable file not found in $PATH'
    first = {
        "name": "c",
        "restartCount": 0,
        "state": {"waiting": {"reason": "RunContainerError", "message": message}},
    }
    [said] = pod_findings(_pod(containerStatuses=[first], phase="Running"), JOB)
    assert said.message == f"worker-1 cannot start container c: {message}" and not said.fatal
    again = {
        "name": "c",
        "restartCount": 2,
        "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 20s"}},
        "lastState": {"terminated": {"reason": "StartError", "exitCode": 128, "message": message}},
    }
    [fatal] = pod_findings(_pod(containerStatuses=[again], phase="Running"), JOB)
    assert fatal.fatal and fatal.key == said.key  # said once, then it stops the run


def test_a_never_policy_start_error_is_said_but_the_job_fails_by_itself() -> None:
    terminated = {"reason": "StartError", "exitCode": 128, "message": "no entrypoint"}
    status = {"name": "c", "restartCount": 0, "state": {"terminated": terminated}}
    [finding] = pod_findings(_pod(containerStatuses=[status], phase="Failed"), JOB)
    assert finding.message == "worker-1 cannot start container c: no entrypoint" and not finding.fatal


def test_each_restart_is_one_line_with_the_exit_code_and_the_policy() -> None:
    status = {
        "name": "c",
        "restartCount": 3,
        "state": {"running": {}},
        "lastState": {"terminated": {"reason": "Error", "exitCode": 1}},
    }
    [finding] = pod_findings(_pod(containerStatuses=[status], phase="Running"), JOB)
    assert finding.message == "worker-1 exited with code 1, restart 3 (OnFailure)"
    assert finding.key == ("restart", "u1", "c", "3")


def test_why_a_pod_is_not_running() -> None:
    volcano = _pod()
    volcano["spec"]["schedulerName"] = "volcano"
    assert waiting_for(volcano) == "Pending: waits for the scheduler 'volcano'"
    assert waiting_for(_unschedulable({"cpu": "1"})) == f"Pending: {UNSCHEDULABLE}"
    creating = _pod(containerStatuses=[{"name": "c", "state": {"waiting": {"reason": "ContainerCreating"}}}])
    assert waiting_for(creating) == "Pending: c ContainerCreating"


def test_a_gang_larger_than_the_job_never_fills() -> None:
    pods, group = "current pods number: 2", "minMember of group: 3"
    coscheduling = f"pre-filter pod job-worker-1 cannot find enough sibling pods, {pods}, {group}"
    volcano = "Not enough valid tasks for gang-scheduling, valid: 2, min: 3"
    for message in (coscheduling, volcano):
        pod = _unschedulable({})
        pod["status"]["conditions"][0]["message"] = message
        [never] = pod_findings(pod, JOB, [_node(cpu="2")], job_pods=2)
        assert never.fatal and "its gang needs 3 pods, the job has 2" in never.message
        [waits] = pod_findings(pod, JOB, [_node(cpu="2")], job_pods=3)  # the third pod may still come
        assert not waits.fatal
