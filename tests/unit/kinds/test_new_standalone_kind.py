# ruff: noqa: RUF009  (`wire()` returns a dataclasses.field; the call is the declaration, not a shared default)
"""A kind off the generic path (its own envelope, status, versions and planner, as MPIJob,
ChainerJob and Caffe2Job are) is parsed and gets its CRD and its registration from its own package
alone: `api.standalone` and `api.types.Envelope` hold no table of kinds, so a new package of
`kubetrain.kinds` needs no edit below it."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from kubetrain.api.codec import encode
from kubetrain.api.crds import crd_for
from kubetrain.api.kinds import KindInfo
from kubetrain.api.standalone import parse_standalone
from kubetrain.api.types import I32, REQUIRED, Envelope, JsonDict, extra_keys, wire
from kubetrain.controller.config import ControllerConfig
from kubetrain.controller.plan import Observed, Plan
from kubetrain.kinds.registration import KindRegistration
from kubetrain.kinds.registry import BY_KIND


@dataclass
class BarSpec:
    workers: I32 | None = wire("workers", schema=REQUIRED)
    extra: JsonDict = extra_keys()


@dataclass
class BarSpecV2:
    workers: I32 | None = wire("workers", schema=REQUIRED)
    shards: I32 | None = wire("shards", schema={"default": 1})
    extra: JsonDict = extra_keys()


@dataclass
class BarStatus:
    phase: str | None = wire("phase")
    extra: JsonDict = extra_keys()


@dataclass
class BarJob(Envelope):
    spec: BarSpec | BarSpecV2 | None = wire("spec")
    status: BarStatus | None = wire("status")
    extra: JsonDict = extra_keys()


BARJOB_V1 = replace(
    BY_KIND["Caffe2Job"].info,
    kind="BarJob",
    plural="barjobs",
    singular="barjob",
    spec_type=BarSpec,
    status_type=BarStatus,
    version="v1",
)
BARJOB_V2 = replace(BARJOB_V1, spec_type=BarSpecV2, version="v2")


def version_of(raw: dict[str, Any]) -> str:
    return "v2" if "shards" in (raw.get("spec") or {}) else "v1"


def parse(raw: Any) -> tuple[BarJob | None, KindInfo | None, Any]:
    return parse_standalone(raw, (BARJOB_V1, BARJOB_V2), BarJob, version_of)


def plan(job: JsonDict, observed: Observed, now: datetime, config: ControllerConfig) -> Plan:
    return Plan()


REGISTRATION = KindRegistration(versions=(BARJOB_V1, BARJOB_V2), planner=plan, parse=parse)


def barjob(api_version: str = "kubeflow.org/v1", **spec: Any) -> JsonDict:
    return {
        "apiVersion": api_version,
        "kind": "BarJob",
        "metadata": {"name": "b"},
        "spec": {"workers": 2, **spec},
        "status": {"phase": "Running"},
    }


def test_it_is_parsed_into_its_own_envelope_with_the_types_of_the_version_it_was_written_in() -> None:
    job, info, errors = REGISTRATION.parse(barjob())
    assert isinstance(job, BarJob) and info is BARJOB_V1 and not errors
    assert isinstance(job.spec, BarSpec) and isinstance(job.status, BarStatus) and job.name == "b"
    # Read through the other endpoint, it keeps the mechanics (and spec type) it was written with.
    raw = barjob("kubeflow.org/v1", shards=3)
    job, info, errors = REGISTRATION.parse(raw)
    assert info is BARJOB_V2 and isinstance(job, BarJob) and isinstance(job.spec, BarSpecV2) and not errors
    assert encode(job) == raw


def test_it_refuses_other_kinds_and_versions_it_does_not_serve() -> None:
    job, info, errors = parse({**barjob(), "kind": "Caffe2Job"})
    assert job is None and info is None
    assert str(errors) == 'kind: Unsupported value: "Caffe2Job": supported values: "BarJob"'
    _, _, errors = parse(barjob("kubeflow.org/v3"))
    supported = '"kubeflow.org/v1", "kubeflow.org/v2"'
    assert str(errors) == f'apiVersion: Unsupported value: "kubeflow.org/v3": supported values: {supported}'


def test_its_registration_derives_its_crd() -> None:
    assert REGISTRATION.kind == "BarJob" and REGISTRATION.info is BARJOB_V1
    crd = crd_for(REGISTRATION.versions)
    assert crd["metadata"]["name"] == "barjobs.kubeflow.org"
    assert [v["name"] for v in crd["spec"]["versions"]] == ["v1", "v2"]
    assert (
        REGISTRATION.planner(barjob(), Observed(), datetime(2026, 1, 1, tzinfo=UTC), ControllerConfig())
        == Plan()
    )
