"""The history store: what a job leaves behind, its bounds (oldest first out), and reading it back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubetrain.history.recorder import ended_attempts, job_paths
from kubetrain.history.store import HistoryStore, outcome_of
from kubetrain.kinds.registry import all_versions

JsonDict = dict[str, Any]


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def job(name: str, uid: str, *conditions: tuple[str, str, str]) -> JsonDict:
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name, "namespace": "default", "uid": uid, "managedFields": [{"x": 1}]},
        "spec": {"pytorchReplicaSpecs": {}},
        "status": {
            "startTime": "2026-01-01T00:00:00Z",
            "conditions": [
                {"type": t, "status": s, "reason": f"PyTorchJob{t}", "lastTransitionTime": when}
                for t, s, when in conditions
            ],
        },
    }


def store(tmp_path: Path, clock: Clock, **bounds: Any) -> HistoryStore:
    return HistoryStore(tmp_path / "history.db", clock=clock, **bounds)


def test_each_condition_transition_is_kept_as_the_job_changes(tmp_path: Path) -> None:
    history = store(tmp_path, Clock())
    history.record_job(job("a", "u1", ("Created", "True", "2026-01-01T00:00:00Z")))
    history.record_job(
        job(
            "a",
            "u1",
            ("Created", "True", "2026-01-01T00:00:00Z"),
            ("Running", "False", "2026-01-01T00:00:09Z"),
            ("Succeeded", "True", "2026-01-01T00:00:09Z"),
        )
    )
    history.record_job(
        job(
            "a",
            "u1",
            ("Created", "True", "2026-01-01T00:00:00Z"),
            ("Running", "True", "2026-01-01T00:00:01Z"),
        )
    )
    (summary,) = history.jobs()
    assert summary.outcome == "Running"  # the object as last seen decides the outcome
    assert [(c.type, c.status) for c in history.conditions("u1")] == [
        ("Created", "True"),
        ("Running", "True"),
        ("Running", "False"),
        ("Succeeded", "True"),
    ]
    assert "managedFields" not in history.spec("u1")["metadata"]


def test_a_deleted_job_stays_with_its_pods_events_and_every_attempts_log(tmp_path: Path) -> None:
    history = store(tmp_path, Clock())
    history.record_job(job("a", "u1", ("Succeeded", "True", "2026-01-01T00:00:05Z")))
    pod = {
        "metadata": {"name": "a-master-0", "uid": "p1"},
        "status": {
            "phase": "Succeeded",
            "containerStatuses": [
                {"name": "pytorch", "restartCount": 1, "state": {"terminated": {"exitCode": 0}}}
            ],
        },
    }
    history.record_pod("u1", pod)
    started = {"reason": "Started", "type": "Normal", "message": "Started"}
    history.record_event(
        "u1", {"metadata": {"uid": "e1"}, "involvedObject": {"kind": "Pod", "name": "a-master-0"}, **started}
    )
    history.record_log("u1", "p1", "a-master-0", "pytorch", 0, 3, "first\n")
    history.record_log("u1", "p1", "a-master-0", "pytorch", 1, 0, "second\n")
    history.mark_deleted("u1", "2026-01-01T00:01:00Z")
    history.close()

    again = HistoryStore(tmp_path / "history.db", read_only=True)
    (summary,) = again.find("a", kind="pytorchjob")
    assert (summary.outcome, summary.deleted) == ("Succeeded", "2026-01-01T00:01:00Z")
    assert again.pods("u1")[0].containers[0]["exitCode"] == 0
    assert [(e.object, e.reason) for e in again.events("u1")] == [("pod/a-master-0", "Started")]
    assert [(r.attempt, r.exit_code, r.text) for r in again.logs("u1")] == [
        (0, 3, "first\n"),
        (1, 0, "second\n"),
    ]


def test_beyond_the_job_limit_the_oldest_go_first_with_all_they_recorded(tmp_path: Path) -> None:
    clock = Clock()
    history = store(tmp_path, clock, max_jobs=2)
    for n in range(3):
        clock.now += 1
        history.record_job(job(f"job-{n}", f"u{n}"))
        history.record_log(f"u{n}", f"p{n}", f"job-{n}-master-0", "pytorch", 0, 0, "x")
    history.record_job(job("job-0-again", "u0-again"))  # a newer job pushes out the oldest again
    assert [j.name for j in history.jobs()] == ["job-2", "job-0-again"]
    assert history.logs("u0") == history.logs("u1") == []


def test_an_update_does_not_make_an_old_job_young(tmp_path: Path) -> None:
    clock = Clock()
    history = store(tmp_path, clock, max_jobs=2)
    history.record_job(job("old", "u-old"))
    clock.now += 1
    history.record_job(job("new", "u-new"))
    clock.now += 1
    history.record_job(job("old", "u-old", ("Succeeded", "True", "2026-01-01T00:00:05Z")))
    history.record_job(job("newest", "u-newest"))
    assert [j.name for j in history.jobs()] == ["new", "newest"]


def test_jobs_older_than_the_age_limit_are_forgotten(tmp_path: Path) -> None:
    clock = Clock()
    history = store(tmp_path, clock, max_age_seconds=3600)
    history.record_job(job("old", "u-old"))
    clock.now += 3601
    history.record_job(job("new", "u-new"))
    assert [j.name for j in history.jobs()] == ["new"]


def test_a_huge_log_keeps_its_newest_bytes(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setattr("kubetrain.history.store.MAX_LOG_BYTES", 10)
    history = store(tmp_path, Clock())
    history.record_job(job("a", "u1"))
    history.record_log("u1", "p1", "a-master-0", "pytorch", 0, 0, "0123456789abcdef")
    assert history.logs("u1")[0].text == "6789abcdef"


def test_outcome_is_the_final_condition_else_the_last_true_one() -> None:
    assert outcome_of(job("a", "u")) == ""
    running = job("a", "u", ("Created", "True", "t0"), ("Running", "True", "t1"))
    assert outcome_of(running) == "Running"
    failed = job("a", "u", ("Failed", "True", "t2"), ("Running", "False", "t2"))
    assert outcome_of(failed) == "Failed"


def test_each_ended_container_instance_is_one_log_to_read() -> None:
    pod = {
        "status": {
            "initContainerStatuses": [
                {"name": "init", "restartCount": 0, "state": {"terminated": {"exitCode": 0}}}
            ],
            "containerStatuses": [
                {
                    "name": "main",
                    "restartCount": 2,
                    "state": {"running": {}},
                    "lastState": {"terminated": {"exitCode": 3}},
                }
            ],
        }
    }
    assert ended_attempts(pod) == [("init", 0, 0, False), ("main", 1, 3, True)]


def test_a_kind_served_in_two_versions_is_watched_once() -> None:
    paths = job_paths(all_versions())
    assert len([p for p in paths if p.endswith("/mpijobs")]) == 1
    assert "/apis/kubeflow.org/v1/pytorchjobs" in paths
