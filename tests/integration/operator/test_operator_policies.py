"""Run-policy scenarios end to end: the same actions and conditions as the planner's unit tests
(tests/unit/controller/test_policies.py), observed through the API server. Upstream's behaviour:
docs/upstream-behaviour.md#replica-pods, #limits, #clean-pod-policy, #ttl, #upstream-tests, #lifecycle."""

from __future__ import annotations

import asyncio
import functools
import time
from typing import Any

import pytest

from tests.builders import JobBuilder, job, pod_name
from tests.integration.operator.harness import Cluster, conditions, last_condition, wait_for

BACKOFF_MESSAGE = "Job {name} has failed because it has reached the specified backoff limit"
DEADLINE_MESSAGE = "Job {name} has failed because it was active longer than specified deadline"


async def start_running(cluster: Cluster, builder: JobBuilder) -> set[str]:
    """Create the job, wait for its pods and services, make every pod Running, wait for Running."""
    await cluster.create(builder)
    name = builder.name
    specs = builder.obj["spec"][builder.info.replica_specs_field]
    expected = {pod_name(name, rt, i) for rt, s in specs.items() for i in range(s.get("replicas", 1))}
    await cluster.wait_children(name, expected)
    await cluster.kubelet.run_all(name)
    await cluster.wait_last_condition(builder.kind, name, "Running")
    return expected


# ---- failure and restarts -----------------------------------------------------------------------


async def test_restart_policy_never_failure_fails_the_job(cluster: Cluster) -> None:
    builder = job("PyTorchJob", "never").replicas("Master", 1).replicas("Worker", 2, restart_policy="Never")
    pods = await start_running(cluster, builder)
    uid = await cluster.pod_uid("never-worker-1")
    await cluster.kubelet.failed("never-worker-1", exit_code=1)

    message = "PyTorchJob never is failed because 1 Worker replica(s) failed."
    done = await cluster.wait_last_condition("PyTorchJob", "never", "Failed")
    assert conditions(done)[-1] == ("Failed", "True", "PyTorchJobFailed", message)
    assert ("Running", "False") in [c[0:2] for c in conditions(done)]
    assert done["status"]["completionTime"]
    await cluster.wait_events("never", [("Normal", "PyTorchJobFailed", message)])
    # Never: no recreation; cleanPodPolicy None keeps every pod.
    await asyncio.sleep(0.3)
    assert await cluster.pod_names("never") == pods
    assert await cluster.pod_uid("never-worker-1") == uid


async def test_on_failure_pod_failed_is_deleted_and_recreated(cluster: Cluster) -> None:
    history = await cluster.history("PyTorchJob")
    builder = job("PyTorchJob", "onfail").replicas("Master", 1).replicas("Worker", 2)  # OnFailure default
    await start_running(cluster, builder)
    old = await cluster.pod_uid("onfail-worker-0")
    await cluster.kubelet.failed("onfail-worker-0", exit_code=137, reason="Evicted")

    recreated = await cluster.wait_pod_replaced("onfail-worker-0", old)
    assert recreated["metadata"]["labels"]["training.kubeflow.org/replica-index"] == "0"
    message = "job onfail is restarting because Worker replica(s) failed."
    await cluster.wait_events("onfail", [("Warning", "PyTorchJobRestarting", message)])
    created = ("Created", "True", "PyTorchJobCreated", "PyTorchJob onfail is created.")
    running = ("Running", "True", "PyTorchJobRunning", "PyTorchJob onfail is running.")
    # The pod pass records the event; the kind's status rule (Running from the master, then
    # Restarting for the failed worker) leaves its own text in the condition
    # (docs/upstream-behaviour.md#replica-pods, #pytorchjob).
    restarting = (
        "Restarting",
        "True",
        "PyTorchJobRestarting",
        "PyTorchJob onfail is restarting because 1 Worker replica(s) failed.",
    )
    # Restarting replaces Running; the master still runs, so Running replaces it back at once.
    await wait_for(
        lambda: (
            history.of("onfail")[-3:]
            == [
                [created, running],
                [created, restarting],
                [created, running],
            ]
        ),
        message=lambda: f"{history.of('onfail')}",
    )
    await cluster.kubelet.running("onfail-worker-0")
    again = await cluster.wait_job(
        "PyTorchJob", "onfail", lambda j: j["status"]["replicaStatuses"]["Worker"].get("active") == 2
    )
    assert conditions(again) == [created, running]
    assert again["status"]["kubetrain"]["restarts"] == 1


