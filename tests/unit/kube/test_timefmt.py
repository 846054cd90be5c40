"""RFC 3339 on the wire: one spelling per precision, lenient parsing of other writers' times."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from kubetrain.kube.timefmt import format_microtime, format_nanotime, format_time, parse_epoch, parse_time

MOMENT = datetime(2026, 1, 2, 3, 4, 5, 678, tzinfo=UTC)


def test_time_format_round_trip() -> None:
    assert format_time(MOMENT) == "2026-01-02T03:04:05Z"
    plus_one = timezone(timedelta(hours=1))
    assert format_time(datetime(2026, 1, 2, 4, 4, 5, tzinfo=plus_one)) == "2026-01-02T03:04:05Z"
    assert format_time(datetime(2026, 1, 2, 3, 4, 5)) == "2026-01-02T03:04:05Z"  # naive is UTC
    assert parse_time("2026-01-02T03:04:05Z") == MOMENT.replace(microsecond=0)
    assert parse_time("2026-01-02T04:04:05+01:00") == MOMENT.replace(microsecond=0)
    assert parse_time("nope") is None and parse_time(None) is None and parse_time(5) is None


def test_epoch_seconds_format_like_datetimes_and_truncate() -> None:
    epoch = MOMENT.timestamp()
    assert format_time(epoch) == format_time(MOMENT) == format_time(epoch + 0.999)
    assert parse_epoch("2026-01-02T03:04:05Z") == int(epoch)
    assert parse_epoch("2026-01-02T03:04:05.5Z") == int(epoch) + 0.5
    assert parse_epoch("") is None and parse_epoch("yesterday") is None


def test_microtime_format_is_go_metav1_microtime() -> None:
    moment = datetime(2024, 5, 6, 7, 8, 9, 12345, tzinfo=UTC)
    assert format_microtime(moment) == "2024-05-06T07:08:09.012345Z"
    assert format_microtime(moment.replace(microsecond=0)) == "2024-05-06T07:08:09.000000Z"
    assert format_microtime(1.5) == "1970-01-01T00:00:01.500000Z"
    assert parse_time("2024-05-06T07:08:09.012345Z") == moment
    assert parse_time("2024-05-06T07:08:09Z") == moment.replace(microsecond=0)


@pytest.mark.parametrize("t", [0.0, 1.25, 59.9999999999, 1_767_323_045.123456789])
def test_nanotime_has_fixed_width_and_never_rounds_into_the_next_second(t: float) -> None:
    stamp = format_nanotime(t)
    assert len(stamp) == len("1970-01-01T00:00:00.000000000Z")
    assert stamp[:19] == format_time(t)[:19]
