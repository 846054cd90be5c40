"""The kind registry carries one stateless framework plugin per generic-path kind."""

from __future__ import annotations

import pytest

from kubetrain.frameworks.base import FrameworkSettings
from kubetrain.kinds.registry import REGISTRY
from kubetrain.kinds.registry import REPLICA_SPEC_KINDS as KINDS
from tests.unit.frameworks.framework_builders import created, framework_for, job, replica, run_status, status


def test_every_generic_kind_has_a_plugin_and_only_they() -> None:
    plugins = {reg.kind: reg.framework_plugin for reg in REGISTRY if reg.framework_plugin is not None}
    assert set(plugins) == set(KINDS)
    for kind, plugin in plugins.items():
        assert plugin is not None and plugin.info is KINDS[kind]
        assert plugin.sets_replica_selector is (kind in ("PyTorchJob", "PaddleJob", "JAXJob"))


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_kind_sets_start_time_once_and_has_no_extra_children_by_default(kind: str) -> None:
    info = KINDS[kind]
    j = job(kind, {rtype: replica(kind, 1) for rtype in info.replica_types})
    st = status([created(kind)])
    st.start_time = "2020-01-01T00:00:00Z"
    assert run_status(j, st).status.start_time == "2020-01-01T00:00:00Z"
    assert run_status(j, status([created(kind)])).status.start_time is not None
    assert framework_for(kind).desired_children(j, FrameworkSettings()) == []
