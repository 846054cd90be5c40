"""Run-policy scenarios: restarts, limits, cleanPodPolicy, TTL, scale
(docs/upstream-behaviour.md#replica-pods, #limits, #clean-pod-policy, #ttl, #upstream-tests, #lifecycle)."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.controller.plan import DeleteObject, ObjectRef

from .builders import (
    Cluster,
    JobBuilder,
    actions_summary,
    at,
    conditions,
    created,
    deleted,
    event_list,
    job,
    stamp,
)


def _running_cluster(builder: JobBuilder) -> Cluster:
    c = Cluster(builder.build())
    c.step()
    c.set_pods(None, lambda p: p.running())
    c.step(at(1))
    return c


def _tf_workers(n: int = 2, **kw: object) -> JobBuilder:
    return job("TFJob").replicas("Worker", n, **kw)  # type: ignore[arg-type]


# ---- restarts -----------------------------------------------------------------------------------


def test_exited_with_code_names_the_termination_it_reports() -> None:
    """Every pass that sees an ended container reports it (as upstream); the event's `once` is
    the same for the same termination, so the runtime records it once, and new for a restart."""
    c = _running_cluster(_tf_workers())
    worker_1 = c.pods["test-job-worker-1"]["metadata"]["uid"]

    def ended(change: Any) -> None:
        c.set_pods(None, lambda p: change(p) if p.obj["metadata"]["uid"] == worker_1 else p)

    def exited(at_second: int) -> list[str]:
        return [e.once for e in c.step(at(at_second)).events if e.reason == "ExitedWithCode"]

    ended(lambda p: p.succeeded())
    first, second = exited(2), exited(3)
    assert len(first) == 1 and first == second and first[0].startswith(f"{worker_1}/tensorflow/")
    ended(lambda p: p.restarts(1))
    again = exited(4)
    assert len(again) == 1 and again != first


def test_retryable_exit_code_deletes_pod_and_sets_restarting() -> None:
    c = _running_cluster(_tf_workers(restart_policy="ExitCode"))
    c.set_pods(None, lambda p: p.failed(130) if p.obj["metadata"]["name"].endswith("-1") else p)
    old_uid = c.pods["test-job-worker-1"]["metadata"]["uid"]
    result = c.step(at(2))
    assert result.actions == [DeleteObject(ObjectRef("v1", "Pod", "default", "test-job-worker-1", old_uid))]
    message = "job test-job is restarting because Worker replica(s) failed."
    assert ("Warning", "TFJobRestarting", message) in event_list(result)
    assert ("Normal", "ExitedWithCode", "Pod: default.test-job-worker-1 exited with code 130") in event_list(
        result
    )
    assert conditions(result.status)[-1] == ("Restarting", "True", "TFJobRestarting", message)
    assert result.status is not None
    assert result.status["kubetrain"] == {"restarts": 1, "restartingPods": [old_uid]}
    assert [m.name for m in result.metrics] == ["training_operator_jobs_restarted_total"]
    # The pod is recreated under the same name on the next pass.
    again = c.step(at(3))
    assert actions_summary(again) == [("create", "Pod", "test-job-worker-1")]
    assert again.metrics == []
    assert again.status is not None and again.status["kubetrain"] == {"restarts": 1}


def test_delete_not_yet_observed_is_repeated_but_counted_once() -> None:
    c = _running_cluster(_tf_workers(restart_policy="OnFailure"))
    c.set_pods(None, lambda p: p.failed(137) if p.obj["metadata"]["name"].endswith("-1") else p)
    first = c.plan(at(2))
    c.job["status"] = first.status  # the status landed, the delete did not (cache lag)
    second = c.plan(at(2))
    assert deleted(second) == ["test-job-worker-1"]
    assert second.metrics == [] and second.status is None


def test_failed_pod_without_terminated_state_uses_sentinel_and_restarts() -> None:
    c = _running_cluster(_tf_workers(restart_policy="ExitCode"))
    c.set_pods(None, lambda p: p.failed(None) if p.obj["metadata"]["name"].endswith("-0") else p)
    result = c.step(at(2))
    assert deleted(result) == ["test-job-worker-0"]


def test_permanent_exit_code_fails_the_job() -> None:
    c = _running_cluster(_tf_workers(restart_policy="ExitCode"))
    c.set_pods(None, lambda p: p.failed(1) if p.obj["metadata"]["name"].endswith("-1") else p)
    result = c.step(at(2))
    message = 'job "test-job" is failing because "Worker" replica(s) failed.'
    assert conditions(result.status)[-1] == ("Failed", "True", "TFJobFailed", message)
    assert ("Warning", "TFJobFailed", message) in event_list(result)
    assert deleted(result) == []  # cleanPodPolicy None
    assert result.status is not None and result.status["completionTime"] == stamp(2)
    assert [m.name for m in result.metrics].count("training_operator_jobs_failed_total") == 1


def test_terminating_running_pod_counts_as_failed() -> None:
    c = _running_cluster(job("PyTorchJob").replicas("Master", 1).replicas("Worker", 2))
    c.set_pods("Worker", lambda p: p.terminating() if p.obj["metadata"]["name"].endswith("-1") else p)
    result = c.step(at(2))
    assert result.status is not None
    assert result.status["replicaStatuses"]["Worker"]["failed"] == 1
    assert result.status["replicaStatuses"]["Worker"]["active"] == 1
    assert conditions(result.status)[-1] == (
        "Restarting",
        "True",
        "PyTorchJobRestarting",
        "PyTorchJob test-job is restarting because 1 Worker replica(s) failed.",
    )


# ---- backoffLimit -------------------------------------------------------------------------------


def test_backoff_limit_by_restart_counts_honours_clean_pod_policy_all() -> None:
    c = _running_cluster(_tf_workers(4, restart_policy="OnFailure").backoff_limit(4).clean_pod_policy("All"))
    c.set_pods(None, lambda p: p.restarts(1))
    result = c.step(at(5))
    message = "Job test-job has failed because it has reached the specified backoff limit"
    assert conditions(result.status)[-1] == ("Failed", "True", "TFJobFailed", message)
    assert ("Normal", "TFJobFailed", message) in event_list(result)
    assert sorted(deleted(result)) == [f"test-job-worker-{i}" for i in range(4)]
    assert sorted(deleted(result, "Service")) == [f"test-job-worker-{i}" for i in range(4)]


def test_backoff_limit_failure_keeps_pods_with_clean_pod_policy_none() -> None:
    """kubeflow/trainer#3419: the v1.9.4 ordering, Failed first, then cleanPodPolicy."""
    c = _running_cluster(_tf_workers(2, restart_policy="OnFailure").backoff_limit(1))
    c.set_pods(None, lambda p: p.restarts(1) if p.obj["metadata"]["name"].endswith("-0") else p)
    result = c.step(at(5))
    assert conditions(result.status)[-1][0:3] == ("Failed", "True", "TFJobFailed")
    assert result.actions == []


