"""The one condition algebra with the two upstreams' rules (docs/upstream-behaviour.md#conditions,
#mpijob-v2beta1-status): where training-operator's and mpi-operator's differ, and where they agree."""

from __future__ import annotations

from kubetrain.api.conditions import FALSE, MPI_OPERATOR_RULES, TRUE, ConditionRules, set_condition
from kubetrain.api.types import JobStatus

T1, T2 = "2026-01-01T00:00:01Z", "2026-01-01T00:00:02Z"


def _state(status: JobStatus) -> list[tuple[str, str, str | None]]:
    return [(c.type, c.status, c.reason) for c in status.conditions]


def _failed_then(rules: ConditionRules, cond_type: str) -> tuple[bool, JobStatus]:
    status = JobStatus()
    set_condition(status, "Running", TRUE, "JobRunning", "", T1, rules)
    set_condition(status, "Failed", TRUE, "JobFailed", "", T1, rules)
    return set_condition(status, cond_type, TRUE, "Again", "", T2, rules), status


def test_training_operator_failed_is_terminal() -> None:
    changed, status = _failed_then(ConditionRules(), "Succeeded")
    assert not changed
    assert _state(status) == [("Running", FALSE, "JobRunning"), ("Failed", TRUE, "JobFailed")]


def test_mpi_operator_succeeded_after_failed_flips_the_failed() -> None:
    changed, status = _failed_then(MPI_OPERATOR_RULES, "Succeeded")
    assert changed
    assert _state(status) == [
        ("Running", FALSE, "JobRunning"),
        ("Failed", FALSE, "JobFailed"),
        ("Succeeded", TRUE, "Again"),
    ]


def test_both_keep_the_transition_time_exclude_restarting_and_skip_a_repeat() -> None:
    for rules in (ConditionRules(), MPI_OPERATOR_RULES):
        status = JobStatus()
        assert set_condition(status, "Restarting", TRUE, "JobRestarting", "", T1, rules)
        assert set_condition(status, "Running", TRUE, "JobRunning", "", T1, rules)
        assert not set_condition(status, "Running", TRUE, "JobRunning", "", T2, rules)
        assert set_condition(status, "Running", TRUE, "Other", "", T2, rules)
        (running,) = status.conditions
        assert (running.reason, running.last_transition_time, running.last_update_time) == ("Other", T1, T2)
