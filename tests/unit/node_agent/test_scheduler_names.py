"""The binder's reading of a pod's schedulerName, poisoned ones included."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrain.embedded.scheduler import DEFAULT_SCHEDULER, INVALID_SCHEDULER, _scheduler_of


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({}, DEFAULT_SCHEDULER),
        ({"schedulerName": ""}, DEFAULT_SCHEDULER),
        ({"schedulerName": "volcano"}, "volcano"),
        ({"schedulerName": {"a": 1}}, INVALID_SCHEDULER),  # a dict once crashed every binder pass
        ({"schedulerName": ["x"]}, INVALID_SCHEDULER),
        ("not a spec", DEFAULT_SCHEDULER),
    ],
)
def test_a_pods_scheduler(spec: Any, expected: str) -> None:
    name = _scheduler_of({"spec": spec})
    assert name == expected
