"""Suspend/resume, managedBy, invalid jobs, ownership (docs/upstream-behaviour.md#reconcile,
#conditions, #lifecycle)."""

from __future__ import annotations

import pytest

from kubetrain.controller.config import ControllerConfig
from kubetrain.controller.plan import Observed, PatchObject, Plan
from kubetrain.kinds.registry import plan

from .builders import (
    T0,
    Cluster,
    actions_summary,
    at,
    conditions,
    created,
    deleted,
    event_list,
    job,
    pod,
    service,
    stamp,
)

KINDS_TWO_TYPES = [
    ("TFJob", "PS", "Worker"),
    ("PyTorchJob", "Master", "Worker"),
    ("XGBoostJob", "Master", "Worker"),
    ("PaddleJob", "Master", "Worker"),
    ("JAXJob", None, "Worker"),
]


def _builder(kind: str, first: str | None, second: str):  # type: ignore[no-untyped-def]
    builder = job(kind)
    if first is not None:
        builder.replicas(first, 1)
    return builder.replicas(second, 1)


@pytest.mark.parametrize(("kind", "first", "second"), KINDS_TWO_TYPES)
def test_suspended_at_creation(kind: str, first: str | None, second: str) -> None:
    c = Cluster(_builder(kind, first, second).suspend().build())
    result = c.step()
    assert result.actions == []
    assert conditions(result.status) == [
        ("Created", "True", f"{kind}Created", f"{kind} test-job is created."),
        ("Suspended", "True", f"{kind}Suspended", f"{kind} test-job is suspended."),
    ]
    assert result.status is not None and "startTime" not in result.status
    assert ("Normal", f"{kind}Suspended", f"{kind} test-job is suspended.") in event_list(result)
    assert c.plan(at(5)).status is None


@pytest.mark.parametrize(("kind", "first", "second"), KINDS_TWO_TYPES)
def test_suspend_after_running_then_resume(kind: str, first: str | None, second: str) -> None:
    c = Cluster(_builder(kind, first, second).build())
    c.step()
    c.set_pods(None, lambda p: p.running())
    running = c.step(at(1))
    assert conditions(running.status)[-1][0:2] == ("Running", "True")
    running_reason, running_message = conditions(running.status)[-1][2:]
    n_pods = len(c.pods)

    c.job["spec"].setdefault("runPolicy", {})["suspend"] = True
    suspended = c.step(at(2))
    msg = f"{kind} test-job is suspended."
    assert conditions(suspended.status) == [
        ("Created", "True", f"{kind}Created", f"{kind} test-job is created."),
        ("Running", "False", f"{kind}Suspended", msg),
        ("Suspended", "True", f"{kind}Suspended", msg),
    ]
    assert len(deleted(suspended)) == n_pods and len(deleted(suspended, "Service")) == n_pods
    assert suspended.status is not None
    assert all(rs.get("active", 0) == 0 for rs in suspended.status["replicaStatuses"].values())
    assert suspended.status["startTime"] == stamp()
    assert c.pods == {} and c.services == {}

    c.job["spec"]["runPolicy"]["suspend"] = False
    resumed = c.step(at(10))
    assert conditions(resumed.status) == [
        ("Created", "True", f"{kind}Created", f"{kind} test-job is created."),
        ("Running", "False", f"{kind}Suspended", msg),
        ("Suspended", "False", f"{kind}Resumed", f"{kind} test-job is resumed."),
    ]
    assert resumed.status is not None and resumed.status["startTime"] == stamp(10)
    assert ("Normal", f"{kind}Resumed", f"{kind} test-job is resumed.") in event_list(resumed)
    assert len(created(resumed)) == n_pods

    c.set_pods(None, lambda p: p.running())
    again = c.step(at(11))
    assert conditions(again.status) == [
        ("Created", "True", f"{kind}Created", f"{kind} test-job is created."),
        ("Suspended", "False", f"{kind}Resumed", f"{kind} test-job is resumed."),
        ("Running", "True", running_reason, running_message),
    ]


@pytest.mark.parametrize("manager", ["kueue.x-k8s.io/multikueue", "someone/else"])
def test_managed_by_external_controller_gives_empty_plan(manager: str) -> None:
    raw = job("PyTorchJob").replicas("Master", 1).managed_by(manager).build()
    result = plan(raw, Observed(), T0, ControllerConfig())
    assert result == Plan()


def test_managed_by_training_operator_is_reconciled() -> None:
    raw = job("PyTorchJob").replicas("Master", 1).managed_by("kubeflow.org/training-operator").build()
    assert created(plan(raw, Observed(), T0, ControllerConfig()))


def test_deleting_job_gives_empty_plan() -> None:
    raw = job("TFJob").replicas("Worker", 1).build()
    raw["metadata"]["deletionTimestamp"] = stamp()
    assert plan(raw, Observed(), T0, ControllerConfig()) == Plan()


def test_invalid_job_fails_with_validation_message_and_creates_nothing() -> None:
    raw = job("PyTorchJob").replicas("Master", 2).build()
    c = Cluster(raw)
    result = c.step()
    message = "spec.pytorchReplicaSpecs[Master].replicas: Forbidden: must be 1"
    assert result.actions == []
    assert conditions(result.status) == [
        ("Created", "True", "PyTorchJobCreated", "PyTorchJob test-job is created."),
        ("Failed", "True", "PyTorchJobFailedValidation", message),
    ]
    assert event_list(result) == [("Warning", "PyTorchJobFailedValidation", message)]
    assert result.status is not None and result.status["completionTime"] == stamp()
    again = c.plan(at(1))
    assert again.actions == [] and again.status is None and again.events == []


