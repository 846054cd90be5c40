"""One JobSet pass, `plan(jobset, jobs)`, in the order and with the outcomes of upstream's
``reconcile()``: the test plays the Job controller with `child_job`."""

from __future__ import annotations

from typing import Any

from kubetrain.embedded.jobset.conditions import Event
from kubetrain.embedded.jobset.reconcile import Plan, plan
from kubetrain.kube.timefmt import parse_epoch
from tests.jobset_builders import child_job, jobset

JsonDict = dict[str, Any]
NOW = parse_epoch("2026-01-01T00:01:00Z") or 0.0


def run(js: JsonDict, jobs: list[JsonDict], service: bool = True, now: float = NOW) -> Plan:
    result = plan(js, jobs, service_exists=service, now=now)
    assert result is not None
    return result


def names(jobs: list[JsonDict]) -> list[str]:
    return [j["metadata"]["name"] for j in jobs]


def conditions(status: JsonDict) -> list[tuple[str, str, str, str]]:
    return [(c["type"], c["status"], c["reason"], c["message"]) for c in status.get("conditions") or []]


def leader_workers() -> Any:
    return jobset().replicated_job("leader", 1).replicated_job("workers", 2, parallelism=2)


def all_jobs(js: JsonDict, **kw: Any) -> list[JsonDict]:
    return [
        child_job(js, "leader", 0, **kw),
        child_job(js, "workers", 0, **kw),
        child_job(js, "workers", 1, **kw),
    ]


def test_a_new_jobset_creates_its_service_and_every_job() -> None:
    js = leader_workers().build()
    out = run(js, [], service=False)
    assert names(out.create_jobs) == ["js-leader-0", "js-workers-0", "js-workers-1"]
    assert out.create_service is not None and out.create_service["metadata"]["name"] == "js"
    assert out.status["restarts"] == 0 and out.status_changed
    assert [s["name"] for s in out.status["replicatedJobsStatus"]] == ["workers", "leader"]
    assert out.status["replicatedJobsStatus"][0] == {
        "name": "workers", "ready": 0, "succeeded": 0, "failed": 0, "active": 0, "suspended": 0,
    }  # fmt: skip


def test_once_the_writes_landed_the_plan_is_empty() -> None:
    js = leader_workers().build()
    first = run(js, [])
    js["status"] = first.status
    jobs = all_jobs(js)
    second = run(js, jobs)
    js["status"] = second.status
    third = run(js, jobs)
    assert third.empty and third.events == []
    assert second.status["replicatedJobsStatus"][0] == {
        "name": "workers", "ready": 2, "succeeded": 0, "failed": 0, "active": 2, "suspended": 0,
    }  # fmt: skip


def test_all_jobs_complete_the_jobset() -> None:
    js = leader_workers().build()
    out = run(js, all_jobs(js, finished="Complete"))
    assert conditions(out.status) == [
        ("Completed", "True", "AllJobsCompleted", "jobset completed successfully")
    ]
    assert out.status["terminalState"] == "Completed"
    assert out.events == [Event("Normal", "AllJobsCompleted", "jobset completed successfully")]
    assert out.create_jobs == []


def test_all_waits_for_every_job() -> None:
    js = leader_workers().build()
    jobs = [
        child_job(js, "leader", 0, finished="Complete"),
        child_job(js, "workers", 0),
        child_job(js, "workers", 1),
    ]
    assert "terminalState" not in run(js, jobs).status


def test_any_success_policy_on_a_target() -> None:
    js = leader_workers().success_policy("Any", ["leader"]).build()
    jobs = [
        child_job(js, "leader", 0, finished="Complete"),
        child_job(js, "workers", 0),
        child_job(js, "workers", 1),
    ]
    assert run(js, jobs).status["terminalState"] == "Completed"
    js = leader_workers().success_policy("Any", ["workers"]).build()
    assert "terminalState" not in run(js, jobs).status


def test_all_success_policy_on_a_target() -> None:
    js = leader_workers().success_policy("All", ["workers"]).build()
    jobs = [child_job(js, "leader", 0), child_job(js, "workers", 0, finished="Complete")]
    jobs.append(child_job(js, "workers", 1, finished="Complete"))
    assert run(js, jobs).status["terminalState"] == "Completed"


