"""Watch: framing, resourceVersion semantics, 410, bookmarks, selectors, timeouts, slow watchers."""

from __future__ import annotations

import asyncio
import re

import pytest
from kubernetes_asyncio import client, watch

from kubetrain.embedded.apiserver import EmbeddedAPIServer

from .helpers import NS, Http, Unique, WidgetKind, configmap, pod, wait_for_service_account

CM_DEFAULT = "/api/v1/namespaces/default/configmaps"


async def test_watch_from_empty_rv_starts_with_synthetic_added(http: Http, ns: NS) -> None:
    await http.post(ns.configmaps, configmap("a"))
    await http.post(ns.configmaps, configmap("b"))
    w = await http.watch(ns.configmaps, {})
    try:
        assert w.resp.status == 200 and w.resp.headers["Content-Type"].startswith("application/json")
        events = await w.take(2)
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
            ("ADDED", "a"),
            ("ADDED", "b"),
        ]
        assert events[0]["object"]["kind"] == "ConfigMap" and events[0]["object"]["apiVersion"] == "v1"
        await http.patch(f"{ns.configmaps}/a", {"data": {"x": "1"}})
        await http.delete(f"{ns.configmaps}/b")
        await http.post(ns.configmaps, configmap("c"))
        events = await w.take(3)
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
            ("MODIFIED", "a"),
            ("DELETED", "b"),
            ("ADDED", "c"),
        ]
        assert events[0]["object"]["data"] == {"x": "1"}
    finally:
        await w.close()


async def test_watch_stream_framing_is_one_json_object_per_line(http: Http, ns: NS) -> None:
    await http.post(ns.configmaps, configmap("a"))
    resp = await http.session.get(
        http.base + ns.configmaps, params={"watch": "true", "timeoutSeconds": "1", "labelSelector": "!x"}
    )
    raw = await resp.read()  # the server ends the stream after timeoutSeconds
    lines = raw.split(b"\n")
    assert lines[-1] == b""
    assert all(line.startswith(b'{"type":"ADDED","object":{"kind":"ConfigMap",') for line in lines[:-1])
    assert any(b'"name":"a"' in line for line in lines[:-1])


async def test_watch_resume_from_resource_version_replays_history(http: Http, ns: NS) -> None:
    _, a, _ = await http.post(ns.configmaps, configmap("a"))
    rv = a["metadata"]["resourceVersion"]
    await http.patch(f"{ns.configmaps}/a", {"data": {"v": "1"}})
    await http.post(ns.configmaps, configmap("b"))
    await http.post(ns.pods, pod("unrelated"))
    await http.delete(f"{ns.configmaps}/a")
    w = await http.watch(ns.configmaps, {"resourceVersion": rv})
    try:
        events = await w.take(3)
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
            ("MODIFIED", "a"),
            ("ADDED", "b"),
            ("DELETED", "a"),
        ]
        rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
        assert rvs == sorted(rvs) and rvs[0] > int(rv)
        await http.post(ns.configmaps, configmap("live"))
        (live,) = await w.take(1)
        assert live["type"] == "ADDED" and live["object"]["metadata"]["name"] == "live"
    finally:
        await w.close()


@pytest.mark.embedded_only("compacts the history on demand")
async def test_watch_from_compacted_rv_gets_410_error_event(
    server: EmbeddedAPIServer, http: Http, ns: NS
) -> None:
    _, a, _ = await http.post(ns.configmaps, configmap("a"))
    old_rv = int(a["metadata"]["resourceVersion"])
    await http.post(ns.configmaps, configmap("b"))
    current = server.compact()
    w = await http.watch(ns.configmaps, {"resourceVersion": str(old_rv)})
    try:
        assert w.resp.status == 200
        ev = await w.next()
        assert ev is not None and ev["type"] == "ERROR"
        assert ev["object"] == {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": f"too old resource version: {old_rv} ({current})",
            "reason": "Expired",
            "code": 410,
        }
        assert await w.next() is None  # then the stream ends
    finally:
        await w.close()
    w = await http.watch(
        ns.configmaps, {"resourceVersion": str(current)}
    )  # the compaction point itself is fine
    try:
        await http.post(ns.configmaps, configmap("c"))
        (ev,) = await w.take(1)
        assert ev["type"] == "ADDED"
    finally:
        await w.close()


