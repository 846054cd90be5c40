"""Decoding then encoding a job gives back exactly what the user wrote (nothing lost, nothing added)."""

from __future__ import annotations

from typing import Any

import pytest
from api_builders import deep, example_documents, job, replica
from hypothesis import given, settings
from hypothesis import strategies as st

from kubetrain.api.codec import json_clone
from kubetrain.api.jobs import job_to_dict, parse_job
from kubetrain.api.validation import validate_raw
from kubetrain.kinds.registry import REPLICA_SPEC_KINDS as KINDS

EXAMPLES = example_documents()


def test_every_kind_has_an_example() -> None:
    kinds = {doc["kind"] for _, doc in EXAMPLES}
    assert kinds == set(KINDS)


@pytest.mark.parametrize(("name", "doc"), EXAMPLES, ids=[n for n, _ in EXAMPLES])
def test_examples_round_trip_and_validate(name: str, doc: Any) -> None:
    parsed, info, errors = validate_raw(deep(doc), kinds=KINDS)
    assert parsed is not None and info is not None
    assert list(errors.messages()) == []
    assert job_to_dict(parsed) == doc


def _with_unknown_fields() -> dict[str, Any]:
    info = KINDS["PyTorchJob"]
    raw = job(
        "PyTorchJob",
        {"Master": replica(info), "Worker": {**replica(info, 2), "futureReplicaField": {"a": [1, 2]}}},
        runPolicy={
            "cleanPodPolicy": "All",
            "schedulingPolicy": {"queue": "q", "minResources": {"cpu": "2", "memory": 1024}, "x-new": True},
            "somethingNew": 3,
        },
        elasticPolicy={"rdzvConf": [{"key": "k", "value": "v", "extra": 1}], "newKnob": "x"},
        nprocPerNode="auto",
        newSpecField=[{"deep": {"deeper": None}}],
    )
    raw["metadata"].update({"labels": {"a": "b"}, "annotations": {"x": "y"}, "uid": "123"})
    raw["newTopLevel"] = {"k": "v"}
    raw["status"] = {
        "conditions": [
            {"type": "Created", "status": "True", "reason": "PyTorchJobCreated", "observedGen": 2}
        ],
        "replicaStatuses": {"Worker": {"active": 2, "selector": "a=b", "ready": 1}},
        "startTime": "2024-01-01T00:00:00Z",
        "unknownStatus": {"x": 1},
    }
    return raw


def test_unknown_fields_everywhere_survive() -> None:
    raw = _with_unknown_fields()
    parsed, _, errors = parse_job(deep(raw), KINDS)
    assert parsed is not None and not errors
    assert job_to_dict(parsed) == raw


# ---- generated valid jobs -----------------------------------------------------------------------

_LETTERS = "abcdefghijklmnopqrstuvwxyz"
names = st.builds(
    lambda head, body: head + body,
    st.sampled_from(_LETTERS),
    st.text(alphabet=_LETTERS + "0123456789", max_size=20),
)
unknown_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3)
    ),
    max_leaves=6,
)
unknown_fields = st.dictionaries(st.sampled_from(["zz1", "zz2", "futureField"]), unknown_values, max_size=2)


@st.composite
def valid_jobs(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(sorted(KINDS)))
    info = KINDS[kind]
    specs: dict[str, Any] = {}
    types = {
        "PyTorchJob": ["Master", "Worker"],
        "XGBoostJob": ["Master", "Worker"],
        "TFJob": draw(st.sampled_from([["Worker"], ["PS", "Worker"], ["Chief", "Worker", "Evaluator"]])),
        "MXJob": ["Scheduler", "Server", "Worker"],
    }.get(kind, ["Worker"])
    for rtype in types:
        count = 1 if rtype in ("Master", "Scheduler") else draw(st.integers(1, 8))
        spec = replica(
            info, count, restart=draw(st.sampled_from([None, "OnFailure", "Never", "ExitCode", "Always"]))
        )
        spec.update(draw(unknown_fields))
        specs[rtype] = spec
    run_policy: dict[str, Any] = draw(
        st.fixed_dictionaries(
            {},
            optional={
                "cleanPodPolicy": st.sampled_from(["All", "Running", "None"]),
                "backoffLimit": st.integers(0, 10),
                "activeDeadlineSeconds": st.integers(0, 10**6),
                "ttlSecondsAfterFinished": st.integers(0, 10**4),
                "suspend": st.booleans(),
                "managedBy": st.sampled_from(["kubeflow.org/training-operator", "kueue.x-k8s.io/multikueue"]),
                "schedulingPolicy": st.fixed_dictionaries(
                    {}, optional={"queue": st.text(max_size=8), "minAvailable": st.integers(0, 9)}
                ),
            },
        )
    )
    extra_spec: dict[str, Any] = {}
    if run_policy:
        extra_spec["runPolicy"] = run_policy
    extra_spec.update(draw(unknown_fields))
    raw = job(kind, specs, draw(names), **extra_spec)
    if kind == "JAXJob":
        raw["spec"].get("runPolicy", {}).pop("managedBy", None)
    return raw


@settings(max_examples=200, deadline=None)
@given(valid_jobs())
def test_generated_valid_jobs_round_trip_exactly(raw: dict[str, Any]) -> None:
    parsed, info, errors = validate_raw(deep(raw), kinds=KINDS)
    assert parsed is not None and info is not None
    assert list(errors.messages()) == []
    assert job_to_dict(parsed) == raw


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
        max_leaves=20,
    )
)
@settings(max_examples=200, deadline=None)
def test_json_clone_is_an_equal_copy_sharing_no_container(value: Any) -> None:
    copied = json_clone(value)
    assert copied == value

    def containers(v: Any) -> list[int]:
        if isinstance(v, dict):
            return [id(v), *(i for x in v.values() for i in containers(x))]
        if isinstance(v, list):
            return [id(v), *(i for x in v for i in containers(x))]
        return []

    assert not set(containers(copied)) & set(containers(value))