def test_a_finished_jobset_deletes_its_active_jobs() -> None:
    js = leader_workers().success_policy("Any", ["leader"]).build()
    js["status"] = run(js, [child_job(js, "leader", 0, finished="Complete")]).status
    jobs = [child_job(js, "leader", 0, finished="Complete"), child_job(js, "workers", 0)]
    out = run(js, jobs)
    assert names(out.delete_jobs) == ["js-workers-0"] and out.create_jobs == []


def test_without_failure_policy_a_failed_job_fails_the_jobset() -> None:
    js = leader_workers().build()
    jobs = [child_job(js, "leader", 0), child_job(js, "workers", 1, finished="Failed")]
    out = run(js, jobs)
    assert conditions(out.status) == [
        (
            "Failed",
            "True",
            "FailedJobs",
            "jobset failed due to one or more job failures (first failed job: js-workers-1)",
        )
    ]
    assert out.status["terminalState"] == "Failed" and out.create_jobs == []
    assert out.events[0].type == "Warning"


def test_max_restarts_recreates_every_job_then_fails() -> None:
    js = leader_workers().failure_policy(1).build()
    failed = [
        child_job(js, "leader", 0),
        child_job(js, "workers", 0, finished="Failed"),
        child_job(js, "workers", 1),
    ]
    out = run(js, failed)
    assert out.status["restarts"] == 1 and out.status["restartsCountTowardsMax"] == 1
    assert out.events == [
        Event(
            "Warning",
            "RestartJobSetFailurePolicyAction",
            "applying RestartJobSet failure policy action (first failed job: js-workers-0)",
        )
    ]
    assert out.create_jobs == [] and "conditions" not in out.status
    js["status"] = out.status
    # Next pass: every Job is from attempt 0 < 1: deleted (Foreground), none created while they exist.
    out = run(js, failed)
    assert names(out.delete_jobs) == ["js-leader-0", "js-workers-0", "js-workers-1"]
    assert out.create_jobs == []
    # Once they are gone: the new attempt's Jobs, labelled restart-attempt 1.
    out = run(js, [])
    assert names(out.create_jobs) == ["js-leader-0", "js-workers-0", "js-workers-1"]
    assert {j["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"] for j in out.create_jobs} == {"1"}
    assert {
        j["spec"]["template"]["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"]
        for j in out.create_jobs
    } == {"1"}
    # A failure in attempt 1: max restarts reached.
    js["status"] = out.status
    out = run(js, [child_job(js, "leader", 0, finished="Failed")])
    assert conditions(out.status) == [
        (
            "Failed",
            "True",
            "ReachedMaxRestarts",
            "jobset failed due to reaching max number of restarts (first failed job: js-leader-0)",
        )
    ]
    assert out.status["restarts"] == 1


def test_blocking_recreate_waits_for_every_old_job_to_go() -> None:
    js = leader_workers().failure_policy(2, strategy="BlockingRecreate").status(restarts=1).build()
    old = child_job({**js, "status": {"restarts": 0}}, "leader", 0)
    out = run(js, [old])
    assert names(out.delete_jobs) == ["js-leader-0"] and out.create_jobs == []
    js = leader_workers().failure_policy(2).status(restarts=1).build()
    assert names(run(js, [old]).create_jobs) == ["js-workers-0", "js-workers-1"]


def test_failure_policy_rules() -> None:
    rules = [
        {"action": "FailJobSet", "onJobFailureReasons": ["DeadlineExceeded"]},
        {"action": "RestartJobSetAndIgnoreMaxRestarts", "targetReplicatedJobs": ["workers"]},
    ]
    js = leader_workers().failure_policy(0, rules).build()
    deadline = child_job(js, "leader", 0, finished="Failed", reason="DeadlineExceeded", message="x")
    out = run(js, [deadline])
    assert conditions(out.status)[0][2:] == (
        "FailJobSetFailurePolicyAction",
        "applying FailJobSet failure policy action (first failed job: js-leader-0)",
    )
    out = run(js, [child_job(js, "workers", 1, finished="Failed")])
    assert out.status["restarts"] == 1 and "restartsCountTowardsMax" not in out.status
    assert out.events[0].reason == "RestartJobSetAndIgnoreMaxRestartsFailurePolicyAction"
    # No rule matches a leader failing for another reason: the default action, RestartJobSet.
    out = run(js, [child_job(js, "leader", 0, finished="Failed")])
    assert conditions(out.status)[0][2] == "ReachedMaxRestarts"


