"""``failurePolicy``: what a failed child Job does to its JobSet (upstream's ``failure_policy.go``).

No policy: the JobSet fails (``FailedJobs``). Otherwise the first rule matching a failed Job (by
the Job's failure reason, message pattern and replicated job; the earliest failure wins) picks
an action, ``RestartJobSet`` when none matches; each action is one applier in `ACTIONS`.
A restart only bumps ``status.restarts``: the next pass sees every Job as from an earlier
attempt, deletes them and creates the new attempt's.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from . import constants as c
from .children import labels
from .conditions import Event, set_failed

JsonDict = dict[str, Any]
Applier = Callable[[JsonDict, JsonDict, JsonDict, list[Event], str], None]


def failure_condition(job: JsonDict) -> JsonDict | None:
    for cond in (job.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Failed" and cond.get("status") == "True":
            return dict(cond)
    return None


def _failure_time(job: JsonDict) -> str:
    return str((failure_condition(job) or {}).get("lastTransitionTime") or "")


def first_failed_job(failed: list[JsonDict]) -> JsonDict | None:
    """The Job whose Failed condition is oldest (RFC 3339 times compare as strings)."""
    with_time = [j for j in failed if failure_condition(j) is not None]
    return min(with_time, key=_failure_time) if with_time else None


def message_with_first_failed_job(message: str, job: JsonDict | None) -> str:
    name = (job or {}).get("metadata", {}).get("name", "")
    return f"{message} (first failed job: {name})"


def _pattern_matches(patterns: list[str], message: str) -> bool:
    for pattern in patterns:
        try:
            if re.search(pattern, message):
                return True
        except re.error:
            continue  # upstream logs an invalid pattern and goes on
    return False


def rule_applies(rule: JsonDict, job: JsonDict, reason: str, message: str) -> bool:
    reasons = rule.get("onJobFailureReasons") or []
    if reasons and reason not in reasons:
        return False
    patterns = rule.get("onJobFailureMessagePatterns") or []
    if patterns and not _pattern_matches(patterns, message):
        return False
    parent = labels(job).get(c.REPLICATED_JOB_NAME_KEY, "")
    if not parent:
        return False
    targets = rule.get("targetReplicatedJobs") or []
    return not targets or parent in targets


def first_matching_rule(
    rules: list[JsonDict], failed: list[JsonDict]
) -> tuple[JsonDict | None, JsonDict | None]:
    for rule in rules:
        matched: JsonDict | None = None
        for job in failed:
            cond = failure_condition(job)
            if cond is None:
                continue
            earlier = matched is None or _failure_time(job) < _failure_time(matched)
            reason, message = str(cond.get("reason") or ""), str(cond.get("message") or "")
            if rule_applies(rule, job, reason, message) and earlier:
                matched = job
        if matched is not None:
            return rule, matched
    return None, None


def _fail(js: JsonDict, status: JsonDict, job: JsonDict, events: list[Event], now: str) -> None:
    message = message_with_first_failed_job(c.FAIL_JOBSET_ACTION_MESSAGE, job)
    set_failed(status, events, c.FAIL_JOBSET_ACTION_REASON, message, now)


def _recreate_all(status: JsonDict, events: list[Event], counts: bool, event: Event) -> None:
    status["restarts"] = int(status.get("restarts") or 0) + 1
    if counts:
        status["restartsCountTowardsMax"] = int(status.get("restartsCountTowardsMax") or 0) + 1
    events.append(event)


def _restart(js: JsonDict, status: JsonDict, job: JsonDict, events: list[Event], now: str) -> None:
    max_restarts = int(((js.get("spec") or {}).get("failurePolicy") or {}).get("maxRestarts") or 0)
    if int(status.get("restartsCountTowardsMax") or 0) >= max_restarts:
        message = message_with_first_failed_job(c.REACHED_MAX_RESTARTS_MESSAGE, job)
        set_failed(status, events, c.REACHED_MAX_RESTARTS_REASON, message, now)
        return
    message = message_with_first_failed_job(c.RESTART_JOBSET_ACTION_MESSAGE, job)
    _recreate_all(status, events, True, Event("Warning", c.RESTART_JOBSET_ACTION_REASON, message))


def _restart_ignoring_max(
    js: JsonDict, status: JsonDict, job: JsonDict, events: list[Event], now: str
) -> None:
    message = message_with_first_failed_job(c.RESTART_JOBSET_AND_IGNORE_MAX_RESTARTS_ACTION_MESSAGE, job)
    event = Event("Warning", c.RESTART_JOBSET_AND_IGNORE_MAX_RESTARTS_ACTION_REASON, message)
    _recreate_all(status, events, False, event)


ACTIONS: dict[str, Applier] = {
    c.FAIL_JOBSET: _fail,
    c.RESTART_JOBSET: _restart,
    c.RESTART_JOBSET_AND_IGNORE_MAX_RESTARTS: _restart_ignoring_max,
}
DEFAULT_RULE_ACTION = c.RESTART_JOBSET


def execute(js: JsonDict, status: JsonDict, failed: list[JsonDict], events: list[Event], now: str) -> None:
    """Apply the failure policy to `status` (only called with at least one failed Job)."""
    policy = (js.get("spec") or {}).get("failurePolicy")
    if policy is None:
        message = message_with_first_failed_job(c.FAILED_JOBS_MESSAGE, first_failed_job(failed))
        set_failed(status, events, c.FAILED_JOBS_REASON, message, now)
        return
    rule, job = first_matching_rule(list(policy.get("rules") or []), failed)
    action = DEFAULT_RULE_ACTION if rule is None else str(rule.get("action"))
    if rule is None:
        job = first_failed_job(failed)
    applier = ACTIONS.get(action)
    if applier is None:
        raise ValueError(f"failed to find a corresponding action for the FailurePolicyRuleAction {action}")
    applier(js, status, job or {}, events, now)
