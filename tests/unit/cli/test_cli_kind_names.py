"""Kind names as users type them resolve to one KindInfo; anything else is a clear error."""

from __future__ import annotations

import pytest

from kubetrain.client.errors import EXIT_INVALID, UnknownKind
from kubetrain.client.kinds import all_kinds, resolve_kind
from kubetrain.kinds.registry import REPLICA_SPEC_KINDS as KINDS


@pytest.mark.parametrize(
    "name",
    ["TFJob", "tfjob", "tfjobs", "TFJobs", "TFJOB", " tfjob ", "tfjobs.kubeflow.org", "TFJob.kubeflow.org"],
)
def test_tfjob_spellings(name: str) -> None:
    assert resolve_kind(name).kind == "TFJob"


@pytest.mark.parametrize("info", list(KINDS.values()), ids=list(KINDS))
def test_every_kind_by_kind_plural_singular(info: object) -> None:
    for name in (info.kind, info.plural, info.singular, info.kind.upper()):  # type: ignore[attr-defined]
        assert resolve_kind(name) is info


def test_unknown_kind_lists_the_valid_names() -> None:
    with pytest.raises(UnknownKind) as exc:
        resolve_kind("pytorch")
    assert 'unknown job kind "pytorch"' in str(exc.value)
    assert "pytorchjob" in str(exc.value) and "tfjob" in str(exc.value)
    assert exc.value.exit_code == EXIT_INVALID


def test_other_group_is_not_ours() -> None:
    with pytest.raises(UnknownKind):
        resolve_kind("tfjobs.example.com")


def test_all_kinds_in_registry_order() -> None:
    assert [i.kind for i in all_kinds()] == [*KINDS, "MPIJob", "ChainerJob", "Caffe2Job", "TrainJob"]


@pytest.mark.parametrize(
    ("name", "api_version"),
    [
        ("mpijob", "kubeflow.org/v1"),
        ("MPIJobs", "kubeflow.org/v1"),
        ("chj", "kubeflow.org/v1alpha1"),
        ("caffe2jobs.kubeflow.org", "kubeflow.org/v1alpha1"),
        ("trainjob", "trainer.kubeflow.org/v1alpha1"),
        ("trainjobs.trainer.kubeflow.org", "trainer.kubeflow.org/v1alpha1"),
    ],
)
def test_kinds_with_their_own_planners(name: str, api_version: str) -> None:
    assert resolve_kind(name).api_version == api_version
