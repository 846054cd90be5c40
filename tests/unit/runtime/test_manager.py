"""Manager wiring with a fake planner over the recording FakeKube: given these objects and this
plan, expect these API calls."""

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from runtime_fakekube import FakeKube, _status

from kubetrain.controller.config import ChildType, ControllerConfig
from kubetrain.controller.plan import (
    CreateObject,
    DeleteObject,
    Event,
    MetricIncrement,
    ObjectRef,
    Observed,
    Plan,
)
from kubetrain.kinds.registration import ObserveHints
from kubetrain.kinds.registry import REPLICA_SPEC_KINDS as KINDS
from kubetrain.runtime.config import RuntimeConfig, UnsupportedScheme
from kubetrain.runtime.manager import Manager, Planner

OP = "training.kubeflow.org/operator-name"
NOW = datetime(2024, 1, 1, 0, 0, 5, tzinfo=UTC)


def job(name: str = "j", replicas: int = 3, ns: str = "ns") -> dict[str, Any]:
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": replicas}}},
    }


def pod_for(j: dict[str, Any], i: int) -> dict[str, Any]:
    meta = j["metadata"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{meta['name']}-worker-{i}",
            "namespace": meta["namespace"],
            "labels": {OP: "pytorchjob-controller", "training.kubeflow.org/job-name": meta["name"]},
            "ownerReferences": [
                {
                    "apiVersion": "kubeflow.org/v1",
                    "kind": "PyTorchJob",
                    "name": meta["name"],
                    "uid": meta["uid"],
                    "controller": True,
                }
            ],
        },
        "spec": {"containers": [{"name": "pytorch"}]},
    }


