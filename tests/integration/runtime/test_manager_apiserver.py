"""The manager end to end over HTTP with a stand-in planner (the real one is tested by the
controller suites); checks wiring: caches, expectations, concurrent writes, status, CRD install."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from datetime import datetime
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from kubetrain.controller.config import ChildType, ControllerConfig
from kubetrain.controller.plan import CreateObject, Event, Observed, Plan
from kubetrain.embedded.apiserver import EmbeddedAPIServer
from kubetrain.kinds.registry import REPLICA_SPEC_KINDS as KINDS
from kubetrain.runtime.config import RuntimeConfig
from kubetrain.runtime.manager import Manager, Planner
from kubetrain.runtime.transport import KubeClient

CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "pytorchjobs.kubeflow.org"},
    "spec": {
        "group": "kubeflow.org",
        "scope": "Namespaced",
        "names": {
            "kind": "PyTorchJob",
            "plural": "pytorchjobs",
            "singular": "pytorchjob",
            "listKind": "PyTorchJobList",
        },
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                },
            }
        ],
    },
}


def plan(job: dict[str, Any], observed: Observed, now: datetime, config: ControllerConfig) -> Plan:
    meta = job["metadata"]
    want = job["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"]
    have = {p["metadata"]["name"] for p in observed.pods if not p["metadata"].get("deletionTimestamp")}
    actions: list[Any] = []
    for i in range(want):
        name = f"{meta['name']}-worker-{i}"
        if name not in have:
            actions.append(
                CreateObject(
                    {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "metadata": {
                            "name": name,
                            "namespace": meta["namespace"],
                            "labels": {
                                "training.kubeflow.org/operator-name": "pytorchjob-controller",
                                "training.kubeflow.org/job-name": meta["name"],
                            },
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
                        "spec": {"containers": [{"name": "pytorch", "image": "busybox"}]},
                    }
                )
            )
    status = {"workers": len(have)}
    out = Plan(actions=actions)
    if job.get("status") != status:
        out.status = status
        out.events.append(Event("Normal", "Workers", f"{len(have)} workers"))
    return out


def children(config: ControllerConfig) -> list[ChildType]:
    return []


async def until(cond: Callable[[], bool], timeout: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not cond():
        if loop.time() > deadline:
            raise AssertionError("condition not reached")
        await asyncio.sleep(0.02)


@pytest.fixture
async def env() -> AsyncIterator[tuple[EmbeddedAPIServer, KubeClient, Manager]]:
    server = EmbeddedAPIServer()
    await server.start()
    client = KubeClient.for_url(server.url, server.token, server.ca_file, qps=0)
    mgr = Manager(
        client,
        RuntimeConfig(enabled_schemes=("PyTorchJob",), install_crds=True),
        planner=Planner(plan, children),
        kinds=KINDS,
        registry=CollectorRegistry(),
        crd_manifests=[CRD],
    )
    await mgr.start()
    yield server, client, mgr
    await mgr.stop()
    await client.close()
    await server.stop()


async def test_job_expands_to_pods_once_and_repairs_deletions(env: Any) -> None:
    _server, client, mgr = env
    await client.create(
        {
            "apiVersion": "kubeflow.org/v1",
            "kind": "PyTorchJob",
            "metadata": {"name": "big", "namespace": "default"},
            "spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": 50}}},
        }
    )
    pods = mgr.child_informers["v1/Pod"].store

    async def status() -> dict[str, Any]:
        return (await client.get("kubeflow.org/v1", "PyTorchJob", "default", "big")).get("status") or {}

    await until(lambda: len(pods) == 50)
    for _ in range(200):
        if (await status()).get("workers") == 50:
            break
        await asyncio.sleep(0.02)
    assert (await status()) == {"workers": 50}
    assert (
        mgr.metrics.registry.get_sample_value(
            "kubetrain_api_writes_total", {"verb": "create", "result": "ok"}
        )
        == 50
    )
    assert (
        mgr.metrics.registry.get_sample_value(
            "kubetrain_create_to_pods_seconds_count", {"kind": "PyTorchJob"}
        )
        == 1
    )

    await client.delete("v1", "Pod", "default", "big-worker-7")
    await until(
        lambda: (
            mgr.metrics.registry.get_sample_value(
                "kubetrain_api_writes_total", {"verb": "create", "result": "ok"}
            )
            == 51
        )
    )
    await until(lambda: pods.get("default", "big-worker-7") is not None)
    await mgr.recorder.flush()
    events, _ = await client.list("v1", "Event", "default")
    assert events and {e["source"]["component"] for e in events} == {"pytorchjob-controller"}
