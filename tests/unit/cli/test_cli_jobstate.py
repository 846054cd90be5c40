"""The job-state helpers every view shares."""

from __future__ import annotations

from cli_builders import cond, pod, pytorchjob

from kubetrain.client import jobstate
from kubetrain.frameworks.pytorch import PYTORCHJOB


def test_reached_needs_a_true_condition() -> None:
    job = pytorchjob(conditions=[cond("Running", "False"), cond("Failed", reason="R", message="boom")])
    assert jobstate.reached(job, ("Succeeded", "Failed")) == "Failed"
    assert jobstate.reached(job, ("Running",)) is None
    assert jobstate.failure_message(job) == "R: boom"


def test_summary_line() -> None:
    job = pytorchjob(
        conditions=[cond("Running")], replica_statuses={"Master": {"active": 1}, "Worker": {"succeeded": 1}}
    )
    assert jobstate.summary(job, PYTORCHJOB) == "Running  master 1 active of 1  worker 1 succeeded of 2"
    assert jobstate.summary(pytorchjob(), PYTORCHJOB).startswith("Pending  master pending of 1")


def test_a_finished_jobs_cleaned_up_replicas_are_not_called_pending() -> None:
    job = pytorchjob(
        conditions=[cond("Succeeded")], replica_statuses={"Master": {"succeeded": 1}, "Worker": {}}
    )
    assert jobstate.summary(job, PYTORCHJOB) == "Succeeded  master 1 succeeded of 1  worker none left of 2"


def test_replica_labels_and_order() -> None:
    pods = [
        pod("tiny-worker-1", "worker", 1),
        pod("tiny-master-0", "master", 0),
        pod("tiny-worker-0", "worker", 0),
    ]
    ordered = sorted(pods, key=jobstate.replica_sort_key)
    assert [jobstate.replica_label(p) for p in ordered] == ["master-0", "worker-0", "worker-1"]
    unlabelled = {"metadata": {"name": "tiny-ps-3"}}
    assert jobstate.replica_label(unlabelled, "tiny") == "ps-3"
