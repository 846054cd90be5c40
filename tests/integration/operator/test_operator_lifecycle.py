"""Suspend/resume, managedBy and invalid jobs end to end: the same condition lists as the planner's
unit tests (tests/unit/controller/test_lifecycle.py). Upstream's behaviour:
docs/upstream-behaviour.md#reconcile, #conditions, #upstream-tests, #lifecycle."""

from __future__ import annotations

import asyncio
import time

import pytest

from tests.builders import JobBuilder, job, pod_name
from tests.integration.operator.harness import Cluster, conditions

KINDS_TWO_TYPES = [
    ("TFJob", "PS", "Worker"),
    ("PyTorchJob", "Master", "Worker"),
    ("XGBoostJob", "Master", "Worker"),
    ("PaddleJob", "Master", "Worker"),
    ("JAXJob", None, "Worker"),
]


def two_types(kind: str, name: str, first: str | None, second: str) -> JobBuilder:
    builder = job(kind, name)
    if first is not None:
        builder.replicas(first, 1)
    return builder.replicas(second, 1)


def expected_pods(name: str, first: str | None, second: str) -> set[str]:
    return {pod_name(name, rt, 0) for rt in (first, second) if rt is not None}


@pytest.mark.parametrize(("kind", "first", "second"), KINDS_TWO_TYPES)
async def test_suspended_at_creation(cluster: Cluster, kind: str, first: str | None, second: str) -> None:
    await cluster.create(two_types(kind, "susp", first, second).suspend())
    msg = f"{kind} susp is suspended."
    job_obj = await cluster.wait_conditions(
        kind,
        "susp",
        [
            ("Created", "True", f"{kind}Created", f"{kind} susp is created."),
            ("Suspended", "True", f"{kind}Suspended", msg),
        ],
    )
    assert "startTime" not in job_obj["status"]
    await cluster.wait_events("susp", [("Normal", f"{kind}Suspended", msg)])
    await asyncio.sleep(0.2)
    assert await cluster.pod_names("susp") == set() and await cluster.services("susp") == set()


async def _next_second(after: str) -> None:
    """startTime has a one-second resolution: wait until a new value can be observed."""
    start_epoch = time.mktime(time.strptime(after, "%Y-%m-%dT%H:%M:%SZ")) - time.timezone
    delay = start_epoch + 1.05 - time.time()
    if delay > 0:
        await asyncio.sleep(delay)


@pytest.mark.parametrize(("kind", "first", "second"), KINDS_TWO_TYPES)
async def test_suspend_after_running_then_resume(
    cluster: Cluster, kind: str, first: str | None, second: str
) -> None:
    await cluster.create(two_types(kind, "sr", first, second))
    pods = expected_pods("sr", first, second)
    await cluster.wait_children("sr", pods)
    await cluster.kubelet.run_all("sr")
    running_job = await cluster.wait_last_condition(kind, "sr", "Running")
    running_reason, running_message = conditions(running_job)[-1][2:]
    first_start = running_job["status"]["startTime"]

    await cluster.patch_job(kind, "sr", {"spec": {"runPolicy": {"suspend": True}}})
    created = ("Created", "True", f"{kind}Created", f"{kind} sr is created.")
    msg = f"{kind} sr is suspended."
    suspended = await cluster.wait_conditions(
        kind,
        "sr",
        [
            created,
            ("Running", "False", f"{kind}Suspended", msg),
            ("Suspended", "True", f"{kind}Suspended", msg),
        ],
    )
    await cluster.wait_children("sr", set())  # all pods and services, whatever cleanPodPolicy says
    assert all(rs.get("active", 0) == 0 for rs in suspended["status"]["replicaStatuses"].values())
    assert suspended["status"]["startTime"] == first_start  # left as is until the resume
    await cluster.wait_events("sr", [("Normal", f"{kind}Suspended", msg)])

    await _next_second(first_start)
    await cluster.patch_job(kind, "sr", {"spec": {"runPolicy": {"suspend": False}}})
    resumed_cond = ("Suspended", "False", f"{kind}Resumed", f"{kind} sr is resumed.")
    resumed = await cluster.wait_conditions(
        kind, "sr", [created, ("Running", "False", f"{kind}Suspended", msg), resumed_cond]
    )
    assert resumed["status"]["startTime"] > first_start  # reset on resume
    await cluster.wait_events("sr", [("Normal", f"{kind}Resumed", f"{kind} sr is resumed.")])
    await cluster.wait_children("sr", pods)

    await cluster.kubelet.run_all("sr")
    await cluster.wait_conditions(
        kind, "sr", [created, resumed_cond, ("Running", "True", running_reason, running_message)]
    )


