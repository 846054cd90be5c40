"""Small pure helpers: timestamps, failure events, the restart ledger."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from kubetrain.api.codec import encode
from kubetrain.api.types import JobStatus
from kubetrain.controller import events
from kubetrain.controller.ledger import RestartLedger
from kubetrain.controller.plan import Event
from kubetrain.controller.timefmt import format_time, parse_time


def test_time_format_round_trip() -> None:
    moment = datetime(2026, 1, 2, 3, 4, 5, 678, tzinfo=UTC)
    assert format_time(moment) == "2026-01-02T03:04:05Z"
    plus_one = timezone(timedelta(hours=1))
    assert format_time(datetime(2026, 1, 2, 4, 4, 5, tzinfo=plus_one)) == "2026-01-02T03:04:05Z"
    assert parse_time("2026-01-02T03:04:05Z") == moment.replace(microsecond=0)
    assert parse_time("2026-01-02T04:04:05+01:00") == moment.replace(microsecond=0)
    assert parse_time("nope") is None and parse_time(None) is None


def test_failure_event_twins() -> None:
    ok = Event("Normal", events.SUCCESSFUL_CREATE_POD, events.created_pod("p"))
    assert events.failure_event(ok, "quota") == Event("Warning", "FailedCreatePod", "Error creating: quota")
    gone = Event("Normal", events.SUCCESSFUL_DELETE_SERVICE, events.deleted_service("s"))
    expected = Event("Warning", "FailedDeleteService", "Error deleting: boom")
    assert events.failure_event(gone, "boom") == expected
    assert events.failure_event(Event("Normal", "TFJobSucceeded", "x"), "e") is None


def test_ledger_round_trip_and_dedup() -> None:
    status = JobStatus()
    ledger = RestartLedger.read(status)
    pod = {"metadata": {"uid": "u1"}, "status": {"containerStatuses": [{"restartCount": 2}]}}
    ledger.record_restart(pod)
    ledger.record_restart(pod)
    assert (ledger.restarts, ledger.restarting_pods) == (3, ["u1"])
    assert ledger.live_restarts([pod]) == 0
    ledger.write(status)
    assert encode(status)["kubetrain"] == {"restarts": 3, "restartingPods": ["u1"]}
    again = RestartLedger.read(status)
    again.forget_gone([])
    again.write(status)
    assert encode(status)["kubetrain"] == {"restarts": 3}
    RestartLedger().write(status)
    assert "kubetrain" not in encode(status)