async def test_bookmarks_carry_current_resource_version(http: Http, ns: NS) -> None:
    """kube-apiserver sends a bookmark before a watch's timeout; the embedded one also every interval."""
    w = await http.watch(
        ns.configmaps, {"allowWatchBookmarks": "true", "resourceVersion": "0", "timeoutSeconds": "4"}
    )
    try:
        await http.post(ns.pods, pod("bump"))  # moves the global resourceVersion without a configmap event
        _, listed, _ = await http.get(ns.pods)
        target = int(listed["metadata"]["resourceVersion"])
        bookmarks = []
        while (ev := await w.next(timeout=8)) is not None:
            if ev["type"] == "BOOKMARK":
                bookmarks.append(ev)
        assert bookmarks, "no bookmark before the timeout"
        last = bookmarks[-1]["object"]
        assert last["kind"] == "ConfigMap" and last["apiVersion"] == "v1"
        assert int(last["metadata"]["resourceVersion"]) >= target
    finally:
        await w.close()


@pytest.mark.embedded_only("sets the bookmark interval")
async def test_no_bookmarks_unless_requested(server: EmbeddedAPIServer, http: Http, ns: NS) -> None:
    server.bookmark_interval = 0.02
    w = await http.watch(ns.configmaps, {"timeoutSeconds": "1"})
    try:
        await http.post(ns.configmaps, configmap("x"))
        ev = await w.next()
        assert ev is not None and ev["type"] == "ADDED"
        assert await w.next(timeout=2) is None
    finally:
        await w.close()


async def test_label_selector_transitions(http: Http, ns: NS) -> None:
    await http.post(ns.configmaps, configmap("x", labels={"role": "a"}))
    w = await http.watch(ns.configmaps, {"labelSelector": "role=b", "resourceVersion": "0"})
    try:
        await http.post(ns.configmaps, configmap("y", labels={"role": "c"}))  # never matches: no event
        await http.patch(f"{ns.configmaps}/x", {"metadata": {"labels": {"role": "b"}}})  # enters -> ADDED
        await http.patch(f"{ns.configmaps}/x", {"data": {"k": "v"}})  # stays -> MODIFIED
        await http.patch(f"{ns.configmaps}/x", {"metadata": {"labels": {"role": "z"}}})  # leaves -> DELETED
        events = await w.take(3)
        assert [e["type"] for e in events] == ["ADDED", "MODIFIED", "DELETED"]
        assert all(e["object"]["metadata"]["name"] == "x" for e in events)
        left = events[2]["object"]
        assert left["metadata"]["labels"] == {"role": "b"}  # the last state that matched
        _, now, _ = await http.get(f"{ns.configmaps}/x")
        assert left["metadata"]["resourceVersion"] == now["metadata"]["resourceVersion"]
    finally:
        await w.close()


async def test_field_selector_watch_and_namespace_scope(http: Http, ns: NS, unique: Unique) -> None:
    other = unique("other", cleanup="/api/v1/namespaces")
    await http.post("/api/v1/namespaces", {"metadata": {"name": other}})
    await wait_for_service_account(http, other)
    w = await http.watch(ns.pods, {"fieldSelector": "status.phase=Running"})
    try:
        await http.post(f"/api/v1/namespaces/{other}/pods", pod("elsewhere"))
        await http.patch(
            f"/api/v1/namespaces/{other}/pods/elsewhere/status", {"status": {"phase": "Running"}}
        )
        await http.post(ns.pods, pod("p"))
        await http.patch(f"{ns.pods}/p/status", {"status": {"phase": "Running"}})
        (ev,) = await w.take(1)
        assert ev["type"] == "ADDED" and ev["object"]["metadata"]["name"] == "p"
    finally:
        await w.close()