async def test_exit_code_retryable_recreates_then_permanent_fails(cluster: Cluster) -> None:
    history = await cluster.history("TFJob")
    builder = job("TFJob", "exitcode").replicas("Worker", 2, restart_policy="ExitCode")
    pods = await start_running(cluster, builder)
    assert (await cluster.pods("exitcode"))["exitcode-worker-1"]["spec"]["restartPolicy"] == "Never"

    old = await cluster.pod_uid("exitcode-worker-1")
    await cluster.kubelet.failed("exitcode-worker-1", exit_code=137)
    await cluster.wait_pod_replaced("exitcode-worker-1", old)
    restart_message = "job exitcode is restarting because Worker replica(s) failed."
    await cluster.wait_events(
        "exitcode",
        [
            ("Warning", "TFJobRestarting", restart_message),
            ("Normal", "ExitedWithCode", "Pod: default.exitcode-worker-1 exited with code 137"),
        ],
    )
    restarting = ("Restarting", "True", "TFJobRestarting", restart_message)
    await wait_for(
        lambda: any(lst and lst[-1] == restarting for lst in history.of("exitcode")),
        message=lambda: f"{history.of('exitcode')}",
    )

    await cluster.kubelet.running("exitcode-worker-1")
    await cluster.kubelet.failed("exitcode-worker-0", exit_code=1)
    fail_message = 'job "exitcode" is failing because "Worker" replica(s) failed.'
    failed = await cluster.wait_last_condition("TFJob", "exitcode", "Failed")
    assert last_condition(failed) == ("Failed", "True", "TFJobFailed", fail_message)
    await cluster.wait_events("exitcode", [("Warning", "TFJobFailed", fail_message)])
    await asyncio.sleep(0.3)
    assert await cluster.pod_names("exitcode") == pods  # permanent: not recreated; None keeps pods


# ---- backoffLimit -------------------------------------------------------------------------------


async def test_backoff_limit_by_restart_counts_cleans_all(cluster: Cluster) -> None:
    builder = (
        job("TFJob", "backoff").replicas("Worker", 4, restart_policy="OnFailure").backoff_limit(4)
    ).clean_pod_policy("All")
    pods = await start_running(cluster, builder)
    # The kubelet restarted every container in place once: 4 restarts >= backoffLimit 4.
    await asyncio.gather(*(cluster.kubelet.running(p, restart_count=1) for p in pods))

    message = BACKOFF_MESSAGE.format(name="backoff")
    failed = await cluster.wait_last_condition("TFJob", "backoff", "Failed")
    assert last_condition(failed) == ("Failed", "True", "TFJobFailed", message)
    await cluster.wait_children("backoff", set())
    await cluster.wait_events(
        "backoff",
        [("Normal", "TFJobFailed", message)]
        + [("Normal", "SuccessfulDeletePod", f"Deleted pod: {p}") for p in sorted(pods)],
    )


async def test_backoff_limit_counts_exit_code_recreations(cluster: Cluster) -> None:
    """kubeflow/trainer#2045: recreated pods start at restartCount 0, yet each recreation counts."""
    builder = job("TFJob", "recreate").replicas("Worker", 1, restart_policy="ExitCode").backoff_limit(3)
    await start_running(cluster, builder)
    for attempt in (1, 2):
        old = await cluster.pod_uid("recreate-worker-0")
        await cluster.kubelet.failed("recreate-worker-0", exit_code=137)
        await cluster.wait_pod_replaced("recreate-worker-0", old)
        await cluster.wait_job("TFJob", "recreate", functools.partial(restarts_are, attempt))
        await cluster.kubelet.running("recreate-worker-0")

    last_uid = await cluster.pod_uid("recreate-worker-0")
    await cluster.kubelet.failed("recreate-worker-0", exit_code=137)
    failed = await cluster.wait_last_condition("TFJob", "recreate", "Failed")
    assert last_condition(failed) == (
        "Failed",
        "True",
        "TFJobFailed",
        BACKOFF_MESSAGE.format(name="recreate"),
    )
    await asyncio.sleep(0.3)
    assert await cluster.pod_uid("recreate-worker-0") == last_uid  # not deleted, not recreated


