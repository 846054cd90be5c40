# ruff: noqa: RUF009  (`wire()` returns a dataclasses.field; the call is the declaration, not a shared default)
"""A replica-spec kind described outside the api layer is parsed, validated, defaulted and gets its
CRD from its description alone: the api layer holds no table of kinds, so a new kind's package
(`kubetrain/frameworks/<name>/wire.py`) needs no edit below it."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from kubetrain.api.crds import crd_for
from kubetrain.api.defaults import apply_defaults
from kubetrain.api.fielderrors import ErrorList, invalid
from kubetrain.api.jobs import parse_job
from kubetrain.api.kinds import KindRules
from kubetrain.api.types import REQUIRED, JsonDict, ReplicaSpec, RunPolicy, extra_keys, wire
from kubetrain.api.validation import validate_raw
from kubetrain.kinds.registry import REPLICA_SPEC_KINDS


@dataclass
class FooJobSpec:
    run_policy: RunPolicy | None = wire("runPolicy")
    replica_specs: dict[str, ReplicaSpec | None] | None = wire("fooReplicaSpecs", schema=REQUIRED)
    flavour: str | None = wire("flavour")
    extra: JsonDict = extra_keys()


def _flavour_known(spec: Any, errs: ErrorList) -> None:
    if isinstance(spec, FooJobSpec) and spec.flavour not in (None, "plain"):
        errs.append(invalid("spec.flavour", spec.flavour, "must be plain"))


def _flavour_default(spec: Any) -> None:
    if isinstance(spec, FooJobSpec) and spec.flavour is None:
        spec.flavour = "plain"


FOOJOB = replace(
    REPLICA_SPEC_KINDS["JAXJob"],
    kind="FooJob",
    plural="foojobs",
    singular="foojob",
    replica_specs_field="fooReplicaSpecs",
    replica_types=("Worker",),
    default_container="foo",
    default_port_name="foo-port",
    default_port=7777,
    spec_type=FooJobSpec,
    rules=KindRules(spec_checks=_flavour_known, spec_defaults=_flavour_default),
)
KINDS = {**REPLICA_SPEC_KINDS, FOOJOB.kind: FOOJOB}


def foojob(**spec: Any) -> JsonDict:
    worker = {"replicas": 2, "template": {"spec": {"containers": [{"name": "foo", "image": "foo:1"}]}}}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "FooJob",
        "metadata": {"name": "f"},
        "spec": {"fooReplicaSpecs": {"worker": worker}, **spec},
    }


def test_it_is_parsed_with_its_own_spec_type_and_defaulted_by_its_own_hook() -> None:
    job, info, errors = parse_job(foojob(), KINDS)
    assert job is not None and info is FOOJOB and not errors
    assert isinstance(job.spec, FooJobSpec)
    defaulted = apply_defaults(job, info)
    assert isinstance(defaulted.spec, FooJobSpec) and defaulted.spec.flavour == "plain"
    worker = defaulted.replica_specs["Worker"]  # the key in its canonical casing
    assert worker is not None and worker.template is not None
    ports = worker.template["spec"]["containers"][0]["ports"]
    assert ports == [{"name": "foo-port", "containerPort": 7777}]


def test_it_is_validated_by_the_shared_rules_and_its_own() -> None:
    _, _, errors = validate_raw(foojob(flavour="spicy"), kinds=KINDS)
    assert [str(e) for e in errors] == [
        'spec.fooReplicaSpecs[worker]: Unsupported value: "worker": supported values: "Worker"',
        'spec.flavour: Invalid value: "spicy": must be plain',
    ]


def test_a_table_without_it_refuses_it_by_name() -> None:
    job, info, errors = parse_job(foojob(), REPLICA_SPEC_KINDS)
    assert job is None and info is None
    assert str(errors).startswith('kind: Unsupported value: "FooJob": supported values: "TFJob"')


def test_its_crd_comes_from_its_description() -> None:
    crd = crd_for([FOOJOB])
    assert crd["metadata"]["name"] == "foojobs.kubeflow.org"
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert spec["required"] == ["fooReplicaSpecs"] and "flavour" in spec["properties"]
