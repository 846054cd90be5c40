"""The live feeds' buffers: log lines per container instance, metric series read from them, and
what changed for whom."""

from __future__ import annotations

from kubetrain.dashboard.changes import Changes
from kubetrain.dashboard.logfeed import LogBuffer
from kubetrain.dashboard.series import SeriesSet


def test_a_log_buffer_keeps_the_newest_lines_and_says_how_many_a_late_reader_missed() -> None:
    buffer = LogBuffer(0, "master-0", "p", "pytorch", 0, False)
    buffer.lines = type(buffer.lines)(maxlen=3)
    for i in range(5):
        assert buffer.append(f"line {i}") == i
    assert buffer.since(0) == (["line 2", "line 3", "line 4"], 2)
    assert buffer.since(3) == (["line 3", "line 4"], 0)
    assert buffer.since(5) == ([], 0)


def test_series_grow_from_key_value_and_json_lines_per_replica() -> None:
    series = SeriesSet()
    assert series.add_line("master-0", "pytorch", 0, 0, "epoch 1/8 local_loss=2.2 global_loss=2.1")
    assert not series.add_line("master-0", "pytorch", 0, 1, "rank 0: joined")
    assert series.add_line("worker-0", "pytorch", 0, 0, '{"step": 1, "loss": 0.5}')
    cursors: dict[int, tuple[int, int]] = {}
    first = {(s["replica"], s["name"]): s["points"] for s in series.since(cursors)}
    assert first == {
        ("master-0", "local_loss"): [(0, 0, 2.2)],
        ("master-0", "global_loss"): [(0, 0, 2.1)],
        ("worker-0", "step"): [(0, 0, 1.0)],
        ("worker-0", "loss"): [(0, 0, 0.5)],
    }
    series.add_line("master-0", "pytorch", 1, 0, "global_loss=1.5")
    assert [(s["name"], s["points"], s["replace"]) for s in series.since(cursors)] == [
        ("global_loss", [(1, 0, 1.5)], False)
    ]
    assert series.since(cursors) == []


def test_a_full_series_halves_and_is_sent_again_whole() -> None:
    series = SeriesSet(max_points=4)
    cursors: dict[int, tuple[int, int]] = {}
    for line in range(4):
        series.add("worker-0", "c", "loss", (0, line, float(line)))
    assert len(series.since(cursors)[0]["points"]) == 4
    series.add("worker-0", "c", "loss", (0, 4, 4.0))
    (again,) = series.since(cursors)
    assert again["replace"] and again["points"] == [(0, 0, 0.0), (0, 2, 2.0), (0, 4, 4.0)]


def test_a_subscription_collects_the_keys_of_its_topics_until_taken() -> None:
    changes = Changes()
    with changes.subscribe("jobs") as jobs, changes.subscribe("job:a") as page:
        changes.publish("jobs", "a")
        changes.publish("jobs", "a")
        changes.publish("job:a", "pods")
        changes.publish("job:b", "pods")
        assert jobs.wake.is_set() and jobs.take() == {"a"} and not jobs.wake.is_set()
        assert page.take() == {"pods"}
        assert changes.subscribers("jobs") == 1
    assert changes.subscribers("jobs") == 0
    changes.publish("jobs", "a")  # nobody listens: nothing to do
