import pytest

from kubetrain.kube.labels import (
    LabelSelector,
    Requirement,
    SelectorError,
    format_labels,
    label_selector_string,
    matches,
)
from kubetrain.kube.names import LABEL_VALUE_MSG

L = {"training.kubeflow.org/operator-name": "pytorchjob-controller", "app": "x"}


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        (None, True),
        ("", True),
        ("training.kubeflow.org/operator-name", True),
        ("missing", False),
        ("!missing", True),
        ("!app", False),
        ("app=x", True),
        ("app==x", True),
        ("app=y", False),
        ("app!=y", True),
        ("app!=x", False),
        ("app=x,missing", False),
        ("app in (x, y)", True),
        ("app notin (x,y)", False),
        ("app in (y,z),training.kubeflow.org/operator-name", False),
    ],
)
def test_matches(selector: str | None, expected: bool) -> None:
    assert matches(selector, L) is expected


def test_none_labels() -> None:
    assert matches("!a", None)
    assert not matches("a", None)


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        ("a in (x", "unable to parse requirement: found '', expected: ',' or ')'"),
        ("a=b=c", "found '=', expected: ',' or 'end of string'"),
        ("a,", "found '', expected: identifier after ','"),
        ('a=-"b', 'unable to parse requirement: values[0][a]: Invalid value: "-\\"b": ' + LABEL_VALUE_MSG),
    ],
)
def test_parse_errors_are_upstreams(selector: str, message: str) -> None:
    with pytest.raises(SelectorError) as raised:
        LabelSelector.parse(selector)
    assert str(raised.value) == message


def test_upstream_parse_semantics() -> None:
    assert LabelSelector.parse("a in ()").requirements == [Requirement("a", "in", ("",))]
    assert matches("a==", {"a": ""}) and not matches("a==", {})
    assert matches("n>3", {"n": "4"}) and not matches("n>3", {"n": "3"}) and matches("n<3", {"n": "-1"})
    assert LabelSelector.parse("a").matches_object({"metadata": {"labels": {"a": "1"}}})
    assert LabelSelector.parse("").matches_object({})


def test_label_selector_string_sorts_requirements_by_key_and_values() -> None:
    selector = {
        "matchLabels": {"z": "1", "b": "2"},
        "matchExpressions": [
            {"key": "c", "operator": "NotIn", "values": ["y", "x"]},
            {"key": "a", "operator": "Exists"},
            {"key": "d", "operator": "DoesNotExist"},
        ],
    }
    assert label_selector_string(selector) == "a,b=2,c notin (x,y),!d,z=1"
    assert label_selector_string(None) == "" and label_selector_string({}) == ""


def test_format_labels_is_sorted_pairs() -> None:
    assert format_labels({"b": "2", "a": "1"}) == "a=1,b=2"
    assert format_labels(None) == "" and format_labels({}) == ""
