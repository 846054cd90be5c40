"""Watch: framing, resourceVersion semantics, 410, bookmarks, selectors, timeouts, slow watchers."""

from __future__ import annotations

import asyncio

from kubernetes_asyncio import client, watch

from kubetrain.embedded.apiserver import EmbeddedAPIServer

from .helpers import PODS, Http, configmap, pod

CM = "/api/v1/namespaces/default/configmaps"


async def test_watch_from_empty_rv_starts_with_synthetic_added(http: Http) -> None:
    await http.post(CM, configmap("a"))
    await http.post(CM, configmap("b"))
    w = await http.watch(CM, {})
    try:
        assert w.resp.status == 200 and w.resp.headers["Content-Type"].startswith("application/json")
        events = await w.take(2)
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
            ("ADDED", "a"),
            ("ADDED", "b"),
        ]
        assert events[0]["object"]["kind"] == "ConfigMap" and events[0]["object"]["apiVersion"] == "v1"
        await http.patch(f"{CM}/a", {"data": {"x": "1"}})
        await http.delete(f"{CM}/b")
        await http.post(CM, configmap("c"))
        events = await w.take(3)
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
            ("MODIFIED", "a"),
            ("DELETED", "b"),
            ("ADDED", "c"),
        ]
        assert events[0]["object"]["data"] == {"x": "1"}
    finally:
        await w.close()


async def test_watch_stream_framing_is_one_json_object_per_line(http: Http) -> None:
    await http.post(CM, configmap("a"))
    resp = await http.session.get(http.base + CM, params={"watch": "true", "timeoutSeconds": "1"})
    raw = await resp.read()  # the server ends the stream after timeoutSeconds
    lines = raw.split(b"\n")
    assert lines[-1] == b"" and len(lines) == 2
    assert lines[0].startswith(b'{"type":"ADDED","object":{')


async def test_watch_resume_from_resource_version_replays_history(http: Http) -> None:
    _, a, _ = await http.post(CM, configmap("a"))
    rv = a["metadata"]["resourceVersion"]
    await http.patch(f"{CM}/a", {"data": {"v": "1"}})
    await http.post(CM, configmap("b"))
    await http.post(PODS, pod("unrelated"))
    await http.delete(f"{CM}/a")
    w = await http.watch(CM, {"resourceVersion": rv})
    try:
        events = await w.take(3)
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
            ("MODIFIED", "a"),
            ("ADDED", "b"),
            ("DELETED", "a"),
        ]
        rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
        assert rvs == sorted(rvs) and rvs[0] > int(rv)
        await http.post(CM, configmap("live"))
        (live,) = await w.take(1)
        assert live["type"] == "ADDED" and live["object"]["metadata"]["name"] == "live"
    finally:
        await w.close()


async def test_watch_from_compacted_rv_gets_410_error_event(server: EmbeddedAPIServer, http: Http) -> None:
    _, a, _ = await http.post(CM, configmap("a"))
    old_rv = int(a["metadata"]["resourceVersion"])
    await http.post(CM, configmap("b"))
    current = server.compact()
    w = await http.watch(CM, {"resourceVersion": str(old_rv)})
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
    w = await http.watch(CM, {"resourceVersion": str(current)})  # the compaction point itself is fine
    try:
        await http.post(CM, configmap("c"))
        (ev,) = await w.take(1)
        assert ev["type"] == "ADDED"
    finally:
        await w.close()


async def test_bookmarks_carry_current_resource_version(server: EmbeddedAPIServer, http: Http) -> None:
    server.bookmark_interval = 0.05
    w = await http.watch(CM, {"allowWatchBookmarks": "true", "resourceVersion": "0"})
    try:
        await http.post(PODS, pod("bump"))  # moves the global resourceVersion without a configmap event
        _, listed, _ = await http.get(PODS)
        target = int(listed["metadata"]["resourceVersion"])
        for _ in range(50):
            ev = await w.next()
            assert ev is not None
            if ev["type"] == "BOOKMARK" and int(ev["object"]["metadata"]["resourceVersion"]) >= target:
                assert ev["object"]["kind"] == "ConfigMap" and ev["object"]["apiVersion"] == "v1"
                break
        else:
            raise AssertionError("no bookmark with the current resourceVersion")
    finally:
        await w.close()


async def test_no_bookmarks_unless_requested(server: EmbeddedAPIServer, http: Http) -> None:
    server.bookmark_interval = 0.02
    w = await http.watch(CM, {"timeoutSeconds": "1"})
    try:
        await http.post(CM, configmap("x"))
        ev = await w.next()
        assert ev is not None and ev["type"] == "ADDED"
        assert await w.next(timeout=2) is None
    finally:
        await w.close()


async def test_label_selector_transitions(http: Http) -> None:
    await http.post(CM, configmap("x", labels={"role": "a"}))
    w = await http.watch(CM, {"labelSelector": "role=b", "resourceVersion": "0"})
    try:
        await http.post(CM, configmap("y", labels={"role": "c"}))  # never matches: no event
        await http.patch(f"{CM}/x", {"metadata": {"labels": {"role": "b"}}})  # enters -> ADDED
        await http.patch(f"{CM}/x", {"data": {"k": "v"}})  # stays -> MODIFIED
        await http.patch(f"{CM}/x", {"metadata": {"labels": {"role": "z"}}})  # leaves -> DELETED
        events = await w.take(3)
        assert [e["type"] for e in events] == ["ADDED", "MODIFIED", "DELETED"]
        assert all(e["object"]["metadata"]["name"] == "x" for e in events)
        left = events[2]["object"]
        assert left["metadata"]["labels"] == {"role": "b"}  # the last state that matched
        _, now, _ = await http.get(f"{CM}/x")
        assert left["metadata"]["resourceVersion"] == now["metadata"]["resourceVersion"]
    finally:
        await w.close()