def test_structurally_broken_job_fails_validation() -> None:
    raw = job("TFJob").replicas("Worker", 1).build()
    raw["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = "two"
    result = plan(raw, Observed(), T0, ControllerConfig())
    assert result.actions == []
    assert conditions(result.status)[-1][0:3] == ("Failed", "True", "TFJobFailedValidation")
    assert "spec.tfReplicaSpecs[Worker].replicas" in conditions(result.status)[-1][3]


@pytest.mark.parametrize(
    "raw",
    [
        None,
        42,
        "x",
        {},
        {"kind": "NopeJob", "apiVersion": "kubeflow.org/v1", "metadata": {"name": "a"}},
        {"kind": "MPIJob", "apiVersion": "kubeflow.org/v1", "metadata": {"name": "a"}},
        {"kind": "TFJob"},
    ],
)
def test_unparseable_or_unknown_kind_never_raises(raw: object) -> None:
    result = plan(raw, Observed(), T0, ControllerConfig())  # type: ignore[arg-type]
    assert result.actions == [] and result.status is None
    assert all(e.type == "Warning" for e in result.events)


def test_unknown_kind_warns_when_named() -> None:
    raw = {"kind": "NopeJob", "apiVersion": "kubeflow.org/v1", "metadata": {"name": "a"}}
    (event,) = plan(raw, Observed(), T0, ControllerConfig()).events
    assert event.reason == "NopeJobFailedValidation"


def test_orphan_pods_are_ignored_and_foreign_pods_too() -> None:
    b = job("TFJob").replicas("Worker", 2)
    orphan = pod(b, "Worker", 0).running().orphan().build()
    foreign = pod(b, "Worker", 1).running().build()
    foreign["metadata"]["ownerReferences"][0]["uid"] = "other-job"
    result = plan(b.build(), Observed(pods=[orphan, foreign]), T0, ControllerConfig())
    # Not adopted, not counted; their names are taken, so the create is reported as failing
    # instead of being retried forever.
    assert created(result) == {}
    assert [e for e in event_list(result) if e[1] == "FailedCreatePod"] == [
        ("Warning", "FailedCreatePod", f'Error creating: pods "test-job-worker-{i}" already exists')
        for i in (0, 1)
    ]
    assert not any(isinstance(a, PatchObject) and a.ref.kind == "Pod" for a in result.actions)
    assert result.status is not None and result.status["replicaStatuses"]["Worker"] == {}


def test_orphan_service_is_adopted_with_uid_precondition() -> None:
    b = job("TFJob").replicas("Worker", 1)
    svc = service(b, "Worker", 0, owned=False)
    result = plan(b.build(), Observed(services=[svc]), T0, ControllerConfig())
    patches = [a for a in result.actions if isinstance(a, PatchObject)]
    assert patches == [
        PatchObject(
            patches[0].ref,
            {
                "metadata": {
                    "ownerReferences": [
                        {
                            "apiVersion": "kubeflow.org/v1",
                            "kind": "TFJob",
                            "name": "test-job",
                            "uid": "job-uid-1",
                            "controller": True,
                            "blockOwnerDeletion": True,
                        }
                    ],
                    "uid": svc["metadata"]["uid"],
                }
            },
        )
    ]
    assert patches[0].ref.name == "test-job-worker-0"
    assert created(result, "Service") == {}  # adopted, not recreated


def test_owned_service_with_other_labels_is_released() -> None:
    b = job("TFJob").replicas("Worker", 1)
    svc = service(b, "Worker", 0)
    svc["metadata"]["labels"]["training.kubeflow.org/job-name"] = "renamed"
    result = plan(b.build(), Observed(services=[svc]), T0, ControllerConfig())
    patches = [a for a in result.actions if isinstance(a, PatchObject)]
    assert [p.patch["metadata"]["ownerReferences"] for p in patches] == [[]]


def test_duplicate_pods_at_one_index_are_left_alone() -> None:
    b = job("TFJob").replicas("Worker", 1)
    one, two = pod(b, "Worker", 0).running().build(), pod(b, "Worker", 0).running().build()
    two["metadata"]["name"] = "dup"
    result = plan(
        b.build(), Observed(pods=[one, two], services=[service(b, "Worker", 0)]), T0, ControllerConfig()
    )
    assert actions_summary(result) == []


def test_abnormal_pod_events() -> None:
    b = job("TFJob").replicas("Worker", 2)
    waiting = pod(b, "Worker", 0).build()
    waiting["status"]["containerStatuses"] = [
        {
            "name": "tensorflow",
            "state": {"waiting": {"reason": "ImagePullBackOff", "message": "no such image"}},
        }
    ]
    unschedulable = pod(b, "Worker", 1).build()
    unschedulable["status"]["conditions"] = [
        {
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": "0/3 nodes",
            "lastTransitionTime": stamp(),
        }
    ]
    observed = Observed(
        pods=[waiting, unschedulable], services=[service(b, "Worker", 0), service(b, "Worker", 1)]
    )
    result = plan(b.build(), observed, T0, ControllerConfig())
    assert event_list(result) == [
        (
            "Warning",
            "ImagePullBackOff",
            "Error pod test-job-worker-0 container tensorflow waiting message: no such image",
        ),
        ("Warning", "Unschedulable", "Error pod test-job-worker-1 condition message: 0/3 nodes"),
    ]


def test_same_input_gives_same_plan() -> None:
    b = job("PyTorchJob").replicas("Master", 1).replicas("Worker", 3).active_deadline(100)
    observed = Observed(pods=[pod(b, "Worker", 1).running().build()])
    first = plan(b.build(), observed, at(7), ControllerConfig())
    second = plan(b.build(), observed, at(7), ControllerConfig())
    assert first == second