def restarts_are(count: int, obj: dict[str, Any]) -> bool:
    return bool(obj["status"]["kubetrain"].get("restarts") == count)


# ---- activeDeadlineSeconds ----------------------------------------------------------------------


async def test_active_deadline_fires_on_time_without_other_events(cluster: Cluster) -> None:
    """kubeflow/trainer#3358: upstream only notices the deadline when something else happens."""
    builder = job("TFJob", "deadline").replicas("Worker", 2).active_deadline(2).clean_pod_policy("Running")
    await start_running(cluster, builder)
    started = (await cluster.get_job("TFJob", "deadline"))["status"]["startTime"]  # type: ignore[index]
    start_epoch = time.mktime(time.strptime(started, "%Y-%m-%dT%H:%M:%SZ")) - time.timezone
    # From here on nothing but the clock moves: no pod, job or service changes.
    failed = await cluster.wait_last_condition("TFJob", "deadline", "Failed", timeout=6.0)
    fired_after = time.time() - start_epoch
    assert 2.0 <= fired_after < 4.5, fired_after
    message = DEADLINE_MESSAGE.format(name="deadline")
    assert last_condition(failed) == ("Failed", "True", "TFJobFailed", message)
    await cluster.wait_events("deadline", [("Normal", "TFJobFailed", message)])
    await cluster.wait_children("deadline", set())  # Running pods and their services cleaned


# ---- TTL ----------------------------------------------------------------------------------------


async def test_ttl_deletes_finished_job_and_its_pods_are_collected(cluster: Cluster) -> None:
    builder = job("PyTorchJob", "ttl").replicas("Master", 1).replicas("Worker", 1).ttl(1)
    pods = await start_running(cluster, builder)
    await cluster.kubelet.succeeded("ttl-master-0")
    done = await cluster.wait_last_condition("PyTorchJob", "ttl", "Succeeded")
    finished_at = time.monotonic()
    assert await cluster.pod_names("ttl") == pods  # cleanPodPolicy None: kept until the TTL

    await cluster.wait_gone("PyTorchJob", "ttl", timeout=5.0)
    assert time.monotonic() - finished_at <= 4.0
    await cluster.wait_children("ttl", set())  # ownerReference garbage collection
    await cluster.wait_events("ttl", [("Normal", "SuccessfulDeleteJob", "Deleted job: ttl")])
    assert done["status"]["completionTime"]


# ---- cleanPodPolicy -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "deleted"),
    [
        ("All", ["cpp-chief-0", "cpp-worker-0", "cpp-worker-1"]),
        ("Running", ["cpp-worker-1"]),
        ("None", []),
        (None, []),
    ],
)
async def test_clean_pod_policy_on_success(cluster: Cluster, policy: str | None, deleted: list[str]) -> None:
    builder = job("TFJob", "cpp").replicas("Chief", 1).replicas("Worker", 2)
    if policy is not None:
        builder.clean_pod_policy(policy)
    pods = await start_running(cluster, builder)
    await cluster.kubelet.succeeded("cpp-worker-0")
    await cluster.kubelet.succeeded("cpp-chief-0")  # worker-1 still Running

    done = await cluster.wait_last_condition("TFJob", "cpp", "Succeeded")
    assert last_condition(done) == (
        "Succeeded",
        "True",
        "TFJobSucceeded",
        "TFJob default/cpp successfully completed.",
    )
    await cluster.wait_children("cpp", pods - set(deleted))
    await cluster.wait_events(
        "cpp",
        [("Normal", "SuccessfulDeletePod", f"Deleted pod: {p}") for p in deleted]
        + [("Normal", "SuccessfulDeleteService", f"Deleted service: {p}") for p in deleted],
    )
    await asyncio.sleep(0.3)
    assert await cluster.pod_names("cpp") == pods - set(deleted)  # and nothing is recreated


# ---- scale --------------------------------------------------------------------------------------


