"""Metrics from log lines: the `key=value` and JSON-line convention, and series kept with the job."""

from __future__ import annotations

from pathlib import Path

from kubetrain.history.metrics import Point, line_metrics, log_metrics
from kubetrain.history.store import HistoryStore


def test_key_value_pairs_with_numbers_are_metrics_and_other_words_are_not() -> None:
    assert line_metrics("epoch=3 loss=0.48 accuracy=0.91") == {"epoch": 3.0, "loss": 0.48, "accuracy": 0.91}
    assert line_metrics("[rank 1] step=10, train/loss=1e-3; lr=.5 top-1=91%") == {
        "step": 10.0,
        "train/loss": 0.001,
        "lr": 0.5,
        "top-1": 91.0,
    }
    assert line_metrics("mode=train path=/data/x=1 version=1.2.3") == {}
    assert line_metrics("Started training") == {}


def test_a_json_line_gives_its_numeric_fields() -> None:
    line = '{"step": 5, "loss": 0.25, "phase": "eval", "done": true, "nan": NaN}'
    assert line_metrics(line) == {"step": 5.0, "loss": 0.25}
    assert line_metrics("{not json}") == {}


def test_points_keep_the_line_they_were_printed_on() -> None:
    log = "starting\nepoch=1 loss=0.9\nepoch=2 loss=0.5\n"
    assert log_metrics(log) == [
        Point(1, "epoch", 1.0),
        Point(1, "loss", 0.9),
        Point(2, "epoch", 2.0),
        Point(2, "loss", 0.5),
    ]


def test_a_recorded_log_becomes_series_per_replica_across_attempts(tmp_path: Path) -> None:
    history = HistoryStore(tmp_path / "history.db")
    history.record_job(
        {"kind": "PyTorchJob", "apiVersion": "kubeflow.org/v1", "metadata": {"uid": "u", "name": "a"}}
    )
    history.record_log("u", "p0", "a-master-0", "pytorch", 0, 1, "loss=0.9\n")
    history.record_log("u", "p0", "a-master-0", "pytorch", 1, 0, "loss=0.7\nloss=0.4\n")
    history.record_log("u", "p1", "a-worker-0", "pytorch", 0, 0, "loss=0.8\n")
    series = {(s.pod, s.name): s.points for s in history.metrics("u")}
    assert series == {
        ("a-master-0", "loss"): [(0, 0, 0.9), (1, 0, 0.7), (1, 1, 0.4)],
        ("a-worker-0", "loss"): [(0, 0, 0.8)],
    }
