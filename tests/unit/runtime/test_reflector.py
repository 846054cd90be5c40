import asyncio
from typing import Any

import pytest
from runtime_fakekube import FakeKube, _status

from kubetrain.kube.backoff import Backoff
from kubetrain.runtime.cache import Change
from kubetrain.runtime.informer import Informer
from kubetrain.runtime.reflector import Reflector

LABELS = {"training.kubeflow.org/operator-name": "pytorchjob-controller"}


def pod(name: str, ns: str = "ns", labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": dict(LABELS if labels is None else labels)},
        "spec": {"containers": [{"name": "pytorch", "image": "x"}]},
        "status": {"phase": "Pending"},
    }


async def until(cond: Any, timeout: float = 2.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not cond():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not reached")
        await asyncio.sleep(0.005)


def make(fake: FakeKube, **kw: Any) -> tuple[Informer, list[Change]]:
    informer = Informer(
        fake, fake.resource("v1", "Pod"), label_selector="training.kubeflow.org/operator-name", **kw
    )  # type: ignore[arg-type]
    informer.reflector.backoff = Backoff(base=0.001, cap=0.01)
    changes: list[Change] = []
    informer.add_handler(changes.append)
    return informer, changes


async def test_list_then_watch_with_bookmarks_and_label_filter() -> None:
    fake = FakeKube()
    fake.put(pod("a"))
    fake.put(pod("stranger", labels={}))
    informer, changes = make(fake)
    informer.start()
    assert await informer.wait_for_sync(1)
    assert [c.type for c in changes] == ["ADDED"]
    assert informer.store.get("ns", "a") is not None and informer.store.get("ns", "stranger") is None
    await until(lambda: fake.watchers)
    watch_call = next(c for c in fake.calls if c[0] == "watch")
    assert watch_call[3] == informer.reflector.resource_version and watch_call[4] is True
    fake.put(pod("b"))
    await until(lambda: len(changes) == 2)
    assert changes[-1].type == "ADDED" and changes[-1].new["metadata"]["name"] == "b"  # type: ignore[index]
    await informer.stop()


async def test_bookmark_advances_resource_version_without_events() -> None:
    fake = FakeKube()
    informer, changes = make(fake)
    informer.start()
    await informer.wait_for_sync(1)
    await until(lambda: fake.watchers)
    fake.send_raw(
        "v1/Pod", {"type": "BOOKMARK", "object": {"kind": "Pod", "metadata": {"resourceVersion": "9999"}}}
    )
    await until(lambda: informer.reflector.resource_version == "9999")
    assert changes == []
    await informer.stop()


async def test_broken_watch_resumes_from_last_resource_version_without_relist() -> None:
    fake = FakeKube()
    informer, changes = make(fake)
    informer.start()
    await informer.wait_for_sync(1)
    await until(lambda: fake.watchers)
    fake.put(pod("a"))
    await until(lambda: len(changes) == 1)
    rv = informer.reflector.resource_version
    fake.send_raw("v1/Pod", _status(0, "ConnectionError"))  # the stream breaks
    await until(lambda: len([c for c in fake.calls if c[0] == "watch"]) == 2)
    assert [c for c in fake.calls if c[0] == "watch"][1][3] == rv
    assert len([c for c in fake.calls if c[0] == "list"]) == 1
    await informer.stop()


async def test_server_closing_watch_rewatches() -> None:
    fake = FakeKube()
    informer, _ = make(fake)
    informer.start()
    await informer.wait_for_sync(1)
    await until(lambda: fake.watchers)
    fake.close_watches()
    await until(lambda: len([c for c in fake.calls if c[0] == "watch"]) == 2)
    assert informer.reflector.lists == 1
    await informer.stop()


@pytest.mark.parametrize("as_event", [True, False])
async def test_410_gone_relists_and_reports_missed_deletes(as_event: bool) -> None:
    fake = FakeKube()
    fake.put(pod("a"))
    fake.put(pod("b"))
    informer, changes = make(fake)
    informer.start()
    await informer.wait_for_sync(1)
    await until(lambda: fake.watchers)
    # While "compacted", b is deleted and c created without our watch seeing it.
    fake.objects["v1/Pod"].pop("ns/b")
    fake.put(pod("c"), notify=False)
    if as_event:
        fake.send_raw(
            "v1/Pod", {"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired"}}
        )
    else:
        fake.send_raw("v1/Pod", _status(410, "Gone"))
    await until(lambda: informer.reflector.lists == 2)
    names = sorted(informer.store.get_by_key(k)["metadata"]["name"] for k in informer.store)  # type: ignore[index]
    assert names == ["a", "c"]
    assert [(c.type, (c.new or c.old)["metadata"]["name"]) for c in changes[2:]] == [  # type: ignore[index]
        ("ADDED", "c"),
        ("DELETED", "b"),
    ]
    await informer.stop()


