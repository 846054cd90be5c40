"""The runtime over real HTTP against the embedded API server: transport, reflector/informer
(list+watch, resume, 410 relist, bookmarks, broken watches), injected 5xx/429/409, CRDs, events."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from kubetrain.embedded.apiserver import EmbeddedAPIServer
from kubetrain.kube.backoff import Backoff
from kubetrain.kube.errors import ApiError
from kubetrain.runtime.cache import Change
from kubetrain.runtime.crds import install_crds
from kubetrain.runtime.events import EventRecorder
from kubetrain.runtime.informer import Informer
from kubetrain.runtime.transport import KubeClient

OP = "training.kubeflow.org/operator-name"


def pod(name: str, ns: str = "default", labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": ns,
            "labels": {OP: "pytorchjob-controller"} if labels is None else labels,
        },
        "spec": {"containers": [{"name": "pytorch", "image": "busybox"}]},
    }


async def until(cond: Callable[[], bool], timeout: float = 5.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not cond():
        if loop.time() > deadline:
            raise AssertionError("condition not reached")
        await asyncio.sleep(0.01)


@pytest.fixture
async def server() -> AsyncIterator[EmbeddedAPIServer]:
    srv = EmbeddedAPIServer()
    await srv.start()
    yield srv
    await srv.stop()


@pytest.fixture
async def client(server: EmbeddedAPIServer) -> AsyncIterator[KubeClient]:
    c = KubeClient.for_url(
        server.url, server.token, server.ca_file, qps=0, backoff_base=0.01, backoff_cap=0.05
    )
    yield c
    await c.close()


def pod_informer(client: KubeClient, **kw: Any) -> tuple[Informer, list[Change]]:
    informer = Informer(client, client.resource("v1", "Pod"), label_selector=OP, **kw)
    informer.reflector.backoff = Backoff(base=0.05, cap=0.2)
    changes: list[Change] = []
    informer.add_handler(changes.append)
    return informer, changes


def names(changes: list[Change]) -> list[tuple[str, str]]:
    return [(c.type, (c.new or c.old or {})["metadata"]["name"]) for c in changes]


async def test_client_from_kubeconfig(server: EmbeddedAPIServer, tmp_path: Path) -> None:
    path = server.write_kubeconfig(tmp_path / "kubeconfig")
    client = await KubeClient.from_kubeconfig(str(path))
    try:
        created = await client.create(pod("a"))
        assert created["metadata"]["uid"]
        got = await client.get("v1", "Pod", "default", "a")
        assert got["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
        with pytest.raises(ApiError) as exc:
            await client.create(pod("a"))
        assert exc.value.already_exists
        with pytest.raises(ApiError) as exc:
            await client.get("v1", "Pod", "default", "missing")
        assert exc.value.not_found
    finally:
        await client.close()


async def test_verbs_round_trip(client: KubeClient) -> None:
    created = await client.create(pod("a"))
    patched = await client.merge_patch("v1", "Pod", "default", "a", {"metadata": {"labels": {"x": "1"}}})
    assert patched["metadata"]["labels"]["x"] == "1"
    patched = await client.json_patch(
        "v1", "Pod", "default", "a", [{"op": "replace", "path": "/metadata/labels/x", "value": "2"}]
    )
    assert patched["metadata"]["labels"]["x"] == "2"
    await client.patch_status("v1", "Pod", "default", "a", {"status": {"phase": "Running"}})
    items, rv = await client.list("v1", "Pod", "default", label_selector="x=2", limit=1)
    assert [i["metadata"]["name"] for i in items] == ["a"] and rv
    with pytest.raises(ApiError) as exc:  # uid precondition protects a newer same-named object
        await client.delete("v1", "Pod", "default", "a", uid="not-the-uid")
    assert exc.value.conflict
    await client.delete(
        "v1", "Pod", "default", "a", uid=created["metadata"]["uid"], propagation_policy="Background"
    )
    with pytest.raises(ApiError) as exc:
        await client.delete("v1", "Pod", "default", "a")
    assert exc.value.not_found


async def test_list_pagination(client: KubeClient) -> None:
    for i in range(7):
        await client.create(pod(f"p{i}"))
    items, _ = await client.list("v1", "Pod", "default", limit=3)
    assert sorted(i["metadata"]["name"] for i in items) == [f"p{i}" for i in range(7)]


async def test_informer_list_watch_label_filter_and_trim(client: KubeClient) -> None:
    await client.create(pod("before"))
    await client.create(pod("stranger", labels={}))
    informer, changes = pod_informer(client)
    informer.start()
    assert await informer.wait_for_sync(5)
    await client.create(pod("after"))
    await client.merge_patch("v1", "Pod", "default", "after", {"metadata": {"annotations": {"a": "b"}}})
    await client.delete("v1", "Pod", "default", "before")
    await until(lambda: len(changes) == 4)
    assert names(changes) == [
        ("ADDED", "before"),
        ("ADDED", "after"),
        ("MODIFIED", "after"),
        ("DELETED", "before"),
    ]
    cached = informer.store.get("default", "after")
    assert cached is not None and "managedFields" not in cached["metadata"]
    assert cached["spec"]["containers"] == [{"name": "pytorch"}]
    assert informer.store.get("default", "stranger") is None
    await informer.stop()


async def test_bookmarks_advance_resource_version() -> None:
    server = EmbeddedAPIServer(bookmark_interval=0.05)
    await server.start()
    client = KubeClient.for_url(server.url, server.token, server.ca_file, qps=0)
    informer, changes = pod_informer(client)
    informer.start()
    await informer.wait_for_sync(5)
    start_rv = int(informer.reflector.resource_version or 0)
    await client.create(pod("invisible", labels={}))  # advances the server's RV, filtered out of our watch
    await until(lambda: int(informer.reflector.resource_version or 0) > start_rv)
    assert changes == []
    assert [c for c in changes if c.type == "ADDED"] == []
    await informer.stop()
    await client.close()
    await server.stop()


async def test_broken_watch_resumes_without_relist(server: EmbeddedAPIServer, client: KubeClient) -> None:
    informer, changes = pod_informer(client)
    informer.start()
    await informer.wait_for_sync(5)
    await client.create(pod("a"))
    await until(lambda: len(changes) == 1)
    for _ in range(3):
        await until(lambda: server.break_watches() > 0)
        await client.create(pod(f"during-{_}"))
    await until(lambda: len(changes) == 4)
    assert informer.reflector.lists == 1 and informer.reflector.watches >= 4
    assert names(changes)[1:] == [("ADDED", "during-0"), ("ADDED", "during-1"), ("ADDED", "during-2")]
    await informer.stop()


async def test_gone_error_event_relists(server: EmbeddedAPIServer, client: KubeClient) -> None:
    informer, changes = pod_informer(client)
    informer.start()
    await informer.wait_for_sync(5)
    await client.create(pod("a"))
    await until(lambda: len(changes) == 1)
    await until(lambda: server.break_watches(gone=True) > 0)
    await until(lambda: informer.reflector.lists == 2)
    await client.create(pod("b"))
    await until(lambda: len(changes) == 2)
    assert names(changes) == [("ADDED", "a"), ("ADDED", "b")]  # the relist found nothing new
    await informer.stop()


async def test_compaction_relists_and_reports_changes_missed_in_the_gap(
    server: EmbeddedAPIServer, client: KubeClient
) -> None:
    slow = KubeClient.for_url(server.url, server.token, server.ca_file, qps=0, max_attempts=1)
    informer, changes = pod_informer(slow)
    informer.reflector.backoff = Backoff(base=0.3, cap=0.3, jitter=0.0)
    informer.start()
    await informer.wait_for_sync(5)
    await client.create(pod("keep"))
    await client.create(pod("doomed"))
    await until(lambda: len(changes) == 2)
    # The watch breaks and cannot be re-established at once; meanwhile objects change and the
    # history is compacted: resuming from the old resourceVersion gets 410 and must relist.
    server.inject_fault("watch", "pods", 500, count=1)
    await until(lambda: server.break_watches() > 0)
    await client.delete("v1", "Pod", "default", "doomed")
    await client.create(pod("new"))
    server.compact()
    await until(lambda: informer.reflector.lists == 2)
    await until(lambda: len(changes) == 4)
    assert sorted(names(changes)[2:]) == [("ADDED", "new"), ("DELETED", "doomed")]
    assert sorted(k for k in informer.store) == ["default/keep", "default/new"]
    await informer.stop()
    await slow.close()


async def test_injected_5xx_and_429_are_retried_by_the_transport(
    server: EmbeddedAPIServer, client: KubeClient
) -> None:
    server.inject_fault("list", "pods", 503, count=1, retry_after=0)
    server.inject_fault("list", "pods", 500, count=1)
    server.inject_fault("create", "pods", 429, count=2, retry_after=0)
    informer, _ = pod_informer(client)
    informer.start()
    assert await informer.wait_for_sync(5)
    assert informer.reflector.errors == 0
    before = client.retries_total
    await client.create(pod("a"))
    assert client.retries_total - before == 2
    await informer.stop()


async def test_injected_watch_failures_back_off_and_recover(
    server: EmbeddedAPIServer, client: KubeClient
) -> None:
    server.inject_fault("watch", "pods", 500, count=2)
    informer, changes = pod_informer(client)
    informer.start()
    await informer.wait_for_sync(5)
    await client.create(pod("a"))
    await until(lambda: len(changes) == 1)
    assert informer.reflector.errors == 2 and informer.reflector.lists == 1
    await informer.stop()


async def test_status_conflict_is_retried_by_rereading(server: EmbeddedAPIServer, client: KubeClient) -> None:
    await client.create(pod("a"))
    server.inject_fault("update", "pods/status", 409, count=1)
    seen: list[str] = []

    def mutate(obj: dict[str, Any]) -> dict[str, Any]:
        seen.append(obj["metadata"]["resourceVersion"])
        return {**obj.get("status", {}), "phase": "Running"}

    written = await client.update_status_retrying("v1", "Pod", "default", "a", mutate)
    assert written is not None and written["status"]["phase"] == "Running"
    assert len(seen) == 2
    stale = {**written, "metadata": {**written["metadata"], "resourceVersion": seen[0]}}
    with pytest.raises(ApiError) as exc:
        await client.replace_status(stale)
    assert exc.value.conflict


CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.org"},
    "spec": {
        "group": "example.org",
        "scope": "Namespaced",
        "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
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


async def test_install_crds_then_watch_custom_resources(client: KubeClient) -> None:
    await install_crds(client, [CRD], timeout=10)
    await install_crds(client, [CRD], timeout=10)  # idempotent: updates in place
    informer = Informer(client, client.resource("example.org/v1", "Widget"))
    informer.start()
    assert await informer.wait_for_sync(5)
    await client.create(
        {
            "apiVersion": "example.org/v1",
            "kind": "Widget",
            "metadata": {"name": "w", "namespace": "default"},
            "spec": {"size": 3},
        }
    )
    await until(lambda: informer.store.get("default", "w") is not None)
    widget = informer.store.get("default", "w")
    assert widget is not None and widget["spec"] == {"size": 3}
    await informer.stop()


async def test_event_recorder_aggregates_on_the_server(client: KubeClient) -> None:
    rec = EventRecorder(client, host="")
    rec.start()
    involved = {"apiVersion": "v1", "kind": "Pod", "namespace": "default", "name": "p", "uid": "u"}
    for _ in range(3):
        rec.record("pytorchjob-controller", involved, "Normal", "Pulled", "same")
    await rec.flush()
    items, _ = await client.list("v1", "Event", "default")
    assert len(items) == 1 and items[0]["count"] == 3
    assert items[0]["source"]["component"] == "pytorchjob-controller"
    await rec.stop()
