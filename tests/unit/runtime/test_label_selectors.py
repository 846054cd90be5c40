import pytest

from kubetrain.runtime.labels import matches

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
