"""Fuzz: random JSON-ish objects of every kind never make the operator's pure path raise (issue #17).

Each example takes a real job of some kind (the examples directory covers every kind, MPIJob v1
and v2beta1, ChainerJob and Caffe2Job) and replaces one node with an arbitrary value, including
nesting far beyond Python's recursion limit and lone surrogates, then runs it through what the
operator does with a stored object: wire decode, trim, parse, validation, defaults, plan, and the
encoding of the plan's writes. Bounded to run in well under a minute.
"""

from __future__ import annotations

import copy
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubetrain.api import jsonsafe
from kubetrain.api.defaults import apply_defaults
from kubetrain.api.kinds_mpi import parse_extra_job
from kubetrain.api.validation import aggregate, validate_raw
from kubetrain.api.validation_mpi import validate_extra
from kubetrain.controller.config import ControllerConfig
from kubetrain.controller.mpi import plan as mpi_plan
from kubetrain.controller.plan import CreateObject, Observed, PatchObject
from kubetrain.controller.reconciler import plan
from kubetrain.runtime.transport import _decode, _encode
from kubetrain.runtime.trim import trim_generic

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
NOW = datetime(2026, 1, 1, tzinfo=UTC)
CONFIG = ControllerConfig()
EXTRA_KINDS = ("MPIJob", "ChainerJob", "Caffe2Job")
EXAMPLES_PER_RUN = int(os.environ.get("KUBETRAIN_FUZZ_EXAMPLES", "300"))
"""~25 s at 300; a long CI run sets e.g. 25000: 2,500 per kind (MPIJob: per version)."""


def _examples() -> list[dict[str, Any]]:
    docs = []
    for path in sorted(EXAMPLES.rglob("*.yaml")):
        if "invalid" in path.parts:
            continue
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if isinstance(doc, dict) and str(doc.get("apiVersion", "")).startswith("kubeflow.org/"):
                doc.setdefault("metadata", {}).update(namespace="default", uid="uid-1", resourceVersion="7")
                docs.append(doc)
    return docs


BASES = _examples()
BY_KIND: dict[tuple[str, str], list[int]] = {}
for _i, _doc in enumerate(BASES):
    BY_KIND.setdefault((_doc["kind"], _doc["apiVersion"]), []).append(_i)


def nested(depth: int, leaf: Any) -> Any:
    value = leaf
    for i in range(depth):
        value = [value] if i % 3 else {"k": value}
    return value


odd_strings = st.sampled_from(["\ud800", "a\udfffb", "\x00", "Worker", "", "x" * 300, "é", "\U0001f600"])
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
    | odd_strings
)
json_values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.text(max_size=6) | odd_strings, children, max_size=3)
    ),
    max_leaves=8,
)
DEPTHS = st.sampled_from([0, 0, 150, 600, 1500, 5000])


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            out.extend(_paths(child, (*prefix, key)))
    elif isinstance(value, list):
        for i, child in enumerate(value):
            out.extend(_paths(child, (*prefix, i)))
    return out


@st.composite
def recipes(draw: st.DrawFn) -> tuple[int, tuple[Any, ...], Any, int, bool]:
    """Which example, which node, what value, how deep to bury it, and whether to add a key.

    The deep value is built by the test, not drawn: hypothesis prints drawn values recursively."""
    group = draw(st.sampled_from(sorted(BY_KIND)))  # every kind (and MPIJob version) equally often
    index = draw(st.sampled_from(BY_KIND[group]))
    path = draw(st.sampled_from([p for p in _paths(BASES[index]) if p]))
    sibling = draw(st.booleans())
    if sibling:
        path = (*path[:-1], draw(odd_strings | st.sampled_from(["Worker", "command", "zz"])))
    return index, path, draw(json_values), draw(DEPTHS), sibling


def poisoned(recipe: tuple[int, tuple[Any, ...], Any, int, bool]) -> dict[str, Any]:
    index, path, value, depth, _ = recipe
    doc = copy.deepcopy(BASES[index])
    node = doc
    for key in path[:-1]:
        node = node[key]
    if isinstance(node, dict) or (
        isinstance(node, list) and isinstance(path[-1], int) and path[-1] < len(node)
    ):
        node[path[-1]] = nested(depth, value) if depth else value
    return doc


def _through_the_operator(raw: dict[str, Any]) -> None:
    wire = _decode(_encode(raw))  # what the reflector receives: surrogates already U+FFFD
    job = trim_generic(wire)
    if job.get("kind") in EXTRA_KINDS:
        parsed, info, errors = parse_extra_job(job)
        if parsed is not None and info is not None:
            validate_extra(parsed, info.version)
        result = mpi_plan(job, Observed(), NOW, CONFIG, keygen=lambda: (b"private", b"public"))
    else:
        parsed, info, errors = validate_raw(job)
        aggregate(errors)
        if parsed is not None and info is not None:
            apply_defaults(parsed, info)
        result = plan(job, Observed(), NOW, CONFIG)
    for action in result.actions:  # every write must be encodable for the API server
        if isinstance(action, CreateObject | PatchObject):
            _encode(action.obj if isinstance(action, CreateObject) else action.patch)
    if result.status is not None:
        _encode(result.status)
    for event in result.events:
        _encode({"message": event.message})
    jsonsafe.too_deep(job)


@settings(
    max_examples=EXAMPLES_PER_RUN,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(recipes())
def test_poisoned_jobs_of_every_kind_never_raise(recipe: tuple[int, tuple[Any, ...], Any, int, bool]) -> None:
    _through_the_operator(poisoned(recipe))


def test_every_kind_is_covered() -> None:
    kinds = {(d["kind"], d["apiVersion"]) for d in BASES}
    assert {k for k, _ in kinds} >= {
        "TFJob",
        "PyTorchJob",
        "XGBoostJob",
        "PaddleJob",
        "JAXJob",
        "MXJob",
        *EXTRA_KINDS,
    }
    assert ("MPIJob", "kubeflow.org/v2beta1") in kinds and ("MPIJob", "kubeflow.org/v1") in kinds


def test_a_deep_valid_job_is_failed_not_planned() -> None:
    raw = copy.deepcopy(next(d for d in BASES if d["kind"] == "PyTorchJob"))
    specs = raw["spec"]["pytorchReplicaSpecs"]
    container = next(iter(specs.values()))["template"]["spec"]["containers"][0]
    container["command"] = nested(5000, "x")
    result = plan(_decode(_encode(raw)), Observed(), NOW, CONFIG)
    assert not [a for a in result.actions if isinstance(a, CreateObject)]
    assert result.status is not None
    failed = [c for c in result.status["conditions"] if c["type"] == "Failed"]
    assert failed and "nesting too deep" in failed[0]["message"]