@pytest.mark.parametrize("manager", ["kueue.x-k8s.io/multikueue", "someone/else"])
async def test_managed_by_external_controller_is_untouched(cluster: Cluster, manager: str) -> None:
    await cluster.create(job("PyTorchJob", "external").replicas("Master", 1).managed_by(manager))
    # A job created after it is fully handled: the operator has seen (and skipped) the first one.
    await cluster.create(job("PyTorchJob", "witness").replicas("Master", 1))
    await cluster.wait_children("witness", {"witness-master-0"})
    await cluster.wait_last_condition("PyTorchJob", "witness", "Created")
    await asyncio.sleep(0.2)
    external = await cluster.get_job("PyTorchJob", "external")
    assert external is not None and not external.get("status")
    assert await cluster.pod_names("external") == set() and await cluster.services("external") == set()
    assert await cluster.events("external") == []


async def test_managed_by_training_operator_is_reconciled(cluster: Cluster) -> None:
    await cluster.create(
        job("PyTorchJob", "ours").replicas("Master", 1).managed_by("kubeflow.org/training-operator")
    )
    await cluster.wait_children("ours", {"ours-master-0"})


INVALID_CASES = [
    pytest.param(
        job("PyTorchJob", "bad").replicas("Master", 2).replicas("Worker", 1),
        "PyTorchJob",
        "spec.pytorchReplicaSpecs[Master].replicas: Forbidden: must be 1",
        id="two-masters",
    ),
    pytest.param(
        job("TFJob", "bad").replicas("Worker", 1, container="main"),
        "TFJob",
        None,
        id="no-default-container",
    ),
    pytest.param(
        job("JAXJob", "bad").replicas("Worker", 1, image=None),
        "JAXJob",
        None,
        id="no-image",
    ),
]


@pytest.mark.parametrize(("builder", "kind", "message"), INVALID_CASES)
async def test_invalid_job_fails_with_validation_message_while_a_valid_one_succeeds(
    cluster: Cluster, builder: JobBuilder, kind: str, message: str | None
) -> None:
    """The embedded server, like a cluster without the webhook, accepts what the CRD schema allows."""
    await cluster.create(builder)
    await cluster.create(job("PyTorchJob", "good").replicas("Master", 1))

    failed = await cluster.wait_last_condition(kind, "bad", "Failed")
    ctype, status, reason, text = conditions(failed)[-1]
    assert (ctype, status, reason) == ("Failed", "True", f"{kind}FailedValidation")
    assert conditions(failed)[0] == ("Created", "True", f"{kind}Created", f"{kind} bad is created.")
    if message is not None:
        assert text == message
    assert text.startswith(f"spec.{builder.info.replica_specs_field}")
    assert failed["status"]["completionTime"]
    await cluster.wait_events("bad", [("Warning", f"{kind}FailedValidation", text)])

    await cluster.wait_children("good", {"good-master-0"})
    await cluster.kubelet.succeeded("good-master-0")
    await cluster.wait_last_condition("PyTorchJob", "good", "Succeeded")
    assert await cluster.pod_names("bad") == set() and await cluster.services("bad") == set()