async def test_all_namespaces_watch(http: Http, ns: NS, unique: Unique) -> None:
    ns2 = unique("ns2", cleanup="/api/v1/namespaces")
    await http.post("/api/v1/namespaces", {"metadata": {"name": ns2}})
    _, listed, _ = await http.get("/api/v1/configmaps")
    w = await http.watch("/api/v1/configmaps", {"resourceVersion": listed["metadata"]["resourceVersion"]})
    try:
        await http.post(f"/api/v1/namespaces/{ns2}/configmaps", configmap("a"))
        await http.post(ns.configmaps, configmap("b"))
        seen: set[str] = set()
        while seen != {ns2, ns.name}:
            (ev,) = await w.take(1)
            if ev["object"]["metadata"]["name"] in ("a", "b"):
                seen.add(ev["object"]["metadata"]["namespace"])
    finally:
        await w.close()


async def test_watch_single_object_with_legacy_path(http: Http, ns: NS) -> None:
    await http.post(ns.configmaps, configmap("one"))
    await http.post(ns.configmaps, configmap("two"))
    resp = await http.session.get(
        http.base + f"/api/v1/watch/namespaces/{ns}/configmaps/one", params={"timeoutSeconds": "1"}
    )
    lines = [ln for ln in (await resp.read()).split(b"\n") if ln]
    assert len(lines) == 1 and b'"name":"one"' in lines[0]


async def test_timeout_seconds_ends_the_stream(http: Http, ns: NS) -> None:
    loop = asyncio.get_running_loop()
    start = loop.time()
    resp = await http.session.get(http.base + ns.configmaps, params={"watch": "1", "timeoutSeconds": "1"})
    await resp.read()
    assert 0.9 <= loop.time() - start < 3


@pytest.mark.embedded_only("a server of its own with a tiny watch queue")
async def test_slow_watcher_is_closed_with_410_not_blocking_writers(http: Http) -> None:
    srv = EmbeddedAPIServer(watch_queue_size=5)
    await srv.start()
    try:
        # A watcher that never reads: once socket buffers are full its queue overflows.
        auth = {"Authorization": f"Bearer {srv.token}"}
        resp = await http.session.get(
            srv.url + CM_DEFAULT,
            params={"watch": "1", "resourceVersion": "0", "timeoutSeconds": "20"},
            headers=auth,
            ssl=srv.client_ssl_context(),
        )
        payload = {"blob": "x" * 100_000}
        loop = asyncio.get_running_loop()
        start = loop.time()
        for i in range(300):
            async with http.session.post(
                srv.url + CM_DEFAULT,
                json=configmap(f"c{i}", payload),
                headers=auth,
                ssl=srv.client_ssl_context(),
            ) as created:
                assert created.status == 201
        assert loop.time() - start < 10  # writers were never held up by the stuck watcher
        lines = [ln for ln in (await asyncio.wait_for(resp.read(), 10)).split(b"\n") if ln]
        assert len(lines) < 301
        assert b'"type":"ERROR"' in lines[-1] and b'"code":410' in lines[-1] and b'"Expired"' in lines[-1]
    finally:
        await srv.stop()


@pytest.mark.embedded_only("breaks watches on demand")
async def test_break_watches(server: EmbeddedAPIServer, http: Http, ns: NS) -> None:
    w = await http.watch(ns.configmaps, {})
    w2 = await http.watch(ns.pods, {})
    await asyncio.sleep(0.05)
    assert server.break_watches() == 2
    assert await w.next() is None and await w2.next() is None
    w3 = await http.watch(ns.configmaps, {})
    await asyncio.sleep(0.05)
    server.break_watches(gone=True)
    ev = await w3.next()
    assert ev is not None and ev["type"] == "ERROR" and ev["object"]["code"] == 410
    for s in (w, w2, w3):
        await s.close()


