"""Numbers as Go's JSON round trip and fmt print them: what a custom resource reads back as, and
how a scale path's accessor error shows the value it refused."""

from __future__ import annotations

import math

import pytest

from kubetrain.embedded.apiserver.jsonutil import integral_floats_to_ints
from kubetrain.embedded.apiserver.resources import ScalePaths
from kubetrain.embedded.apiserver.scalevalidation import _go_float, scale_spec_errors, scale_status_errors
from kubetrain.embedded.apiserver.schema import json_integer


def test_integral_floats_in_int64s_range_read_back_as_ints_at_any_depth() -> None:
    obj = {
        "a": 1.0,
        "b": [2.0, {"c": -0.0, "d": 0.5}],
        "big": 2.0**63,
        "edge": -(2.0**63),
        "t": True,
        "s": "1.0",
    }
    integral_floats_to_ints(obj)
    assert obj == {
        "a": 1,
        "b": [2, {"c": 0, "d": 0.5}],
        "big": 2.0**63,
        "edge": -(2**63),
        "t": True,
        "s": "1.0",
    }
    assert [type(v) for v in (obj["a"], obj["b"][0], obj["b"][1]["c"], obj["big"], obj["edge"])] == [
        int,
        int,
        int,
        float,  # 9223372036854775808 does not fit an int64: Go reads it back as a float64
        int,
    ]


def test_json_integer_is_go_openapis_is_float64_a_json_integer() -> None:
    assert json_integer(3) and json_integer(3.0) and json_integer(2.0**53) and json_integer(-(2.0**53))
    assert not json_integer(2.5) and not json_integer(2.0**54) and not json_integer(True)
    assert not json_integer(math.inf) and not json_integer(math.nan) and not json_integer("3")


@pytest.mark.parametrize(
    ("value", "printed"),
    [
        (3.0, "3"),
        (2.5, "2.5"),
        (-3.0, "-3"),
        (100.0, "100"),
        (123456.0, "123456"),
        (1234567.0, "1.234567e+06"),
        (1e21, "1e+21"),
        (0.0001, "0.0001"),
        (0.00001, "1e-05"),
        (1.5e-7, "1.5e-07"),
    ],
)
def test_floats_print_as_gos_percent_v(value: float, printed: str) -> None:
    assert _go_float(value) == printed


def test_scale_paths_accessor_errors() -> None:
    scale = ScalePaths(".spec.replicas", ".status.replicas", ".status.selector")
    assert scale_spec_errors({"spec": {}}, scale) == []  # missing is fine
    assert scale_spec_errors({"spec": None}, scale) == []  # so is a null on the way
    [err] = scale_spec_errors({"spec": "x"}, scale)
    assert str(err) == (
        ".spec.replicas: Invalid value: 0: .spec.replicas accessor error: x is of the type string, "
        "expected map[string]interface{}"  # NestedFieldNoCopy names the field it could not look up
    )
    [err] = scale_spec_errors({"spec": {"replicas": "2"}}, scale)
    assert err.detail == ".spec.replicas accessor error: 2 is of the type string, expected int64"
    [err] = scale_spec_errors({"spec": {"replicas": 2**31}}, scale)
    assert str(err) == ".spec.replicas: Invalid value: 2147483648: should be less than or equal to 2147483647"
    [err] = scale_status_errors({"status": {"replicas": 1, "selector": 5}}, scale)
    assert str(err) == (
        '.status.selector: Invalid value: "": .status.selector accessor error: 5 is of the type int64, '
        "expected string"
    )
    assert scale_status_errors({"status": {"replicas": 1}}, None) == []


def test_an_accessor_error_prints_a_value_nested_thousands_deep() -> None:
    """A poison object's spec nested 1,500 deep once answered 500 (RecursionError) in the printer."""
    scale = ScalePaths(".spec.replicas", ".status.replicas", ".status.selector")
    deep: object = 1
    for _ in range(5000):
        deep = [deep]
    [err] = scale_spec_errors({"spec": {"replicas": {"a": deep, "b": [None, True, 2.5]}}}, scale)
    assert err.detail.startswith(".spec.replicas accessor error: map[a:[[[[")
    assert err.detail.endswith(
        "]]]] b:[<nil> true 2.5]] is of the type map[string]interface {}, expected int64"
    )