def test_message_patterns_and_earliest_failure() -> None:
    rules = [{"action": "FailJobSet", "onJobFailureMessagePatterns": ["^boom"]}]
    js = leader_workers().failure_policy(3, rules).build()
    late = child_job(js, "workers", 0, finished="Failed", message="boom late", at="2026-01-01T00:00:30Z")
    early = child_job(js, "workers", 1, finished="Failed", message="boom early", at="2026-01-01T00:00:10Z")
    out = run(js, [late, early])
    assert conditions(out.status)[0][3].endswith("(first failed job: js-workers-1)")


def test_in_order_startup() -> None:
    js = leader_workers().startup_policy("InOrder").build()
    out = run(js, [])
    assert names(out.create_jobs) == ["js-leader-0"]
    assert conditions(out.status) == [
        (
            "StartupPolicyInProgress",
            "True",
            "InOrderStartupPolicyInProgress",
            "in order startup policy is in progress",
        )
    ]
    js["status"] = out.status
    leader = [child_job(js, "leader", 0, ready=0, active=1)]
    assert run(js, leader).create_jobs == []  # not ready yet
    out = run(js, [child_job(js, "leader", 0)])
    assert names(out.create_jobs) == ["js-workers-0", "js-workers-1"]
    js["status"] = out.status
    out = run(js, all_jobs(js))
    assert conditions(out.status) == [
        (
            "StartupPolicyInProgress",
            "False",
            "InOrderStartupPolicyInProgress",
            "in order startup policy is in progress",
        ),
        (
            "StartupPolicyCompleted",
            "True",
            "InOrderStartupPolicyCompleted",
            "in order startup policy has completed",
        ),
    ]


def test_depends_on() -> None:
    js = leader_workers().depends_on("leader", "Complete").build()
    assert names(run(js, []).create_jobs) == ["js-leader-0"]
    js["status"] = run(js, [child_job(js, "leader", 0)]).status
    assert run(js, [child_job(js, "leader", 0)]).create_jobs == []
    done = [child_job(js, "leader", 0, finished="Complete")]
    js["status"] = run(js, done).status
    assert names(run(js, done).create_jobs) == ["js-workers-0", "js-workers-1"]


def test_suspend_and_resume() -> None:
    js = leader_workers().suspend().build()
    out = run(js, [])
    assert all(j["spec"]["suspend"] is True for j in out.create_jobs)
    assert conditions(out.status) == [("Suspended", "True", "SuspendedJobs", "jobset is suspended")]
    js["status"] = out.status
    running = leader_workers().build()
    running["status"] = out.status
    jobs = all_jobs(running)
    out = run(js, jobs)  # suspending running Jobs
    assert names(out.suspend_jobs) == ["js-leader-0", "js-workers-0", "js-workers-1"]
    for job in jobs:
        job["spec"]["suspend"] = True
    resumed = leader_workers().suspend(False).build()
    resumed["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["metadata"] = {
        "labels": {"kueue": "x"}
    }
    resumed["status"] = js["status"]
    out = run(resumed, jobs)
    assert [j["metadata"]["name"] for j, _ in out.resume_jobs] == [
        "js-leader-0",
        "js-workers-0",
        "js-workers-1",
    ]
    patch = out.resume_jobs[1][1]
    assert patch["spec"]["suspend"] is False
    assert patch["spec"]["template"]["metadata"]["labels"]["kueue"] == "x"
    assert patch["spec"]["template"]["metadata"]["labels"]["jobset.sigs.k8s.io/jobset-name"] == "js"
    assert conditions(out.status) == [("Suspended", "False", "ResumeJobs", "jobset is resumed")]


def test_ttl_after_finished() -> None:
    js = leader_workers().ttl(30).build()
    js["status"] = run(js, all_jobs(js, finished="Complete")).status
    finished_at = parse_epoch(js["status"]["conditions"][0]["lastTransitionTime"]) or 0.0
    out = run(js, [], now=finished_at + 10)
    assert out.requeue_after == 20 and not out.delete_jobset
    assert run(js, [], now=finished_at + 30).delete_jobset


def test_jobsets_not_ours() -> None:
    js = leader_workers().managed_by("kueue.x-k8s.io/multikueue").build()
    assert plan(js, [], service_exists=False, now=NOW) is None
    js = leader_workers().managed_by("jobset.sigs.k8s.io/jobset-controller").build()
    assert plan(js, [], service_exists=False, now=NOW) is not None
    js = leader_workers().build()
    js["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert plan(js, [], service_exists=False, now=NOW) is None


def test_no_service_without_dns_hostnames() -> None:
    js = leader_workers().network(enable_dns=False).build()
    assert run(js, [], service=False).create_service is None
