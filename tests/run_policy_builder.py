"""The runPolicy setters the job builders of the unit and integration suites share."""

from __future__ import annotations

from typing import Any, Self


class RunPolicySetters:
    """Mixin for a builder holding the job dict in `self.obj`."""

    obj: dict[str, Any]

    def run_policy(self, **fields: Any) -> Self:
        self.obj["spec"].setdefault("runPolicy", {}).update(fields)
        return self

    def clean_pod_policy(self, policy: str) -> Self:
        return self.run_policy(cleanPodPolicy=policy)

    def backoff_limit(self, limit: int) -> Self:
        return self.run_policy(backoffLimit=limit)

    def active_deadline(self, seconds: int) -> Self:
        return self.run_policy(activeDeadlineSeconds=seconds)

    def ttl(self, seconds: int) -> Self:
        return self.run_policy(ttlSecondsAfterFinished=seconds)

    def suspend(self, value: bool = True) -> Self:
        return self.run_policy(suspend=value)

    def managed_by(self, value: str) -> Self:
        return self.run_policy(managedBy=value)
