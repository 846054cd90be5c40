"""Properties every status rule must have, over random replica counts for every kind."""

from __future__ import annotations

import copy
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from kubetrain.frameworks._env import go_json
from kubetrain.kinds.registry import REPLICA_SPEC_KINDS as KINDS
from tests.unit.frameworks.framework_builders import conds, created, job, replica, run_status, status

RESTARTS = ("Never", "OnFailure", "ExitCode")


@st.composite
def scenario(draw: st.DrawFn) -> tuple:
    kind = draw(st.sampled_from(sorted(KINDS)))
    types = draw(st.sets(st.sampled_from(KINDS[kind].replica_types), min_size=1))
    specs, counts = {}, {}
    for rtype in types:
        n = draw(st.integers(1, 4))
        specs[rtype] = replica(kind, n, restart=draw(st.sampled_from(RESTARTS)))
        active = draw(st.integers(0, n))
        succeeded = draw(st.integers(0, n - active))
        counts[rtype] = (active, succeeded, draw(st.integers(0, n - active - succeeded)))
    return kind, specs, counts


@settings(max_examples=300, deadline=None)
@given(scenario())
def test_status_rules_are_idempotent_and_count_once(case: tuple) -> None:
    kind, specs, counts = case
    j = job(kind, specs)
    first = run_status(j, status([created(kind)], **counts))
    assert len(first.metrics) == len(set(first.metrics))
    types = [c[0] for c in conds(first.status)]
    finished = any(c[0] in ("Succeeded", "Failed") and c[1] == "True" for c in conds(first.status))
    if not finished:  # the controller never runs the status rules of a finished job again
        second = run_status(j, copy.deepcopy(first.status))
        assert conds(second.status) == conds(first.status)
        assert second.metrics == [] and second.events == []
    assert len(types) == len(set(types))  # one condition per type
    assert not ({"Running", "Restarting"} <= {c[0] for c in conds(first.status) if c[1] == "True"})
    if "Succeeded" in types or "Failed" in types:
        assert first.status.completion_time is not None


@given(st.text())
def test_go_json_round_trips_and_escapes_html(text: str) -> None:
    encoded = go_json({"k": text})
    assert json.loads(encoded) == {"k": text}
    assert not {"<", ">", "&"} & set(encoded)
