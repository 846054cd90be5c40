"""The comparator itself, without a control plane: what it normalises must not hide what differs."""

from __future__ import annotations

import copy
from typing import Any

from tests.differential import compare, deliberate

JsonDict = dict[str, Any]


def _run(namespace: str, uid: str, master: str) -> tuple[JsonDict, list[JsonDict], dict[str, list[JsonDict]]]:
    job = {
        "metadata": {"name": "j", "namespace": namespace, "uid": uid},
        "status": {"conditions": [{"type": "Created", "status": "True", "reason": "PyTorchJobCreated"}]},
    }
    pod = {
        "metadata": {
            "name": "j-worker-0",
            "namespace": namespace,
            "uid": uid + "-pod",
            "resourceVersion": uid,
            "labels": {"batch.kubernetes.io/controller-uid": uid},
            "ownerReferences": [{"kind": "PyTorchJob", "name": "j", "uid": uid, "controller": True}],
        },
        "spec": {
            "nodeName": "n",
            "containers": [
                {
                    "name": "pytorch",
                    "env": [{"name": "MASTER_ADDR", "value": master}, {"name": "WORLD_SIZE", "value": "2"}],
                    "volumeMounts": [{"name": f"kube-api-access-{uid[:5]}", "mountPath": "/var/run"}],
                }
            ],
        },
    }
    launcher = {"metadata": {"name": "x", "generateName": "j-launcher-", "uid": uid + "-l"}, "spec": {}}
    return job, [pod, launcher], {}


def test_runs_that_differ_only_in_what_must_differ_are_equal() -> None:
    ours = compare.view(*_run("kubetrain-1", "aaaaa-1", "j-master-0.kubetrain-1.svc"))
    theirs = compare.view(*_run("upstream-1", "bbbbb-2", "j-master-0.upstream-1.svc"))
    assert compare.differences(theirs, ours) == []
    assert ours["Pod.j-worker-0.spec.containers[pytorch].env[WORLD_SIZE].value"] == "2"
    assert "Pod.j-launcher-<generated>.metadata.name" in ours


def test_a_changed_env_value_is_a_difference_named_by_its_variable() -> None:
    job, pods, children = _run("kubetrain-1", "aaaaa-1", "j-master-0")
    changed = copy.deepcopy(pods)
    changed[0]["spec"]["containers"][0]["env"][1]["value"] = "3"
    diffs = compare.differences(compare.view(job, pods, children), compare.view(job, changed, children))
    path = "Pod.j-worker-0.spec.containers[pytorch].env[WORLD_SIZE].value"
    assert diffs == [(path, "2", "3")]
    assert deliberate.explained(path, "2", "3", compare.MISSING) is None


def test_deliberate_entries_accept_only_their_own_values() -> None:
    path = "Job.j-launcher.spec.podReplacementPolicy"
    assert deliberate.explained(path, "TerminatingOrFailed", "Failed", compare.MISSING) is not None
    assert deliberate.explained(path, "Failed", "TerminatingOrFailed", compare.MISSING) is None
    selector = "job.status.replicaStatuses.Worker.selector"
    assert deliberate.explained(selector, compare.MISSING, "a=b", compare.MISSING) is not None
    assert deliberate.explained(selector, "a=c", "a=b", compare.MISSING) is None


def _event(reason: str, message: str, component: str = "pytorchjob-controller") -> JsonDict:
    return {"type": "Warning", "reason": reason, "message": message, "source": {"component": component}}


def test_events_are_compared_by_reason_message_and_component_not_by_timing() -> None:
    def events(namespace: str, uid: str, back_off: str) -> list[JsonDict]:
        crash = f"back-off {back_off} restarting failed container=pytorch pod=j-worker-1_{namespace}({uid})"
        return [
            _event("CrashLoopBackOff", crash),
            _event("ExitedWithCode", f"Pod: {namespace}.j-worker-1 exited"),
        ]

    theirs_run = _run("upstream-1", "bbbbb-2", "m")
    ours_run = _run("kubetrain-1", "aaaaa-1", "m")
    theirs = compare.view(
        *theirs_run, events=events("upstream-1", "0b7c2f3e-0000-4000-8000-000000000001", "10s")
    )
    ours = compare.view(
        *ours_run, events=events("kubetrain-1", "0b7c2f3e-0000-4000-8000-000000000002", "20s")
    )
    assert compare.differences(theirs, ours) == []
    assert not any("ExitedWithCode" in path for path in ours)  # recorded or not by pass timing
    other = compare.view(*ours_run, events=[_event("CrashLoopBackOff", "x", component="mpi-operator")])
    assert compare.differences(theirs, other)  # a message or component that differs is a difference


def test_condition_transitions_are_a_sequence() -> None:
    running = {"type": "Running", "status": "True", "reason": "R", "message": "m"}
    lines = [compare.transition(running), compare.transition({**running, "status": "False"})]
    theirs = compare.view(*_run("upstream-1", "bbbbb-2", "m"), transitions=lines)
    ours = compare.view(*_run("kubetrain-1", "aaaaa-1", "m"), transitions=lines[::-1])
    assert [path for path, _, _ in compare.differences(theirs, ours)] == [
        "job.transitions.0",
        "job.transitions.1",
    ]


def test_a_scenario_bound_entry_accepts_only_in_its_scenario() -> None:
    path = "Pod.j-worker-0.metadata.name"
    assert (
        deliberate.explained(path, compare.MISSING, "j", compare.MISSING, "backoff-limit-clean-none")
        is not None
    )
    assert (
        deliberate.explained(path, compare.MISSING, "j", compare.MISSING, "backoff-limit-clean-all") is None
    )


def test_a_service_only_upstream_left_is_accepted_only_where_ours_is_gone() -> None:
    path = "Service.j-worker-0.spec.clusterIP"
    scenario = "backoff-limit-clean-all"
    assert deliberate.explained(path, "None", compare.MISSING, compare.MISSING, scenario) is not None
    assert deliberate.explained("Service", compare.MISSING, {}, compare.MISSING, scenario) is not None
    assert deliberate.explained(path, "None", "10.0.0.1", compare.MISSING, scenario) is None
    assert deliberate.explained(path, compare.MISSING, "None", compare.MISSING, scenario) is None
    assert deliberate.explained(path, "None", compare.MISSING, compare.MISSING, "tfjob-ps-worker") is None


def test_an_event_upstream_lacks_is_accepted_only_once_its_spam_filter_may_have_dropped_it() -> None:
    path = "job.events.Normal.TFJobSucceeded.TFJob <namespace>/j successfully completed."
    ours = "tfjob-controller"
    assert deliberate.explained(path, compare.MISSING, ours, compare.MISSING, "s", 24) is None
    assert deliberate.explained(path, compare.MISSING, ours, compare.MISSING, "s", 25) is not None
    assert (
        deliberate.explained(path, ours, compare.MISSING, compare.MISSING, "s", 99) is None
    )  # ours lacks it
