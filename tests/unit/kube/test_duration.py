"""HumanDuration: the cases of apimachinery's own duration_test.go, so tables read like kubectl's."""

from __future__ import annotations

import pytest

from kubetrain.kube.duration import human_duration

MINUTE, HOUR, DAY = 60, 3600, 86400


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [
        (-2, "<invalid>"),
        (-1.9, "0s"),
        (-1, "0s"),
        (0, "0s"),
        (1, "1s"),
        (119, "119s"),
        (2 * MINUTE, "2m"),
        (2 * MINUTE + 1, "2m1s"),
        (10 * MINUTE - 1, "9m59s"),
        (10 * MINUTE, "10m"),
        (3 * HOUR - 1, "179m"),
        (3 * HOUR, "3h"),
        (3 * HOUR + 30 * MINUTE, "3h30m"),
        (8 * HOUR - 1, "7h59m"),
        (8 * HOUR, "8h"),
        (48 * HOUR - 1, "47h"),
        (48 * HOUR, "2d"),
        (48 * HOUR + HOUR, "2d1h"),
        (8 * DAY - 1, "7d23h"),
        (8 * DAY, "8d"),
        (2 * 365 * DAY - 1, "729d"),
        (2 * 365 * DAY, "2y"),
        (2 * 365 * DAY + DAY, "2y1d"),
        (8 * 365 * DAY - 1, "7y364d"),
        (8 * 365 * DAY, "8y"),
        (9 * 365 * DAY + DAY, "9y"),
    ],
)
def test_human_duration(seconds: float, expected: str) -> None:
    assert human_duration(seconds) == expected