def test_backoff_limit_below_restart_count_keeps_running() -> None:
    c = _running_cluster(_tf_workers(2, restart_policy="OnFailure").backoff_limit(3))
    c.set_pods(None, lambda p: p.restarts(1))
    result = c.step(at(5))
    assert conditions(result.status or c.job["status"])[-1][0] == "Running"


def test_backoff_limit_counts_exit_code_recreations() -> None:
    """kubeflow/trainer#2045: recreated pods start at restartCount 0, yet each recreation counts."""
    c = _running_cluster(_tf_workers(1, restart_policy="ExitCode").backoff_limit(3))
    for attempt in range(2):
        c.set_pods(None, lambda p: p.failed(137))
        result = c.step(at(10 + attempt * 10))
        assert deleted(result) == ["test-job-worker-0"], attempt
        c.step(at(11 + attempt * 10))  # recreated
        c.set_pods(None, lambda p: p.running())
    assert c.job["status"]["kubetrain"] == {"restarts": 2}
    c.set_pods(None, lambda p: p.failed(137))
    final = c.step(at(40))
    assert deleted(final) == []
    assert conditions(final.status)[-1] == (
        "Failed",
        "True",
        "TFJobFailed",
        "Job test-job has failed because it has reached the specified backoff limit",
    )


def test_backoff_limit_folds_in_place_restarts_of_recreated_pods() -> None:
    c = _running_cluster(job("PyTorchJob").replicas("Master", 1).replicas("Worker", 1).backoff_limit(5))
    c.set_pods("Worker", lambda p: p.failed(1).restarts(2))  # OnFailure pod evicted after 2 restarts
    uid = c.pods["test-job-worker-0"]["metadata"]["uid"]
    first = c.step(at(2))
    assert deleted(first) == ["test-job-worker-0"]
    assert c.job["status"]["kubetrain"] == {"restarts": 3, "restartingPods": [uid]}
    c.step(at(3))
    assert c.job["status"]["kubetrain"] == {"restarts": 3}