async def test_scale_up_then_down_by_patching_replicas(cluster: Cluster) -> None:
    builder = job("TFJob", "scale").replicas("Worker", 2)
    await start_running(cluster, builder)
    originals = {p: await cluster.pod_uid(p) for p in ("scale-worker-0", "scale-worker-1")}

    await cluster.set_replicas("TFJob", "scale", "Worker", 4)
    await cluster.wait_children("scale", {f"scale-worker-{i}" for i in range(4)})
    assert {p: await cluster.pod_uid(p) for p in originals} == originals  # existing pods untouched
    await cluster.wait_events("scale", [("Normal", "SuccessfulCreatePod", "Created pod: scale-worker-3")])

    await cluster.set_replicas("TFJob", "scale", "Worker", 1)
    await cluster.wait_children("scale", {"scale-worker-0"})
    await cluster.wait_events(
        "scale",
        [("Normal", "SuccessfulDeletePod", f"Deleted pod: scale-worker-{i}") for i in (1, 2, 3)]
        + [("Normal", "SuccessfulDeleteService", "Deleted service: scale-worker-3")],
    )
    assert await cluster.pod_uid("scale-worker-0") == originals["scale-worker-0"]


async def test_scale_subresource_drives_worker_replicas(cluster: Cluster) -> None:
    builder = job("PyTorchJob", "hpa").replicas("Master", 1).replicas("Worker", 1)
    await start_running(cluster, builder)
    await cluster.patch_job("PyTorchJob", "hpa", {"spec": {"replicas": 3}}, subresource="scale")
    await cluster.wait_children("hpa", {"hpa-master-0", "hpa-worker-0", "hpa-worker-1", "hpa-worker-2"})
    updated = await cluster.get_job("PyTorchJob", "hpa")
    assert updated is not None and updated["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] == 3


async def test_pod_deleted_by_user_is_recreated(cluster: Cluster) -> None:
    builder = job("PyTorchJob", "userdel").replicas("Master", 1).replicas("Worker", 2)
    pods = await start_running(cluster, builder)
    old = await cluster.pod_uid("userdel-worker-1")
    await cluster.client.delete("v1", "Pod", "default", "userdel-worker-1")
    await cluster.wait_pod_replaced("userdel-worker-1", old)
    assert await cluster.pod_names("userdel") == pods


async def test_requeue_is_not_a_busy_loop(cluster: Cluster) -> None:
    """A steady job makes no writes: status is written only when it changed."""
    builder = job("TFJob", "steady").replicas("Worker", 2).active_deadline(60)
    await start_running(cluster, builder)
    before = await cluster.get_job("TFJob", "steady")
    assert before is not None
    await asyncio.sleep(0.5)
    after = await cluster.get_job("TFJob", "steady")
    assert after is not None
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


# ---- events -------------------------------------------------------------------------------------


async def test_a_job_whose_pods_end_one_by_one_keeps_its_succeeded_event(cluster: Cluster) -> None:
    """Each pass reports every ended container again (ExitedWithCode, as upstream); recorded once
    per termination, those repeats no longer spend the job's spam-filter burst of 25, which a
    5-pod TFJob ending pod by pod exhausted (10 creates + 1+2+3+4+5 ExitedWithCode) before its
    TFJobSucceeded, as upstream does (the differential tier saw it on a real kube-apiserver)."""
    builder = (
        job("TFJob", "one-by-one")
        .replicas("Chief", 1)
        .replicas("PS", 1)
        .replicas("Worker", 2)
        .replicas("Evaluator", 1)
    )
    await start_running(cluster, builder)
    for rtype, index, succeeded in (("PS", 0, 1), ("Worker", 0, 1), ("Worker", 1, 2), ("Evaluator", 0, 1)):
        await cluster.kubelet.succeeded(pod_name("one-by-one", rtype, index))
        await cluster.wait_job(
            "TFJob",
            "one-by-one",
            lambda j, t=rtype, n=succeeded: j["status"]["replicaStatuses"][t].get("succeeded") == n,
        )
    await cluster.kubelet.succeeded(pod_name("one-by-one", "Chief", 0))
    await cluster.wait_last_condition("TFJob", "one-by-one", "Succeeded")
    done = ("Normal", "TFJobSucceeded", "TFJob default/one-by-one successfully completed.")
    await cluster.wait_events("one-by-one", [done])
    items, _ = await cluster.client.list("v1", "Event", "default")
    exited = {
        e["message"]: e["count"]
        for e in items
        if e["involvedObject"]["name"] == "one-by-one" and e["reason"] == "ExitedWithCode"
    }
    assert len(exited) == 5 and set(exited.values()) == {1}, exited
