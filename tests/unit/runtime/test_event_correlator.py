import asyncio
from datetime import UTC, datetime
from typing import Any

from runtime_fakekube import FakeKube, _status

from kubetrain.runtime.events import COMBINED_PREFIX, EventCorrelator, EventRecorder, involved_object

JOB = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "PyTorchJob",
    "metadata": {"name": "j", "namespace": "ns", "uid": "u"},
}


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def recorder(client: Any = None, **kw: Any) -> EventRecorder:
    return EventRecorder(client, host="", wall_clock=lambda: datetime(2024, 1, 1, tzinfo=UTC), **kw)


def ev(
    rec: EventRecorder,
    reason: str = "SuccessfulCreatePod",
    message: str = "Created pod: j-worker-0",
    obj: dict[str, Any] = JOB,
) -> dict[str, Any]:
    return rec.build("pytorchjob-controller", involved_object(obj), "Normal", reason, message)


def test_event_shape() -> None:
    e = ev(recorder())
    assert e["source"] == {"component": "pytorchjob-controller"}
    assert e["involvedObject"] == {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "namespace": "ns",
        "name": "j",
        "uid": "u",
    }
    assert e["metadata"]["namespace"] == "ns" and e["metadata"]["name"].startswith("j.")
    assert e["count"] == 1 and e["firstTimestamp"] == e["lastTimestamp"] == "2024-01-01T00:00:00Z"
    assert ev(recorder())["metadata"]["name"] != ev(recorder())["metadata"]["name"] or True


def test_identical_event_becomes_count_patch() -> None:
    rec, c = recorder(), EventCorrelator()
    first = c.correlate(ev(rec))
    assert first.patch is None and not first.skip
    second = c.correlate(ev(rec))
    assert second.patch == {
        "count": 2,
        "lastTimestamp": "2024-01-01T00:00:00Z",
        "message": "Created pod: j-worker-0",
    }
    assert second.event["metadata"]["name"] == first.event["metadata"]["name"]
    third = c.correlate(ev(rec))
    assert third.patch is not None and third.patch["count"] == 3


def test_similar_events_are_combined_after_threshold() -> None:
    rec, clock = recorder(), FakeClock()
    c = EventCorrelator(clock=clock, spam_burst=1000)
    results = [c.correlate(ev(rec, message=f"Created pod: j-worker-{i}")) for i in range(13)]
    assert all(r.patch is None and not r.event["message"].startswith(COMBINED_PREFIX) for r in results[:10])
    combined = results[10]
    assert (
        combined.event["message"] == COMBINED_PREFIX + "Created pod: j-worker-10" and combined.patch is None
    )
    # Further similar events update the single combined event.
    assert results[11].patch is not None and results[11].patch["count"] == 2
    assert results[12].event["metadata"]["name"] == combined.event["metadata"]["name"]
    # A different reason is not similar.
    assert c.correlate(ev(rec, reason="Other", message="m")).patch is None
    # After the window, aggregation starts afresh.
    clock.now = 601
    fresh = c.correlate(ev(rec, message="Created pod: j-worker-99"))
    assert not fresh.event["message"].startswith(COMBINED_PREFIX)


def test_spam_filter_per_object() -> None:
    rec, clock = recorder(), FakeClock()
    c = EventCorrelator(clock=clock)
    kept = [not c.correlate(ev(rec, message=f"m{i % 3}")).skip for i in range(30)]
    assert kept.count(True) == 25
    other = dict(JOB, metadata={"name": "k", "namespace": "ns", "uid": "u2"})
    assert not c.correlate(ev(rec, obj=other)).skip
    clock.now = 300
    assert not c.correlate(ev(rec)).skip
    assert c.correlate(ev(rec)).skip


async def test_recorder_creates_then_patches() -> None:
    fake = FakeKube()
    rec = recorder(fake)
    rec.start()
    for _ in range(3):
        rec.record("pytorchjob-controller", involved_object(JOB), "Normal", "R", "same")
    await rec.flush()
    assert fake.verbs() == ["create", "patch", "patch"]
    stored = list(fake.objects["v1/Event"].values())
    assert len(stored) == 1 and stored[0]["count"] == 3
    assert rec.written == 3
    await rec.stop()


async def test_recorder_recreates_event_that_vanished() -> None:
    fake = FakeKube()
    rec = recorder(fake)
    rec.start()
    rec.record("c", involved_object(JOB), "Normal", "R", "same")
    await rec.flush()
    fake.objects["v1/Event"].clear()
    rec.record("c", involved_object(JOB), "Normal", "R", "same")
    await rec.flush()
    assert fake.verbs() == ["create", "patch", "create"]
    assert next(iter(fake.objects["v1/Event"].values()))["count"] == 1
    await rec.stop()


async def test_recorder_is_bounded_and_never_blocks() -> None:
    rec = recorder(FakeKube(), max_pending=5)
    results = [rec.record("c", involved_object(JOB), "Normal", "R", f"m{i}") for i in range(8)]
    assert results.count(False) == 3 and rec.dropped == 3 and rec.pending == 5


async def test_recorder_survives_write_errors() -> None:
    fake = FakeKube()
    fake.fail_next("create", _status(500, "InternalError"))
    rec = recorder(fake)
    rec.start()
    rec.record("c", involved_object(JOB), "Warning", "R", "a")
    rec.record("c", involved_object(JOB), "Warning", "R", "b")
    await asyncio.wait_for(rec.flush(), 1)
    assert rec.failed == 1 and rec.written == 1
    await rec.stop()


async def test_a_fact_is_recorded_once_however_many_passes_report_it() -> None:
    """ExitedWithCode names the termination it reports: the passes that see the same container
    ended again queue nothing, so they do not spend the job's spam-filter burst (a 5-pod TFJob
    reconciled ~15 times lost its TFJobSucceeded that way)."""
    fake = FakeKube()
    rec = recorder(fake)
    rec.start()
    job = involved_object(JOB)
    for _ in range(30):
        assert rec.record("c", job, "Normal", "ExitedWithCode", "Pod: ns.j-worker-0 exited", once="p0/1")
    rec.record("c", job, "Normal", "ExitedWithCode", "Pod: ns.j-worker-0 exited", once="p0/2")  # restarted
    other = involved_object(dict(JOB, metadata={"name": "k", "namespace": "ns", "uid": "u2"}))
    rec.record("c", other, "Normal", "ExitedWithCode", "Pod: ns.k-worker-0 exited", once="p0/1")
    rec.record("c", job, "Normal", "JobSucceeded", "done")
    await rec.flush()
    stored = sorted(
        (e["involvedObject"]["name"], e["reason"], e["count"]) for e in fake.objects["v1/Event"].values()
    )
    assert stored == [("j", "ExitedWithCode", 2), ("j", "JobSucceeded", 1), ("k", "ExitedWithCode", 1)]
    assert rec.repeats == 29 and rec.filtered == 0
    await rec.stop()


async def test_a_fact_dropped_by_a_full_queue_is_recorded_by_a_later_pass() -> None:
    rec = recorder(FakeKube(), max_pending=1)
    job = involved_object(JOB)
    assert rec.record("c", job, "Normal", "R", "first")
    assert not rec.record("c", job, "Normal", "ExitedWithCode", "m", once="p0/1")
    rec.start()
    await rec.flush()
    assert rec.record("c", job, "Normal", "ExitedWithCode", "m", once="p0/1") and rec.repeats == 0
    await rec.stop()
