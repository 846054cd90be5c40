"""JobSets on the embedded plane, with real processes: names, labels, DNS, policies, status."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from kubetrain.embedded.jobset.controller import jobsets_path
from kubetrain.embedded.node import KubeAPI
from kubetrain.kube.client import core_path
from tests.jobset_builders import PY, jobset
from tests.polling import wait_for

from .conftest import create_jobset, events_of, get_jobset, jobset_condition, list_jobs, list_pods, read_log

JsonDict = dict[str, Any]
PING = str(Path(__file__).resolve().parents[3] / "examples" / "local" / "jobset-ping" / "ping.py")
JOBSET_NAME_ENV = {
    "name": "JOBSET_NAME",
    "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['jobset.sigs.k8s.io/jobset-name']"}},
}
SLEEP = [PY, "-c", "import time; time.sleep(600)"]


def ping_jobset(name: str = "ping") -> Any:
    return (
        jobset(name)
        .replicated_job("leader", 1, command=[PY, PING, "leader", "--expect", "4"], backoff_limit=0)
        .replicated_job(
            "workers", 2, parallelism=2, command=[PY, PING, "worker"], env=[JOBSET_NAME_ENV], backoff_limit=0
        )
    )


async def test_leader_and_workers_resolve_each_other_and_complete(api: KubeAPI) -> None:
    created = await create_jobset(api, ping_jobset().build())
    uid = created["metadata"]["uid"]
    done = await jobset_condition(api, "ping", "Completed")
    status = done["status"]
    assert status["terminalState"] == "Completed" and status["restarts"] == 0
    cond = next(c for c in status["conditions"] if c["type"] == "Completed")
    assert (cond["reason"], cond["message"]) == ("AllJobsCompleted", "jobset completed successfully")
    assert {s["name"]: s["succeeded"] for s in status["replicatedJobsStatus"]} == {"leader": 1, "workers": 2}

    jobs = {j["metadata"]["name"]: j for j in await list_jobs(api, "jobset.sigs.k8s.io/jobset-name=ping")}
    assert sorted(jobs) == ["ping-leader-0", "ping-workers-0", "ping-workers-1"]
    worker1 = jobs["ping-workers-1"]
    labels = worker1["metadata"]["labels"]
    assert labels["jobset.sigs.k8s.io/replicatedjob-name"] == "workers"
    assert (
        labels["jobset.sigs.k8s.io/job-index"] == "1" and labels["jobset.sigs.k8s.io/job-global-index"] == "2"
    )
    assert labels["jobset.sigs.k8s.io/restart-attempt"] == "0"
    assert labels["jobset.sigs.k8s.io/jobset-uid"] == uid
    (ref,) = worker1["metadata"]["ownerReferences"]
    assert (ref["apiVersion"], ref["kind"], ref["name"], ref["uid"]) == (
        "jobset.x-k8s.io/v1alpha2",
        "JobSet",
        "ping",
        uid,
    )
    assert worker1["spec"]["completionMode"] == "Indexed"

    pods = await list_pods(api, "jobset.sigs.k8s.io/jobset-name=ping")
    hostnames = sorted(p["spec"]["hostname"] for p in pods)
    assert hostnames == [
        "ping-leader-0-0",
        "ping-workers-0-0",
        "ping-workers-0-1",
        "ping-workers-1-0",
        "ping-workers-1-1",
    ]
    for pod in pods:
        meta = pod["metadata"]
        assert meta["name"].startswith(pod["spec"]["hostname"] + "-")
        assert pod["spec"]["subdomain"] == "ping"
        assert meta["labels"]["jobset.sigs.k8s.io/replicatedjob-name"] in ("leader", "workers")
        assert meta["annotations"]["jobset.sigs.k8s.io/jobset-name"] == "ping"
        assert pod["status"]["phase"] == "Succeeded"
    leader = next(p for p in pods if p["spec"]["hostname"] == "ping-leader-0-0")
    log = await read_log(api, leader["metadata"]["name"])
    assert "all workers checked in" in log
    for host in ("ping-workers-0-0", "ping-workers-0-1", "ping-workers-1-0", "ping-workers-1-1"):
        assert f"ping from {host}" in log
    worker = next(p for p in pods if p["spec"]["hostname"] == "ping-workers-1-1")
    assert "ping-workers-1-1 -> ping-leader-0-0.ping" in await read_log(api, worker["metadata"]["name"])

    svc = await api.get(core_path("services", "default", "ping"))
    assert svc["spec"]["clusterIP"] == "None"
    assert svc["spec"]["selector"] == {"jobset.sigs.k8s.io/jobset-name": "ping"}
    assert ("Normal", "AllJobsCompleted", "jobset completed successfully") in await events_of(api, "ping")


async def test_a_failed_job_restarts_the_jobset_once_then_fails_it(api: KubeAPI) -> None:
    js = (
        jobset("flaky")
        .replicated_job("leader", 1, command=SLEEP)
        .replicated_job(
            "workers", 1, command=[PY, "-c", "raise SystemExit(3)"], backoff_limit=0, restart_policy="Never"
        )
        .failure_policy(1)
        .build()
    )
    await create_jobset(api, js)
    failed = await jobset_condition(api, "flaky", "Failed")
    status = failed["status"]
    assert status["restarts"] == 1 and status["restartsCountTowardsMax"] == 1
    assert status["terminalState"] == "Failed"
    cond = next(c for c in status["conditions"] if c["type"] == "Failed")
    assert cond["reason"] == "ReachedMaxRestarts"
    assert (
        cond["message"]
        == "jobset failed due to reaching max number of restarts (first failed job: flaky-workers-0)"
    )

    async def second_attempt_only() -> list[JsonDict] | None:
        jobs = await list_jobs(api, "jobset.sigs.k8s.io/jobset-name=flaky")
        return (
            jobs
            if {j["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"] for j in jobs} == {"1"}
            else None
        )

    await wait_for(second_attempt_only, 30, "the first attempt's Jobs to be deleted")
    pods = await list_pods(
        api, "jobset.sigs.k8s.io/jobset-name=flaky,jobset.sigs.k8s.io/replicatedjob-name=workers"
    )
    assert {p["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"] for p in pods} == {"1"}
    # The leader of the failed JobSet is no longer running: its Job is deleted as an active one.
    await wait_for(lambda: _no_running(api, "flaky"), 30, "the failed JobSet's running pods to be gone")
    reasons = [e[1] for e in await events_of(api, "flaky")]
    assert "RestartJobSetFailurePolicyAction" in reasons and "ReachedMaxRestarts" in reasons


async def _no_running(api: KubeAPI, name: str) -> bool:
    pods = await list_pods(api, f"jobset.sigs.k8s.io/jobset-name={name}")
    return not any(p["status"].get("phase") in ("Pending", "Running") for p in pods)


async def test_any_success_policy_completes_on_the_leader_and_stops_the_rest(api: KubeAPI) -> None:
    js = (
        jobset("any")
        .replicated_job("leader", 1, command=[PY, "-c", "import time; time.sleep(1)"])
        .replicated_job("workers", 2, command=SLEEP)
        .success_policy("Any", ["leader"])
        .build()
    )
    await create_jobset(api, js)
    done = await jobset_condition(api, "any", "Completed")
    assert done["status"]["terminalState"] == "Completed"
    await wait_for(lambda: _no_running(api, "any"), 30, "the workers' pods to be deleted")

    async def only_leader_left() -> bool:
        return [
            j["metadata"]["name"] for j in await list_jobs(api, "jobset.sigs.k8s.io/jobset-name=any")
        ] == ["any-leader-0"]

    await wait_for(only_leader_left, 30, "the active worker Jobs to be deleted")


async def test_suspend_then_resume(api: KubeAPI) -> None:
    await create_jobset(
        api, jobset("later").replicated_job("w", 2, command=[PY, "-c", "pass"]).suspend().build()
    )
    suspended = await jobset_condition(api, "later", "Suspended")
    cond = next(c for c in suspended["status"]["conditions"] if c["type"] == "Suspended")
    assert (cond["reason"], cond["message"]) == ("SuspendedJobs", "jobset is suspended")

    async def suspended_jobs() -> list[JsonDict] | None:
        jobs = await list_jobs(api, "jobset.sigs.k8s.io/jobset-name=later")
        return jobs if len(jobs) == 2 and all(j["spec"]["suspend"] for j in jobs) else None

    await wait_for(suspended_jobs, 20, "two suspended Jobs")
    await asyncio.sleep(0.5)
    assert await list_pods(api, "jobset.sigs.k8s.io/jobset-name=later") == []
    rjs = await get_jobset(api, "later")
    assert rjs is not None and {s["suspended"] for s in rjs["status"]["replicatedJobsStatus"]} == {2}

    await api.merge_patch(jobsets_path("default", "later"), {"spec": {"suspend": False}})
    done = await jobset_condition(api, "later", "Completed")
    cond = next(c for c in done["status"]["conditions"] if c["type"] == "Suspended")
    assert (cond["status"], cond["reason"], cond["message"]) == ("False", "ResumeJobs", "jobset is resumed")
    assert len(await list_pods(api, "jobset.sigs.k8s.io/jobset-name=later")) == 2


async def test_in_order_startup_waits_for_the_leader_to_be_ready(api: KubeAPI) -> None:
    js = (
        jobset("ordered")
        .replicated_job("leader", 1, command=SLEEP)
        # Workers stay up a little: upstream sets StartupPolicyCompleted on a pass that sees every
        # replicated job started (ready, succeeded or failed) before the success policy ends the
        # JobSet; workers that exit at once can complete it first, and the condition never comes.
        .replicated_job("workers", 2, command=[PY, "-c", "import time; time.sleep(2)"])
        .startup_policy("InOrder")
        .success_policy("All", ["workers"])
        .build()
    )
    # The leader stays unready for a while (an init container): no worker Job may exist until it is.
    pod_spec = js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    pod_spec["initContainers"] = [
        {"name": "warm-up", "image": "python", "command": [PY, "-c", "import time; time.sleep(2)"]}
    ]
    await create_jobset(api, js)
    in_progress = await jobset_condition(api, "ordered", "StartupPolicyInProgress", 30)
    cond = next(c for c in in_progress["status"]["conditions"] if c["type"] == "StartupPolicyInProgress")
    assert (cond["reason"], cond["message"]) == (
        "InOrderStartupPolicyInProgress",
        "in order startup policy is in progress",
    )
    seen_workers = False
    for _ in range(300):
        jobs = {
            j["metadata"]["name"]: j for j in await list_jobs(api, "jobset.sigs.k8s.io/jobset-name=ordered")
        }
        leader_ready = (jobs.get("ordered-leader-0", {}).get("status") or {}).get("ready") or 0
        workers = [n for n in jobs if n.startswith("ordered-workers-")]
        if workers:
            assert leader_ready >= 1, "worker Jobs were created before the leader was ready"
            seen_workers = True
            break
        await asyncio.sleep(0.05)
    assert seen_workers
    done = await jobset_condition(api, "ordered", "Completed")
    by_type = {c["type"]: c for c in done["status"]["conditions"]}
    assert by_type["StartupPolicyCompleted"]["status"] == "True"
    assert by_type["StartupPolicyCompleted"]["reason"] == "InOrderStartupPolicyCompleted"
    assert by_type["StartupPolicyInProgress"]["status"] == "False"


async def test_deleting_the_jobset_deletes_its_jobs_pods_and_service(api: KubeAPI) -> None:
    await create_jobset(api, jobset("doomed").replicated_job("w", 2, command=SLEEP).build())

    async def running() -> bool:
        pods = await list_pods(api, "jobset.sigs.k8s.io/jobset-name=doomed")
        return len(pods) == 2 and all(p["status"].get("phase") == "Running" for p in pods)

    await wait_for(running, 30, "two running pods")
    await api.delete(jobsets_path("default", "doomed"))

    async def gone() -> bool:
        jobs = await list_jobs(api, "jobset.sigs.k8s.io/jobset-name=doomed")
        pods = await list_pods(api, "jobset.sigs.k8s.io/jobset-name=doomed")
        svc = await api.get_or_none(core_path("services", "default", "doomed"))
        return not jobs and not pods and svc is None

    await wait_for(gone, 30, "the JobSet's Jobs, pods and Service to be deleted")


async def test_ttl_after_finished_deletes_the_jobset(api: KubeAPI) -> None:
    await create_jobset(api, jobset("brief").replicated_job("w", command=[PY, "-c", "pass"]).ttl(1).build())
    await jobset_condition(api, "brief", "Completed")

    async def deleted() -> bool:
        return await get_jobset(api, "brief") is None and not await list_jobs(
            api, "jobset.sigs.k8s.io/jobset-name=brief"
        )

    await wait_for(deleted, 30, "the JobSet to expire")