async def test_field_selector_watch_and_namespace_scope(http: Http) -> None:
    await http.post("/api/v1/namespaces", {"metadata": {"name": "other"}})
    w = await http.watch(PODS, {"fieldSelector": "status.phase=Running"})
    try:
        await http.post("/api/v1/namespaces/other/pods", pod("elsewhere"))
        await http.patch("/api/v1/namespaces/other/pods/elsewhere/status", {"status": {"phase": "Running"}})
        await http.post(PODS, pod("p"))
        await http.patch(f"{PODS}/p/status", {"status": {"phase": "Running"}})
        (ev,) = await w.take(1)
        assert ev["type"] == "ADDED" and ev["object"]["metadata"]["name"] == "p"
    finally:
        await w.close()


async def test_all_namespaces_watch(http: Http) -> None:
    await http.post("/api/v1/namespaces", {"metadata": {"name": "ns2"}})
    _, listed, _ = await http.get("/api/v1/configmaps")
    w = await http.watch("/api/v1/configmaps", {"resourceVersion": listed["metadata"]["resourceVersion"]})
    try:
        await http.post("/api/v1/namespaces/ns2/configmaps", configmap("a"))
        await http.post(CM, configmap("b"))
        events = await w.take(2)
        assert {e["object"]["metadata"]["namespace"] for e in events} == {"ns2", "default"}
    finally:
        await w.close()


async def test_watch_single_object_with_legacy_path(http: Http) -> None:
    await http.post(CM, configmap("one"))
    await http.post(CM, configmap("two"))
    resp = await http.session.get(
        http.base + "/api/v1/watch/namespaces/default/configmaps/one", params={"timeoutSeconds": "1"}
    )
    lines = [ln for ln in (await resp.read()).split(b"\n") if ln]
    assert len(lines) == 1 and b'"name":"one"' in lines[0]


async def test_timeout_seconds_ends_the_stream(http: Http) -> None:
    loop = asyncio.get_running_loop()
    start = loop.time()
    resp = await http.session.get(http.base + CM, params={"watch": "1", "timeoutSeconds": "1"})
    await resp.read()
    assert 0.9 <= loop.time() - start < 3


async def test_slow_watcher_is_closed_with_410_not_blocking_writers(http: Http) -> None:
    srv = EmbeddedAPIServer(watch_queue_size=5)
    await srv.start()
    try:
        # A watcher that never reads: once socket buffers are full its queue overflows.
        resp = await http.session.get(
            srv.url + CM, params={"watch": "1", "resourceVersion": "0", "timeoutSeconds": "20"}
        )
        payload = {"blob": "x" * 100_000}
        loop = asyncio.get_running_loop()
        start = loop.time()
        for i in range(300):
            async with http.session.post(srv.url + CM, json=configmap(f"c{i}", payload)) as created:
                assert created.status == 201
        assert loop.time() - start < 10  # writers were never held up by the stuck watcher
        lines = [ln for ln in (await asyncio.wait_for(resp.read(), 10)).split(b"\n") if ln]
        assert len(lines) < 301
        assert b'"type":"ERROR"' in lines[-1] and b'"code":410' in lines[-1] and b'"Expired"' in lines[-1]
    finally:
        await srv.stop()


async def test_break_watches(server: EmbeddedAPIServer, http: Http) -> None:
    w = await http.watch(CM, {})
    w2 = await http.watch(PODS, {})
    await asyncio.sleep(0.05)
    assert server.break_watches() == 2
    assert await w.next() is None and await w2.next() is None
    w3 = await http.watch(CM, {})
    await asyncio.sleep(0.05)
    server.break_watches(gone=True)
    ev = await w3.next()
    assert ev is not None and ev["type"] == "ERROR" and ev["object"]["code"] == 410
    for s in (w, w2, w3):
        await s.close()


async def test_watch_with_kubernetes_asyncio(core: client.CoreV1Api, http: Http) -> None:
    await http.post(CM, configmap("k"))
    seen = []
    w = watch.Watch()
    async with w.stream(core.list_namespaced_config_map, "default", timeout_seconds=2) as stream:
        async for event in stream:
            seen.append((event["type"], event["object"].metadata.name))
            if len(seen) == 1:
                await http.post(CM, configmap("k2"))
            if len(seen) == 2:
                w.stop()
    assert seen == [("ADDED", "k"), ("ADDED", "k2")]


async def test_send_initial_events_ends_with_annotated_bookmark(http: Http) -> None:
    await http.post(CM, configmap("i"))
    w = await http.watch(
        CM,
        {"sendInitialEvents": "true", "allowWatchBookmarks": "true", "resourceVersionMatch": "NotOlderThan"},
    )
    try:
        events = await w.take(2, skip_bookmarks=False)
        assert events[0]["type"] == "ADDED"
        assert events[1]["type"] == "BOOKMARK"
        assert events[1]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
    finally:
        await w.close()


async def test_watch_from_future_resource_version_times_out(http: Http) -> None:
    status, body, _ = await http.get(CM, params={"watch": "1", "resourceVersion": str(2**40)})
    assert status == 504 and body["reason"] == "Timeout"
    assert body["message"].startswith(f"Timeout: Too large resource version: {2**40}, current: ")