def test_backoff_limit_zero_fails_on_first_new_failure() -> None:
    c = _running_cluster(_tf_workers(2).backoff_limit(0))
    c.set_pods(None, lambda p: p.failed(1) if p.obj["metadata"]["name"].endswith("-1") else p)
    result = c.step(at(2))
    assert conditions(result.status)[-1] == (
        "Failed",
        "True",
        "TFJobFailed",
        "Job test-job has failed because it has reached the specified backoff limit",
    )


# ---- activeDeadlineSeconds ----------------------------------------------------------------------


def test_active_deadline_requeues_exactly_then_fires() -> None:
    c = Cluster(_tf_workers(2).active_deadline(60).clean_pod_policy("Running").build())
    first = c.step()
    assert first.requeue_after == 60
    c.set_pods(None, lambda p: p.running())
    mid = c.step(at(15.5))
    assert mid.requeue_after == pytest.approx(44.5)
    fired = c.step(at(60))
    message = "Job test-job has failed because it was active longer than specified deadline"
    assert conditions(fired.status)[-1] == ("Failed", "True", "TFJobFailed", message)
    assert ("Normal", "TFJobFailed", message) in event_list(fired)
    assert sorted(deleted(fired)) == ["test-job-worker-0", "test-job-worker-1"]
    assert fired.requeue_after is None
    assert fired.status is not None and fired.status["completionTime"] == stamp(60)


def test_deadline_unset_keeps_pods_and_no_requeue() -> None:
    c = _running_cluster(_tf_workers(2))
    result = c.plan(at(10_000))
    assert result.actions == [] and result.requeue_after is None


# ---- cleanPodPolicy -----------------------------------------------------------------------------


def _finished_tf(policy: str | None) -> Cluster:
    builder = job("TFJob").replicas("Chief", 1).replicas("Worker", 2)
    if policy is not None:
        builder.clean_pod_policy(policy)
    c = _running_cluster(builder)
    c.set_pods("Worker", lambda p: p.succeeded() if p.obj["metadata"]["name"].endswith("-0") else p)
    c.set_pods("Chief", lambda p: p.succeeded())
    return c


@pytest.mark.parametrize(
    ("policy", "pods"),
    [
        ("All", ["test-job-chief-0", "test-job-worker-0", "test-job-worker-1"]),
        ("Running", ["test-job-worker-1"]),
        ("None", []),
        (None, []),
    ],
)
def test_clean_pod_policy_on_success(policy: str | None, pods: list[str]) -> None:
    c = _finished_tf(policy)
    result = c.step(at(5))
    assert conditions(result.status)[-1][0:3] == ("Succeeded", "True", "TFJobSucceeded")
    assert sorted(deleted(result)) == pods
    assert sorted(deleted(result, "Service")) == pods
    assert [e for e in event_list(result) if e[1] == "SuccessfulDeletePod"] == [
        ("Normal", "SuccessfulDeletePod", f"Deleted pod: {name}") for name in sorted(pods)
    ]
    again = c.plan(at(6))
    assert again.status is None


def test_finished_job_creates_nothing_more() -> None:
    c = _finished_tf("None")
    c.step(at(5))
    del c.pods["test-job-worker-1"]
    assert c.plan(at(6)).actions == []


# ---- TTL ----------------------------------------------------------------------------------------


def test_ttl_requeues_then_deletes_the_job() -> None:
    c = _finished_tf("None")
    c.job["spec"]["runPolicy"] = {"ttlSecondsAfterFinished": 30}
    done = c.step(at(5))
    assert done.requeue_after == 30
    waiting = c.plan(at(20))
    assert waiting.requeue_after == 15 and waiting.actions == []
    due = c.plan(at(35))
    assert due.actions == [
        DeleteObject(ObjectRef("kubeflow.org/v1", "TFJob", "default", "test-job", "job-uid-1"))
    ]
    assert ("Normal", "SuccessfulDeleteJob", "Deleted job: test-job") in event_list(due)
    assert [m.name for m in due.metrics] == ["training_operator_jobs_deleted_total"]


def test_ttl_applies_to_failed_jobs() -> None:
    c = _running_cluster(_tf_workers(1).ttl(3))
    c.set_pods(None, lambda p: p.failed(1))
    failed = c.step(at(2))
    assert failed.requeue_after == 3
    assert c.plan(at(5)).actions[-1] == DeleteObject(
        ObjectRef("kubeflow.org/v1", "TFJob", "default", "test-job", "job-uid-1")
    )


