"""Quantities: canonical sums (PodGroup minResources), value comparison, node-side rounding."""

from __future__ import annotations

from fractions import Fraction

import pytest

from kubetrain.kube.quantity import add_resources, ceil_div, parse_quantity, quantity_value, same_resources


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


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("500m", Fraction(1, 2)),
        ("1Gi", Fraction(2**30)),
        ("1e3", Fraction(1000)),
        (" 2 ", Fraction(2)),
        (".5k", Fraction(500)),
        (3, Fraction(3)),
        (0.25, Fraction(1, 4)),
    ],
)
def test_quantity_values_are_exact(raw: object, expected: Fraction) -> None:
    assert quantity_value(raw) == expected


@pytest.mark.parametrize("raw", ["bogus", "1Ki2", "", True, None, float("inf"), "\u0661"])
def test_quantity_value_rejects_what_kubernetes_rejects(raw: object) -> None:
    with pytest.raises(ValueError, match="invalid quantity"):
        quantity_value(raw)


def test_resource_field_ref_rounds_up_to_at_least_one() -> None:
    assert ceil_div(Fraction(1, 2), Fraction(1, 1000)) == 500
    assert ceil_div(Fraction(1, 10**6), Fraction(1)) == 1
    assert ceil_div(Fraction(0), Fraction(1)) == 0
