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
from typing import Any

from hypothesis import HealthCheck, given, settings

from kubetrain.api.defaults import apply_defaults
from kubetrain.api.validation import aggregate, validate_raw
from kubetrain.controller.config import ControllerConfig
from kubetrain.controller.plan import CreateObject, Observed, PatchObject
from kubetrain.kinds.mpijob.planner import plan as mpi_plan
from kubetrain.kinds.registry import REPLICA_SPEC_KINDS as KINDS
from kubetrain.kinds.registry import plan, registration_for
from kubetrain.kube import jsonsafe
from kubetrain.runtime.transport import _decode, _encode
from kubetrain.runtime.trim import trim_generic
from tests.poison_jobs import Recipe, example_jobs, nested, recipes

NOW = datetime(2026, 1, 1, tzinfo=UTC)
CONFIG = ControllerConfig()
EXTRA_KINDS = ("MPIJob", "ChainerJob", "Caffe2Job")
EXAMPLES_PER_RUN = int(os.environ.get("KUBETRAIN_FUZZ_EXAMPLES", "300"))
"""~25 s at 300; a long CI run sets e.g. 25000: 2,500 per kind (MPIJob: per version)."""


def _stored(doc: dict[str, Any]) -> dict[str, Any]:
    """An example as the API server would store it."""
    meta = {**doc.get("metadata", {}), "namespace": "default", "uid": "uid-1", "resourceVersion": "7"}
    return {**doc, "metadata": meta}


BASES = [_stored(doc) for doc in example_jobs()]


def _through_the_operator(raw: dict[str, Any]) -> None:
    wire = _decode(_encode(raw))  # what the reflector receives: surrogates already U+FFFD
    job = trim_generic(wire)
    if job.get("kind") in EXTRA_KINDS:
        reg = registration_for(job.get("kind"))
        assert reg is not None and reg.problems is not None
        parsed, info, errors = reg.parse(job)
        if parsed is not None and info is not None:
            reg.problems(parsed, info)
        result = mpi_plan(job, Observed(), NOW, CONFIG, keygen=lambda: (b"private", b"public"))
    else:
        parsed, info, errors = validate_raw(job, kinds=KINDS)
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
@given(recipes(BASES))
def test_poisoned_jobs_of_every_kind_never_raise(recipe: Recipe) -> None:
    _through_the_operator(recipe.apply(BASES))


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
