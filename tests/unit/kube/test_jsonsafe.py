"""jsonsafe: user JSON of any depth parsed, encoded and walked without recursion, as Go does."""

from __future__ import annotations

import orjson
import pytest

from kubetrain.kube import jsonsafe
from tests.nesting import DEPTHS, depth_of, nested


@pytest.mark.parametrize("depth", DEPTHS)
def test_loads_and_dumps_any_depth(depth: int) -> None:
    value = {"a": nested(depth)}
    text = jsonsafe.dumps(value)
    with pytest.raises(TypeError):
        orjson.dumps(value)  # what the fallback is for
    back = jsonsafe.loads(text)
    assert depth_of(back["a"]) == depth
    assert jsonsafe.dumps(back) == text


def test_loads_matches_orjson_on_ordinary_json() -> None:
    text = b'{"a": [1, -2.5e3, true, false, null, "\\u00e9\\n", {"b": []}, {}], "c" : "d"}'
    assert jsonsafe._parse(text.decode()) == orjson.loads(text)


@pytest.mark.parametrize("bad", ["[1,]", '{"a" 1}', "[1 2]", "", "{", "[1]x", "nul", '{"a":1,}'])
def test_loads_rejects_what_is_not_json(bad: str) -> None:
    with pytest.raises(jsonsafe.JSONError):
        jsonsafe.loads(bad)


def test_lone_surrogates_become_replacement_characters_like_go() -> None:
    assert jsonsafe.loads(b'{"a": "x\\ud800y", "\\udc00": ["\\ud83d\\ude00"]}') == {
        "a": "x\ufffdy",
        "\ufffd": ["\U0001f600"],
    }
    assert orjson.loads(jsonsafe.dumps({"a": "\ud800", "\udfff": 1})) == {"a": "\ufffd", "\ufffd": 1}


@pytest.mark.parametrize("depth", DEPTHS)
def test_too_deep_names_the_first_path_past_the_limit(depth: int) -> None:
    path = jsonsafe.too_deep({"spec": {"x": nested(depth)}}, 10)
    assert path == "spec.x[0].k[0].k[0].k[0].k"  # levels 1 (root) to 11
    assert jsonsafe.too_deep({"spec": nested(8)}, 10) is None
