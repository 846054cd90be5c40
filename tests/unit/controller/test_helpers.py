"""Small pure helpers: quantities, timestamps, failure events, the restart ledger."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from kubetrain.api.codec import encode
from kubetrain.api.types import JobStatus
from kubetrain.controller import events
from kubetrain.controller.ledger import RestartLedger
from kubetrain.controller.plan import Event
from kubetrain.controller.quantity import add_resources, parse_quantity, same_resources
from kubetrain.controller.timefmt import format_time, parse_time


@pytest.mark.parametrize(
    ("addends", "expected"),
    [
        (["500m", "1"], "1500m"),
        (["1Gi", "512Mi"], "1536Mi"),
        (["1", "1"], "2"),
        (["0.5", "0.5"], "1"),
        (["100Mi", "100Mi"], "200Mi"),
        (["1k", "500"], "1500"),
        (["2", "2Gi"], "2147483650"),
    ],
)
def test_quantity_sums_are_canonical(addends: list[str], expected: str) -> None:
    total: dict = {}
    for value in addends:
        add_resources(total, {"x": value})
    assert str(total["x"]) == expected


def test_quantity_parsing_and_comparison() -> None:
    assert parse_quantity("bogus") is None and parse_quantity(True) is None
    assert parse_quantity(3) is not None
    assert same_resources({"cpu": "1500m"}, {"cpu": "1.5"})
    assert not same_resources({"cpu": "1"}, {"cpu": "1", "memory": "1Gi"})
    assert same_resources(None, {})


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
