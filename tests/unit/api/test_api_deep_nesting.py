"""Every walker of user data survives nesting 600 and 5,000 deep and lone surrogates (issue #17).

kube-apiserver stores JSON nested up to 10,000 deep; Python recursion stops at ~1,000 and orjson at
1,024 (decoding) / 254 (encoding). A job that deep must yield a field error, never an exception.
"""

from __future__ import annotations

from typing import Any

import pytest
from api_builders import valid_job

from kubetrain.api.codec import decode, encode, json_clone
from kubetrain.api.defaults import apply_defaults
from kubetrain.api.jobs import parse_job
from kubetrain.api.types import TrainingJob
from kubetrain.api.validation import aggregate, validate_raw
from kubetrain.kinds.mpijob.validation import problems as mpijob_problems
from kubetrain.kinds.mpijob.wire import parse as parse_mpijob
from kubetrain.kinds.registry import REPLICA_SPEC_KINDS as KINDS
from kubetrain.kube import jsonsafe
from tests.nesting import DEPTHS, depth_of, nested


def deep_job(kind: str, depth: int) -> dict[str, Any]:
    job = valid_job(kind)
    specs = job["spec"][KINDS[kind].replica_specs_field]
    container = next(iter(specs.values()))["template"]["spec"]["containers"][0]
    container["command"] = [nested(depth)]
    return job


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
    job, info, errors = parse_job(raw, KINDS)
    assert job is not None and info is not None
    assert any("nesting too deep" in str(e) for e in errors), errors
    apply_defaults(job, info)
    encoded = encode(job)["spec"][KINDS[kind].replica_specs_field]
    command = next(iter(encoded.values()))["template"]["spec"]["containers"][0]["command"]
    assert depth_of(command[0]) == depth  # nothing lost on the way back out
    _, _, verrors = validate_raw(raw, kinds=KINDS)
    message = aggregate(verrors)
    field = KINDS[kind].replica_specs_field
    assert f"spec.{field}." in message and "nesting too deep: at most 100 levels" in message


def test_shallow_jobs_have_no_depth_error() -> None:
    raw = deep_job("PyTorchJob", 60)
    _, _, errors = validate_raw(raw, kinds=KINDS)
    assert not errors, errors


@pytest.mark.parametrize("version", ["v1", "v2beta1", "v1alpha2"])
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
    job, info, errors = parse_mpijob(raw)
    assert job is not None and info is not None
    assert any("nesting too deep" in str(e) for e in errors)
    mpijob_problems(job, info)  # must not raise


def test_decode_with_odd_strings_never_raises() -> None:
    raw = valid_job("TFJob")
    raw["metadata"]["labels"] = {"\ud800": "\udfff"}
    raw["spec"]["tfReplicaSpecs"]["\ud800"] = {"replicas": "\ud800"}
    job, errors = decode(TrainingJob, {k: v for k, v in raw.items() if k != "spec"})
    assert job is not None and not errors
    assert job.metadata["labels"] == {"\ud800": "\udfff"}
    _, _, verrors = validate_raw(raw, kinds=KINDS)
    assert verrors
    aggregate(verrors)