async def test_watch_with_kubernetes_asyncio(core: client.CoreV1Api, http: Http, ns: NS) -> None:
    await http.post(ns.configmaps, configmap("k", labels={"t": "1"}))
    seen = []
    w = watch.Watch()
    stream_of = w.stream(core.list_namespaced_config_map, ns.name, label_selector="t", timeout_seconds=2)
    async with stream_of as stream:
        async for event in stream:
            seen.append((event["type"], event["object"].metadata.name))
            if len(seen) == 1:
                await http.post(ns.configmaps, configmap("k2", labels={"t": "1"}))
            if len(seen) == 2:
                w.stop()
    assert seen == [("ADDED", "k"), ("ADDED", "k2")]


async def test_send_initial_events_ends_with_annotated_bookmark(http: Http, ns: NS) -> None:
    await http.post(ns.configmaps, configmap("i"))
    w = await http.watch(
        ns.configmaps,
        {"sendInitialEvents": "true", "allowWatchBookmarks": "true", "resourceVersionMatch": "NotOlderThan"},
    )
    try:
        events = await w.take(2, skip_bookmarks=False)
        assert events[0]["type"] == "ADDED"
        assert events[1]["type"] == "BOOKMARK"
        assert events[1]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
    finally:
        await w.close()


async def test_watch_from_future_resource_version_waits_for_it(http: Http, ns: NS) -> None:
    """The watch cache answers 200 and sends nothing until the store reaches that resourceVersion."""
    w = await http.watch(ns.configmaps, {"resourceVersion": str(2**40), "timeoutSeconds": "2"})
    try:
        assert w.resp.status == 200
        await http.post(ns.configmaps, configmap("before"))
        assert await w.take(1, timeout=4) == []
    finally:
        await w.close()


async def test_list_at_future_resource_version_times_out(http: Http, ns: NS) -> None:
    status, body, _ = await http.get(ns.configmaps, params={"resourceVersion": str(2**40)})
    assert status == 504 and body["reason"] == "Timeout"
    assert body["message"].startswith(f"Timeout: Too large resource version: {2**40}, current: ")
    assert body["details"] == {
        "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
        "retryAfterSeconds": 1,
    }


async def test_watch_older_than_the_watch_window_is_expired(http: Http, ns: NS) -> None:
    """resourceVersion 1 predates every resource's watch cache: an ERROR event, then the end."""
    w = await http.watch(ns.configmaps, {"resourceVersion": "1"})
    try:
        assert w.resp.status == 200
        ev = await w.next()
        assert ev is not None and ev["type"] == "ERROR"
        status = ev["object"]
        assert status["code"] == 410 and status["reason"] == "Expired"
        assert re.fullmatch(r"too old resource version: 1 \(\d+\)", status["message"])
        assert int(status["message"].split("(")[1].rstrip(")")) > 1
        assert await w.next() is None
    finally:
        await w.close()


async def test_watch_window_of_a_new_custom_resource_starts_at_its_crd(
    http: Http, widgets: WidgetKind
) -> None:
    _, namespace, _ = await http.get(f"/api/v1/namespaces/{widgets.namespace}")
    before_crd = namespace["metadata"]["resourceVersion"]  # the namespace was created first
    w = await http.watch(widgets.collection, {"resourceVersion": before_crd})
    try:
        ev = await w.next()
        assert ev is not None and ev["type"] == "ERROR" and ev["object"]["reason"] == "Expired"
    finally:
        await w.close()


async def test_invalid_resource_version(http: Http, ns: NS) -> None:
    detail = 'resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax'
    status, body, _ = await http.get(ns.configmaps, params={"resourceVersion": "abc"})
    assert status == 400 and body["reason"] == "BadRequest"
    assert body["message"] == f"invalid resource version: {detail}"
    status, body, _ = await http.get(ns.configmaps, params={"watch": "1", "resourceVersion": "abc"})
    assert status == 500 and "reason" not in body  # the watch cache's unwrapped error
    assert body["message"] == detail
