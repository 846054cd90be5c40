"""The embedded server with a state file: a new server on the same file has every object again.

uids, generations and statuses are kept; deletes stay deleted; resourceVersions keep growing and
a watch from before the restart is Expired (410), as after an etcd compaction. A file of another
schema version, or one that is not ours, is refused with its path and the fix.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from kubetrain.embedded.apiserver import EmbeddedAPIServer
from kubetrain.embedded.apiserver.persistence import PersistenceError
from kubetrain.kube.errors import ApiError
from kubetrain.runtime.transport import KubeClient

from .helpers import CRDS, WidgetKind

PODS = "/api/v1/namespaces/default/pods"
SERVICES = "/api/v1/namespaces/default/services"


def _pod(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


@asynccontextmanager
async def serving(state: Path) -> AsyncIterator[KubeClient]:
    """A server on ``state``, reached as any client does: through the kubeconfig it writes."""
    server = EmbeddedAPIServer(state_file=state)
    await server.start()
    kube = await KubeClient.from_kubeconfig(str(server.write_kubeconfig(state.parent / "kubeconfig")))
    try:
        yield kube
    finally:
        await kube.close()
        await server.stop()


async def _post(kube: KubeClient, path: str, body: dict[str, Any]) -> dict[str, Any]:
    return await kube.request("POST", path, body=body, idempotent=False)


async def _served(kube: KubeClient, path: str) -> None:
    for _ in range(200):
        try:
            await kube.request("GET", path)
            return
        except ApiError as err:
            if not err.not_found:
                raise
        await asyncio.sleep(0.05)
    raise AssertionError(f"{path} is not served")


async def test_a_restarted_server_has_every_object_and_newer_resource_versions(tmp_path: Path) -> None:
    state = tmp_path / "plane.db"
    widgets = WidgetKind("persist.example.com", "default")
    async with serving(state) as kube:
        await _post(kube, CRDS, widgets.crd())
        await _served(kube, widgets.collection)
        widget = await _post(kube, widgets.collection, widgets.obj("w1"))
        kept = await _post(kube, PODS, _pod("kept"))
        running = await kube.request(
            "PATCH",
            f"{PODS}/kept/status",
            body={"status": {"phase": "Running"}},
            content_type="application/merge-patch+json",
        )
        await _post(kube, PODS, _pod("deleted"))
        await kube.request("DELETE", f"{PODS}/deleted")
        svc = await _post(kube, SERVICES, {"metadata": {"name": "s1"}, "spec": {"ports": [{"port": 80}]}})
        last_rv = int((await kube.request("GET", PODS))["metadata"]["resourceVersion"])

    async with serving(state) as kube:
        await _served(kube, widgets.collection)
        pod = await kube.request("GET", f"{PODS}/kept")
        assert pod["metadata"]["uid"] == kept["metadata"]["uid"]
        assert pod["metadata"]["resourceVersion"] == running["metadata"]["resourceVersion"]
        assert pod["status"]["phase"] == "Running"
        with pytest.raises(ApiError) as gone:
            await kube.request("GET", f"{PODS}/deleted")
        assert gone.value.not_found
        got = await kube.request("GET", widgets.path(name="w1"))
        assert got["metadata"]["uid"] == widget["metadata"]["uid"]
        assert got["metadata"]["generation"] == widget["metadata"]["generation"]

        listed = await kube.request("GET", PODS)
        assert int(listed["metadata"]["resourceVersion"]) > last_rv
        created = await _post(kube, PODS, _pod("after"))
        assert int(created["metadata"]["resourceVersion"]) > last_rv

        events = kube.watch("v1", "Pod", "default", resource_version=str(last_rv), timeout_seconds=5)
        first = await anext(events)
        await events.aclose()
        assert first["type"] == "ERROR"
        assert (first["object"]["code"], first["object"]["reason"]) == (410, "Expired")

        svc2 = await _post(kube, SERVICES, {"metadata": {"name": "s2"}, "spec": {"ports": [{"port": 80}]}})
        assert svc2["spec"]["clusterIP"] != svc["spec"]["clusterIP"]


async def test_writes_of_many_objects_all_come_back(tmp_path: Path) -> None:
    """Batched writes behind the loop: every create of a burst reaches the file by a clean stop."""
    state = tmp_path / "plane.db"
    async with serving(state) as kube:
        await asyncio.gather(*(_post(kube, PODS, _pod(f"p{i}")) for i in range(300)))
    async with serving(state) as kube:
        listed = await kube.request("GET", PODS)
        assert sorted(p["metadata"]["name"] for p in listed["items"]) == sorted(f"p{i}" for i in range(300))


def test_a_state_file_of_another_schema_version_is_refused(tmp_path: Path) -> None:
    state = tmp_path / "plane.db"
    EmbeddedAPIServer(state_file=state)._journal.close()  # type: ignore[union-attr]
    with sqlite3.connect(state) as db:
        db.execute("UPDATE kubetrain_meta SET value='999' WHERE name='schema_version'")
    with pytest.raises(PersistenceError) as exc:
        EmbeddedAPIServer(state_file=state)
    message = str(exc.value)
    assert str(state) in message and "schema version 999" in message and "--reset" in message


def test_a_file_that_is_not_a_state_database_is_refused(tmp_path: Path) -> None:
    state = tmp_path / "plane.db"
    state.write_text("not sqlite at all " * 100)
    with pytest.raises(PersistenceError, match="not a kubetrain state database"):
        EmbeddedAPIServer(state_file=state)


def test_a_state_file_that_cannot_be_opened_says_so(tmp_path: Path) -> None:
    state = tmp_path / "plane.db"
    state.mkdir()  # a directory where the file should be
    with pytest.raises(PersistenceError, match="cannot use the state file") as exc:
        EmbeddedAPIServer(state_file=state)
    assert str(state) in str(exc.value)
