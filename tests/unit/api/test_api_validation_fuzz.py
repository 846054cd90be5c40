"""Property tests: arbitrary JSON anywhere in a job never crashes validation, and an invalid job is
always reported with a field path that points at (or into, or above) the broken place."""

from __future__ import annotations

import re
from typing import Any

from api_builders import deep, example_documents, valid_job
from hypothesis import given, settings
from hypothesis import strategies as st

from kubetrain.api.defaults import apply_defaults
from kubetrain.api.fielderrors import ErrorList
from kubetrain.api.validation import aggregate, validate_raw, validate_raw_with_warnings
from kubetrain.kinds.registry import REPLICA_SPEC_KINDS as KINDS
from kubetrain.kube.names import is_dns1035_label

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=80)
    | st.sampled_from(["", "Worker", "worker", "Master", "0-bad", "a" * 70, "auto", "-1", "Never"]),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)

BASES = [doc for _, doc in example_documents()] + [valid_job(kind) for kind in sorted(KINDS)]
Path = tuple[str | int, ...]


def all_paths(value: Any, prefix: Path = ()) -> list[Path]:
    out = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            out.extend(all_paths(child, (*prefix, key)))
    elif isinstance(value, list):
        for i, child in enumerate(value):
            out.extend(all_paths(child, (*prefix, i)))
    return out


def substitute(doc: Any, path: Path, value: Any) -> Any:
    if not path:
        return value
    out = deep(doc)
    node = out
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return out


@st.composite
def mutated_jobs(draw: st.DrawFn) -> tuple[Any, Path]:
    """A valid job with one node (or a new key) replaced by an arbitrary JSON value."""
    doc = draw(st.sampled_from(BASES))
    path = draw(st.sampled_from(all_paths(doc)))
    if draw(st.booleans()) and path:
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        if isinstance(parent, dict):  # add a sibling key (unknown field / unknown replica type)
            path = (*path[:-1], draw(st.sampled_from(["Foo", "worker", "zz", "Evaluator", "Scheduler"])))
    return substitute(doc, path, draw(json_values)), path


def tokens(field: str) -> tuple[str, ...]:
    return tuple(t for t in re.split(r"[.\[\]]", field) if t)


def related(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    n = min(len(a), len(b))
    return a[:n] == b[:n]


def _is_count(value: Any, high: int) -> bool:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= high


RUN_POLICY_LIMITS = {
    "backoffLimit": 2**31 - 1,
    "ttlSecondsAfterFinished": 2**31 - 1,
    "activeDeadlineSeconds": 2**63 - 1,
}


def known_invalid(path: Path, value: Any) -> bool:
    """A conservative oracle: substitutions that every kind must reject."""
    keys = tuple(str(k) for k in path)
    if keys == ("metadata", "name"):
        return not isinstance(value, str) or bool(is_dns1035_label(value))
    if keys == ("apiVersion",):
        return value != "kubeflow.org/v1"
    if keys == ("kind",):
        return not (isinstance(value, str) and value in KINDS)
    if keys == ("spec",):
        return not (isinstance(value, dict) and any(str(k).endswith("ReplicaSpecs") for k in value))
    if len(keys) == 2 and keys[0] == "spec" and keys[1].endswith("ReplicaSpecs"):
        return True  # generated JSON is never a map of complete replica specs
    if len(keys) == 4 and keys[0] == "spec" and keys[1].endswith("ReplicaSpecs"):
        if keys[3] == "replicas":
            return value is not None and not _is_count(value, 10000)
        if keys[3] == "template":
            return True  # generated JSON never holds a container with name and image
    if len(keys) == 6 and keys[4:] == ("spec", "containers"):
        return True
    if len(keys) == 8 and keys[5] == "containers" and keys[7] in ("image", "name"):
        return not (isinstance(value, str) and value)
    if len(keys) == 3 and keys[:2] == ("spec", "runPolicy"):
        if keys[2] in RUN_POLICY_LIMITS:
            return value is not None and not _is_count(value, RUN_POLICY_LIMITS[keys[2]])
        if keys[2] == "cleanPodPolicy":
            return value not in ("All", "Running", "None", "", None)
    return False


@settings(max_examples=300, deadline=None)
@given(mutated_jobs())
def test_validation_never_raises_and_names_the_broken_field(case: tuple[Any, Path]) -> None:
    raw, path = case
    parsed, info, errors = validate_raw(raw, kinds=KINDS)
    assert isinstance(errors, ErrorList)
    for err in errors:
        assert isinstance(err.field, str) and err.field
        assert str(err)
    aggregate(errors)
    if parsed is not None and info is not None:
        apply_defaults(parsed, info)  # the controller defaults whatever is stored: must not raise
    value = raw
    for key in path:
        value = value[key]
    if known_invalid(path, value):
        assert errors, f"expected an error for {path}={value!r}"
        want = tokens(".".join(str(k) for k in path))
        assert any(related(tokens(e.field), want) for e in errors), (path, [str(e) for e in errors])


@settings(max_examples=200, deadline=None)
@given(mutated_jobs(), st.sampled_from(BASES))
def test_updates_never_raise(case: tuple[Any, Path], old: Any) -> None:
    raw, _ = case
    validate_raw_with_warnings(raw, deep(old), kinds=KINDS)
    validate_raw_with_warnings(deep(old), raw, kinds=KINDS)


@settings(max_examples=200, deadline=None)
@given(json_values)
def test_arbitrary_top_level_values_never_raise(raw: Any) -> None:
    _, _, errors = validate_raw(raw, kinds=KINDS)
    assert errors  # nothing arbitrary is a valid job


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(sorted(KINDS)), json_values)
def test_arbitrary_spec_of_a_known_kind_never_raises(kind: str, spec: Any) -> None:
    raw = {"apiVersion": "kubeflow.org/v1", "kind": kind, "metadata": {"name": "x"}, "spec": spec}
    validate_raw(raw, kinds=KINDS)
