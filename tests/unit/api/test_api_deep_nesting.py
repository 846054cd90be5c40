"""Every walker of user data survives nesting 600 and 5,000 deep and lone surrogates (issue #17).

kube-apiserver stores JSON nested up to 10,000 deep; Python recursion stops at ~1,000 and orjson at
1,024 (decoding) / 254 (encoding). A job that deep must yield a field error, never an exception.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from api_builders import valid_job

from kubetrain.api import jsonsafe
from kubetrain.api.codec import decode, encode, json_clone
from kubetrain.api.defaults import apply_defaults
from kubetrain.api.jobs import parse_job
from kubetrain.api.kinds import KINDS
from kubetrain.api.kinds_mpi import parse_extra_job
from kubetrain.api.types import TrainingJob
from kubetrain.api.validation import aggregate, validate_raw
from kubetrain.api.validation_mpi import validate_extra

DEPTHS = (600, 5000)


def nested(depth: int, leaf: Any = "x") -> Any:
    value = leaf
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


def depth_of(value: Any) -> int:
    level = 0
    while isinstance(value, dict | list):
        value = value["k"] if isinstance(value, dict) else value[0]
        level += 1
    return level


def deep_job(kind: str, depth: int) -> dict[str, Any]:
    job = valid_job(kind)
    specs = job["spec"][KINDS[kind].replica_specs_field]
    container = next(iter(specs.values()))["template"]["spec"]["containers"][0]
    container["command"] = [nested(depth)]
    return job


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


@pytest.mark.parametrize("depth", DEPTHS)
def test_json_clone_and_clone_copy_any_depth(depth: int) -> None:
    value = nested(depth)
    for copied in (json_clone(value), jsonsafe.clone(value), jsonsafe.scrub(value)):
        assert copied is not value
        assert depth_of(copied) == depth


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("depth", DEPTHS)
def test_decode_validate_default_encode_a_deep_job(kind: str, depth: int) -> None:
    raw = deep_job(kind, depth)
    job, info, errors = parse_job(raw)
    assert job is not None and info is not None
    assert any("nesting too deep" in str(e) for e in errors), errors
    apply_defaults(job, info)
    encoded = encode(job)["spec"][KINDS[kind].replica_specs_field]
    command = next(iter(encoded.values()))["template"]["spec"]["containers"][0]["command"]
    assert depth_of(command[0]) == depth  # nothing lost on the way back out
    _, _, verrors = validate_raw(raw)
    message = aggregate(verrors)
    field = KINDS[kind].replica_specs_field
    assert f"spec.{field}." in message and "nesting too deep: at most 100 levels" in message


def test_shallow_jobs_have_no_depth_error() -> None:
    raw = deep_job("PyTorchJob", 60)
    _, _, errors = validate_raw(raw)
    assert not errors, errors


@pytest.mark.parametrize("version", ["v1", "v2beta1"])
@pytest.mark.parametrize("depth", DEPTHS)
def test_mpi_jobs_report_depth(version: str, depth: int) -> None:
    launcher = {"name": "launcher", "image": "busybox", "command": [nested(depth)]}
    raw = {
        "apiVersion": f"kubeflow.org/{version}",
        "kind": "MPIJob",
        "metadata": {"name": "deep"},
        "spec": {
            "slotsPerWorker": 1,
            "mpiReplicaSpecs": {
                "Launcher": {"replicas": 1, "template": {"spec": {"containers": [launcher]}}},
                "Worker": {"replicas": 1, "template": {"spec": {"containers": [dict(launcher, name="w")]}}},
            },
        },
    }
    job, info, errors = parse_extra_job(raw)
    assert job is not None and info is not None
    assert any("nesting too deep" in str(e) for e in errors)
    validate_extra(job, info.version)  # must not raise


def test_decode_with_odd_strings_never_raises() -> None:
    raw = valid_job("TFJob")
    raw["metadata"]["labels"] = {"\ud800": "\udfff"}
    raw["spec"]["tfReplicaSpecs"]["\ud800"] = {"replicas": "\ud800"}
    job, errors = decode(TrainingJob, {k: v for k, v in raw.items() if k != "spec"})
    assert job is not None and not errors
    assert job.metadata["labels"] == {"\ud800": "\udfff"}
    _, _, verrors = validate_raw(raw)
    assert verrors
    aggregate(verrors)
