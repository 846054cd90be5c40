"""``successPolicy``: when enough Jobs of the targeted replicated jobs have completed
(upstream's ``success_policy.go`` and ``executeSuccessPolicy``)."""

from __future__ import annotations

from typing import Any

from . import constants as c
from .children import labels

JsonDict = dict[str, Any]


def _targets(js: JsonDict) -> list[str]:
    return list(((js.get("spec") or {}).get("successPolicy") or {}).get("targetReplicatedJobs") or [])


def jobs_matching(js: JsonDict, jobs: list[JsonDict]) -> int:
    targets = _targets(js)
    return sum(1 for j in jobs if not targets or labels(j).get(c.REPLICATED_JOB_NAME_KEY) in targets)


def jobs_expected_to_succeed(js: JsonDict) -> int:
    """1 for ``Any``; for ``All`` the replicas of every targeted replicated job (0 otherwise)."""
    policy = (js.get("spec") or {}).get("successPolicy") or {}
    operator = policy.get("operator")
    if operator == c.OPERATOR_ANY:
        return 1
    if operator == c.OPERATOR_ALL:
        targets = _targets(js)
        return sum(
            int(r.get("replicas") or 0)
            for r in (js.get("spec") or {}).get("replicatedJobs") or []
            if not targets or r.get("name") in targets
        )
    return 0


def succeeded(js: JsonDict, successful: list[JsonDict]) -> bool:
    return jobs_matching(js, successful) >= jobs_expected_to_succeed(js)