# ---- scale --------------------------------------------------------------------------------------


def test_scale_up_creates_missing_indices_only() -> None:
    c = _running_cluster(_tf_workers(2))
    c.job["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = 4
    result = c.step(at(3))
    assert actions_summary(result) == [
        ("create", "Pod", "test-job-worker-2"),
        ("create", "Pod", "test-job-worker-3"),
        ("create", "Service", "test-job-worker-2"),
        ("create", "Service", "test-job-worker-3"),
    ]


def test_scale_down_deletes_pods_and_services_out_of_range() -> None:
    c = _running_cluster(_tf_workers(3))
    c.job["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = 1
    result = c.step(at(3))
    assert sorted(deleted(result)) == ["test-job-worker-1", "test-job-worker-2"]
    assert sorted(deleted(result, "Service")) == ["test-job-worker-1", "test-job-worker-2"]
    assert ("Normal", "SuccessfulDeleteService", "Deleted service: test-job-worker-2") in event_list(result)
    assert c.plan(at(4)).actions == []


def test_zero_replicas_create_nothing_and_do_not_loop() -> None:
    """kubeflow/trainer#1709: upstream creates and deletes a phantom index-0 pod forever."""
    c = Cluster(job("TFJob").replicas("Chief", 1).replicas("Worker", 0).build())
    first = c.step()
    assert sorted(created(first)) == ["test-job-chief-0"]
    assert c.plan().actions == []


def test_pod_creation_error_becomes_failed_create_pod_event(monkeypatch: pytest.MonkeyPatch) -> None:
    from kubetrain.frameworks.base import TopologyError
    from kubetrain.frameworks.pytorch import PyTorch

    def broken(*args: object) -> None:
        raise TopologyError("port not found")

    monkeypatch.setattr(PyTorch, "set_cluster_spec", broken)
    result = Cluster(job("PyTorchJob").replicas("Master", 1).build()).step()
    assert ("Warning", "FailedCreatePod", "Error creating: port not found") in event_list(result)
    assert created(result) == {}
    assert sorted(created(result, "Service")) == ["test-job-master-0"]


def test_retryable_exit_code_records_both_restarting_events_as_upstream() -> None:
    """training-operator records the pod's delete, the pod pass's restart and its status rule's, with
    the failed count (the differential tier showed the delete's and the second missing: the
    condition's reason was already True)."""
    c = _running_cluster(job("PyTorchJob").replicas("Worker", 2, restart_policy="ExitCode"))
    c.set_pods(None, lambda p: p.failed(137) if p.obj["metadata"]["name"].endswith("-1") else p)
    recorded = event_list(c.step(at(2)))
    assert ("Normal", "SuccessfulDeletePod", "Deleted pod: test-job-worker-1") in recorded  # PodControl's
    restarting = [e for e in recorded if e[1] == "PyTorchJobRestarting"]
    assert restarting == [
        ("Warning", "PyTorchJobRestarting", "job test-job is restarting because Worker replica(s) failed."),
        (
            "Warning",
            "PyTorchJobRestarting",
            "PyTorchJob test-job is restarting because 1 Worker replica(s) failed.",
        ),
    ]


def test_backoff_limit_failure_keeps_the_replica_selector() -> None:
    """The pass that fails a job on its backoffLimit runs no status rule; upstream keeps the
    replicaStatuses its last pass wrote, selector included."""
    c = _running_cluster(job("PyTorchJob").replicas("Worker", 2, restart_policy="OnFailure").backoff_limit(1))
    selector = (
        "training.kubeflow.org/job-name=test-job,training.kubeflow.org/operator-name=pytorchjob-controller"
    )
    assert (
        c.job["status"]["replicaStatuses"]["Worker"]["selector"]
        == f"{selector},training.kubeflow.org/replica-type=worker"
    )
    c.set_pods(None, lambda p: p.restarts(1) if p.obj["metadata"]["name"].endswith("-0") else p)
    result = c.step(at(5))
    assert conditions(result.status)[-1][0:3] == ("Failed", "True", "PyTorchJobFailed")
    assert result.status is not None
    assert (
        result.status["replicaStatuses"]["Worker"]["selector"]
        == f"{selector},training.kubeflow.org/replica-type=worker"
    )