async def test_list_errors_back_off_and_sync_later() -> None:
    fake = FakeKube()
    fake.fail_next("list", _status(503, "ServiceUnavailable"), _status(429, "TooManyRequests"))
    informer, _ = make(fake)
    informer.start()
    assert await informer.wait_for_sync(1)
    assert informer.reflector.lists == 1 and informer.reflector.errors == 2
    await informer.stop()


async def test_watch_start_error_retries_watch_from_same_version() -> None:
    fake = FakeKube()
    informer, _ = make(fake)
    fake.fail_next("watch", _status(500, "InternalError"))
    informer.start()
    await informer.wait_for_sync(1)
    await until(lambda: fake.watchers)
    watches = [c for c in fake.calls if c[0] == "watch"]
    assert len(watches) == 2 and watches[0][3] == watches[1][3]
    assert informer.reflector.lists == 1
    await informer.stop()


async def test_same_resource_version_update_is_not_reported() -> None:
    fake = FakeKube()
    informer, changes = make(fake)
    informer.start()
    await informer.wait_for_sync(1)
    await until(lambda: fake.watchers)
    obj = fake.put(pod("a"))
    await until(lambda: len(changes) == 1)
    fake.send_raw("v1/Pod", {"type": "MODIFIED", "object": obj})
    fake.put(pod("b"))
    await until(lambda: len(changes) == 2)
    assert [c.new["metadata"]["name"] for c in changes] == ["a", "b"]  # type: ignore[index]
    await informer.stop()


async def test_handler_exception_does_not_stop_reflector() -> None:
    fake = FakeKube()
    informer, changes = make(fake)

    def boom(change: Change) -> None:
        raise RuntimeError("handler bug")

    informer.add_handler(boom)
    informer.start()
    await informer.wait_for_sync(1)
    await until(lambda: fake.watchers)
    fake.put(pod("a"))
    fake.put(pod("b"))
    await until(lambda: len(changes) == 2)
    await informer.stop()


async def test_namespace_scoped_reflector_lists_and_watches_one_namespace() -> None:
    fake = FakeKube()
    fake.put(pod("a", ns="ns"))
    fake.put(pod("a", ns="other"))
    informer, _ = make(fake, namespace="ns")
    informer.start()
    await informer.wait_for_sync(1)
    assert list(informer.store.keys()) == ["ns/a"]
    await until(lambda: fake.watchers)
    assert fake.watchers[0][1] == "ns"
    await informer.stop()


def test_reflector_stop_flag() -> None:
    fake = FakeKube()
    r = Reflector(fake, fake.resource("v1", "Pod"), informer_store())  # type: ignore[arg-type]
    r.stop()
    asyncio.run(r.run())  # returns immediately
    assert r.lists == 0


def informer_store() -> Any:
    from kubetrain.runtime.cache import Store

    return Store()


async def test_an_object_the_trim_cannot_handle_is_left_out_not_fatal() -> None:
    """One poison object must not fail every list and watch of its kind (issue #17)."""

    def trim(obj: dict[str, Any]) -> dict[str, Any]:
        if obj["metadata"]["name"].startswith("poison"):
            raise RecursionError("maximum recursion depth exceeded")
        return obj

    fake = FakeKube()
    fake.put(pod("a"))
    fake.put(pod("poison-1"))
    informer, changes = make(fake, trim=trim)
    informer.start()
    assert await informer.wait_for_sync(1)
    assert sorted(informer.store.keys()) == ["ns/a"]
    await until(lambda: fake.watchers)
    fake.put(pod("poison-2"))
    fake.put(pod("b"))
    await until(lambda: informer.store.get("ns", "b") is not None)
    assert informer.reflector.lists == 1  # no relist: the watch went on past the poison event
    assert informer.store.get("ns", "poison-2") is None and informer.reflector.errors >= 2
    assert [(c.type, c.new["metadata"]["name"]) for c in changes if c.new] == [("ADDED", "a"), ("ADDED", "b")]
    await informer.stop()
