"""Small pure helpers: failure events, the restart ledger."""

from __future__ import annotations

from kubetrain.api.codec import encode
from kubetrain.api.types import JobStatus
from kubetrain.controller import events
from kubetrain.controller.ledger import RestartLedger
from kubetrain.controller.plan import Event


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