class FakePlanner:
    """Creates missing worker pods, reports their count in status (only when it changed)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []
        self.raise_for: set[str] = set()
        self.requeue_after: float | None = None
        self.extra_actions: list[Any] = []
        self.retry_for: set[str] = set()
        self.requeue_now = False

    def plan(self, j: dict[str, Any], observed: Observed, now: datetime, config: ControllerConfig) -> Plan:
        name = j["metadata"]["name"]
        self.calls.append((name, len(observed.pods)))
        if name in self.raise_for:
            raise RuntimeError("planner bug")
        want = j["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"]
        have = {p["metadata"]["name"] for p in observed.pods}
        actions: list[Any] = [
            CreateObject(pod_for(j, i)) for i in range(want) if f"{name}-worker-{i}" not in have
        ]
        actions += self.extra_actions
        status = {"pods": len(have)}
        plan = Plan(actions=actions, requeue_after=self.requeue_after, retry=name in self.retry_for)
        if (j.get("status") or {}) != status:
            plan.status = status
            plan.requeue_now = self.requeue_now
            plan.events.append(Event("Normal", "Counted", f"{len(have)} pods"))
            plan.metrics.append(
                MetricIncrement(
                    "training_operator_jobs_created_total",
                    {"job_namespace": j["metadata"]["namespace"], "framework": "pytorch"},
                )
            )
        return plan

    def watched_children(self, config: ControllerConfig) -> list[ChildType]:
        return [ChildType("scheduling.volcano.sh/v1beta1", "PodGroup", "podgroups", None)]


async def until(cond: Any, timeout: float = 3.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not cond():
        if loop.time() > deadline:
            raise AssertionError("condition not reached")
        await asyncio.sleep(0.005)


@pytest.fixture
async def env() -> AsyncIterator[tuple[FakeKube, FakePlanner, Manager]]:
    fake = FakeKube()
    planner = FakePlanner()
    mgr = Manager(
        fake,  # type: ignore[arg-type]
        RuntimeConfig(enabled_schemes=("pytorchjob",), workers=4),
        planner=Planner(planner.plan, planner.watched_children),
        kinds=KINDS,
        registry=CollectorRegistry(),
        clock=lambda: NOW,
    )
    yield fake, planner, mgr
    await mgr.stop()


def pods(fake: FakeKube) -> list[str]:
    return sorted(k for k in fake.objects.get("v1/Pod", {}))


def pod_creates(fake: FakeKube) -> int:
    return sum(1 for c in fake.calls if c[0] == "create" and c[1] == "v1/Pod")


def metric(mgr: Manager, name: str, **labels: str) -> float:
    return mgr.metrics.registry.get_sample_value(name, labels) or 0.0


async def test_job_is_expanded_and_status_written_once_per_change(env: Any) -> None:
    fake, _planner, mgr = env
    await mgr.start()
    assert mgr.ready
    fake.put(job(replicas=3))
    await until(
        lambda: (fake.objects["kubeflow.org/v1/PyTorchJob"]["ns/j"].get("status") or {}).get("pods") == 3
    )
    assert pods(fake) == ["ns/j-worker-0", "ns/j-worker-1", "ns/j-worker-2"]
    assert pod_creates(fake) == 3
    # The watch of the PodGroup kind was skipped (not served? the fake serves everything) and pods
    # and services are watched with the operator-name selector.
    assert ("list", "v1/Pod", None, OP) in fake.calls and ("list", "v1/Service", None, OP) in fake.calls
    await mgr.recorder.flush()
    events = list(fake.objects["v1/Event"].values())
    assert events and all(e["source"]["component"] == "pytorchjob-controller" for e in events)
    assert metric(mgr, "training_operator_jobs_created_total", job_namespace="ns", framework="pytorch") >= 1
    assert metric(mgr, "kubetrain_create_to_pods_seconds_count", kind="PyTorchJob") == 1
    assert metric(mgr, "kubetrain_reconcile_duration_seconds_count", kind="PyTorchJob") >= 1


async def test_lagging_cache_never_duplicates_creates(env: Any) -> None:
    fake, _planner, mgr = env
    held: list[Any] = []
    real_emit = fake.emit

    def laggy_emit(rt: Any, etype: str, obj: dict[str, Any]) -> None:
        if rt.key == "v1/Pod" and etype == "ADDED":
            held.append((rt, etype, obj))  # the pod watch falls behind our own writes
        else:
            real_emit(rt, etype, obj)

    fake.emit = laggy_emit
    await mgr.start()
    fake.put(job(replicas=2))
    await until(lambda: pod_creates(fake) == 2)
    kc = mgr.controllers["PyTorchJob"]
    for _ in range(5):  # unrelated events keep enqueueing the job
        kc.queue.add("PyTorchJob/ns/j")
        await asyncio.sleep(0.01)
    assert pod_creates(fake) == 2
    assert not mgr.expectations.satisfied("PyTorchJob/ns/j")
    for item in held:
        real_emit(*item)
    await until(
        lambda: (fake.objects["kubeflow.org/v1/PyTorchJob"]["ns/j"].get("status") or {}).get("pods") == 2
    )
    assert pod_creates(fake) == 2 and mgr.expectations.satisfied("PyTorchJob/ns/j")


async def test_already_exists_and_not_found_count_as_done(env: Any) -> None:
    fake, planner, mgr = env
    await mgr.start()
    fake.fail_next("create", _status(409, "AlreadyExists"))
    planner.extra_actions = [DeleteObject(ObjectRef("v1", "Pod", "ns", "gone-already"))]
    fake.put(job(replicas=1))
    await until(lambda: "delete" in fake.verbs())
    await until(lambda: fake.verbs().count("status") >= 1)
    assert (
        mgr.expectations.satisfied("PyTorchJob/ns/j")
        or mgr.expectations.pending("PyTorchJob/ns/j")[1] == set()
    )
    assert metric(mgr, "kubetrain_api_writes_total", verb="delete", result="gone") >= 1
    assert metric(mgr, "kubetrain_api_writes_total", verb="create", result="exists") == 1


async def test_create_error_requeues_rate_limited_and_recovers(env: Any) -> None:
    fake, _planner, mgr = env
    await mgr.start()
    fake.fail_next("create", _status(500, "InternalError"))
    fake.put(job(replicas=1))
    await until(
        lambda: (fake.objects["kubeflow.org/v1/PyTorchJob"]["ns/j"].get("status") or {}).get("pods") == 1
    )
    assert metric(mgr, "kubetrain_reconcile_errors_total", kind="PyTorchJob") >= 1
    assert pods(fake) == ["ns/j-worker-0"]


async def test_status_conflict_rereads_and_retries(env: Any) -> None:
    fake, _planner, mgr = env
    await mgr.start()
    fake.fail_next("status", _status(409, "Conflict"))
    fake.put(job(replicas=1))
    await until(
        lambda: (fake.objects["kubeflow.org/v1/PyTorchJob"]["ns/j"].get("status") or {}).get("pods") == 1
    )
    assert ("get", "kubeflow.org/v1/PyTorchJob", "ns", "j") in fake.calls


async def test_planner_exception_is_contained(env: Any) -> None:
    fake, planner, mgr = env
    await mgr.start()
    planner.raise_for.add("bad")
    fake.put(job("bad", replicas=1))
    fake.put(job("good", replicas=1))
    await until(lambda: "ns/good-worker-0" in pods(fake))
    await until(lambda: sum(1 for n, _ in planner.calls if n == "bad") >= 3)  # retried with backoff
    assert "ns/bad-worker-0" not in pods(fake)


async def test_requeue_after_triggers_a_timed_reconcile(env: Any) -> None:
    fake, planner, mgr = env
    planner.requeue_after = 0.05
    await mgr.start()
    fake.put(job(replicas=1))
    await until(lambda: len(planner.calls) >= 5)


async def test_plan_retry_is_an_error_retried_with_backoff(env: Any) -> None:
    fake, planner, mgr = env
    planner.retry_for.add("blocked")
    await mgr.start()
    fake.put(job("blocked", replicas=0))
    await until(lambda: sum(1 for n, _ in planner.calls if n == "blocked") >= 3)
    assert metric(mgr, "kubetrain_reconcile_errors_total", kind="PyTorchJob") >= 2


@pytest.mark.parametrize("requeue_now", [False, True])
async def test_plan_requeue_now_plans_again_after_the_status_write(env: Any, requeue_now: bool) -> None:
    fake, planner, mgr = env
    planner.requeue_now = requeue_now
    await mgr.start()
    fake.put(job(replicas=0))
    await until(
        lambda: (fake.objects["kubeflow.org/v1/PyTorchJob"]["ns/j"].get("status") or {}) == {"pods": 0}
    )
    await asyncio.sleep(0.1)
    # Without the signal the status write's own watch event is absorbed by the cache: one plan.
    assert len(planner.calls) == (2 if requeue_now else 1)
    assert metric(mgr, "kubetrain_reconcile_errors_total", kind="PyTorchJob") == 0


async def test_child_events_map_to_owner_job_only_for_enabled_kinds(env: Any) -> None:
    fake, planner, mgr = env
    await mgr.start()
    fake.put(job(replicas=0))
    await until(lambda: len(planner.calls) >= 1)
    n = len(planner.calls)
    j = fake.objects["kubeflow.org/v1/PyTorchJob"]["ns/j"]
    stray = pod_for(j, 7)
    stray["metadata"]["ownerReferences"][0].update(kind="TFJob", uid="other")  # not enabled here
    fake.put(stray)
    await asyncio.sleep(0.05)
    assert len(planner.calls) == n
    fake.put(pod_for(j, 9))
    await until(lambda: len(planner.calls) > n)
    assert planner.calls[-1] == ("j", 1)


async def test_deleted_job_is_forgotten(env: Any) -> None:
    fake, planner, mgr = env
    await mgr.start()
    fake.put(job(replicas=0))
    await until(lambda: len(planner.calls) >= 1)
    fake.remove("kubeflow.org/v1", "PyTorchJob", "ns", "j")
    await until(lambda: mgr.controllers["PyTorchJob"].informer.store.get("ns", "j") is None)
    await asyncio.sleep(0.02)
    assert len(mgr.expectations) == 0


async def test_unserved_child_kind_is_not_watched() -> None:
    fake = FakeKube()
    fake.fail_next("list", _status(404, "NotFound"))  # the first list is the PodGroup probe
    planner = FakePlanner()
    mgr = Manager(
        fake,
        RuntimeConfig(enabled_schemes=("PyTorchJob",)),  # type: ignore[arg-type]
        planner=Planner(planner.plan, planner.watched_children),
        kinds=KINDS,
        registry=CollectorRegistry(),
    )
    await mgr.start()
    assert set(mgr.child_informers) == {"v1/Pod", "v1/Service"}
    await mgr.stop()


def test_unknown_scheme_is_rejected() -> None:
    with pytest.raises(UnsupportedScheme, match="scheme foojob is not supported yet"):
        Manager(
            FakeKube(),
            RuntimeConfig(enabled_schemes=("foojob",)),  # type: ignore[arg-type]
            planner=Planner(FakePlanner().plan, FakePlanner().watched_children),
            kinds=KINDS,
        )


async def test_stop_is_graceful_and_idempotent(env: Any) -> None:
    fake, _planner, mgr = env
    await mgr.start()
    fake.put(job(replicas=2))
    await mgr.stop()
    assert not mgr.ready
    assert all(t.done() for kc in mgr.controllers.values() for t in kc.workers)
    await mgr.stop()


async def test_planner_exception_is_reported_on_the_job(env: Any) -> None:
    """A job the operator cannot handle says so on itself (issue #17), once, not per retry."""
    fake, planner, mgr = env
    await mgr.start()
    planner.raise_for.add("bad")
    fake.put(job("bad", replicas=1))
    await until(lambda: sum(1 for n, _ in planner.calls if n == "bad") >= 3)
    await mgr.recorder.flush()
    events = [e for e in fake.objects["v1/Event"].values() if e["involvedObject"]["name"] == "bad"]
    assert [(e["type"], e["reason"]) for e in events] == [("Warning", "ReconcileError")]
    assert events[0]["message"] == "reconcile failed: RuntimeError: planner bug"
    assert events[0]["involvedObject"]["kind"] == "PyTorchJob"


async def test_context_kinds_are_shown_whole_and_their_changes_plan_the_readers_again() -> None:
    """`ObserveHints.context` (a TrainJob's runtimes): objects no job owns, every one cached and
    shown to the planner of a kind that reads them; one appearing late plans those jobs again."""
    fake = FakeKube()
    planner = FakePlanner()
    seen: list[list[str]] = []

    def plan(j: dict[str, Any], observed: Observed, now: datetime, config: ControllerConfig) -> Plan:
        seen.append([o["metadata"]["name"] for o in observed.of("v1", "ConfigMap")])
        return planner.plan(j, observed, now, config)

    mgr = Manager(
        fake,  # type: ignore[arg-type]
        RuntimeConfig(enabled_schemes=("pytorchjob",)),
        planner=Planner(plan, planner.watched_children),
        kinds=KINDS,
        registry=CollectorRegistry(),
        clock=lambda: NOW,
    )
    context = ChildType("v1", "ConfigMap", "configmaps", None)
    reg = mgr.registrations["PyTorchJob"]
    mgr.registrations["PyTorchJob"] = replace(reg, observe=replace(reg.observe, context=(context,)))
    assert ObserveHints().context == ()
    try:
        await mgr.start()
        fake.put(job(replicas=0))
        await until(lambda: len(seen) >= 1)
        assert seen[-1] == []
        n = len(seen)
        fake.put(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "runtime", "namespace": "other"}}
        )
        await until(lambda: len(seen) > n)
        assert seen[-1] == ["runtime"]  # whoever owns it, whichever namespace: the planner filters
    finally:
        await mgr.stop()
