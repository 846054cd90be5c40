"""The registry serves one stateless plugin per generic-path kind."""

from __future__ import annotations

import pytest
from framework_builders import created, job, replica, run_status, status

from kubetrain.api.kinds import KINDS
from kubetrain.frameworks.base import FrameworkSettings
from kubetrain.frameworks.registry import FRAMEWORKS, framework_for


def test_every_generic_kind_has_a_plugin() -> None:
    assert set(FRAMEWORKS) == set(KINDS)
    for kind, plugin in FRAMEWORKS.items():
        assert plugin.info is KINDS[kind]
        assert framework_for(kind) is plugin
        assert plugin.sets_replica_selector is (kind in ("PyTorchJob", "PaddleJob", "JAXJob"))


def test_unknown_kind() -> None:
    with pytest.raises(KeyError, match="MPIJob"):
        framework_for("MPIJob")


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_kind_sets_start_time_once_and_has_no_extra_children_by_default(kind: str) -> None:
    info = KINDS[kind]
    j = job(kind, {rtype: replica(kind, 1) for rtype in info.replica_types})
    st = status([created(kind)])
    st.start_time = "2020-01-01T00:00:00Z"
    assert run_status(j, st).status.start_time == "2020-01-01T00:00:00Z"
    assert run_status(j, status([created(kind)])).status.start_time is not None
    assert framework_for(kind).desired_children(j, FrameworkSettings()) == []
