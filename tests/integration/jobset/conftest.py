"""Fixtures: a plane that runs JobSets as real local processes, in two variants (`api`'s params):

* ``embedded``: the embedded API server with the JobSet CRD, a node agent, the binder, the batch/v1
  Job controller and kubetrain's JobSet controller;
* ``upstream``: a real control plane (kube-controller-manager's Job controller), `kubetrain node`
  and upstream's JobSet controller with its webhooks (`upstream_plane`), opted in with
  ``KUBETRAIN_JOBSET_UPSTREAM=1`` (one plane for the session), so the same tests check that ours
  behaves as upstream's.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from kubetrain.embedded.apiserver import EmbeddedAPIServer
from kubetrain.embedded.jobcontroller import JobController
from kubetrain.embedded.jobset import JobSetController, jobset_admission, jobset_crd
from kubetrain.embedded.jobset.controller import jobsets_path
from kubetrain.embedded.node import KubeAPI, NodeAgent, NodeConfig
from kubetrain.embedded.scheduler import Binder
from kubetrain.kube.client import core_path, group_path
from tests.polling import wait_for

from .upstream_plane import OPT_IN, UpstreamJobSetPlane, upstream_plane, wanted

JsonDict = dict[str, Any]


@pytest.fixture(scope="session")
def upstream_jobset(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UpstreamJobSetPlane]:
    if not wanted():
        pytest.skip(f"upstream's JobSet controller runs with {OPT_IN}=1")
    with upstream_plane(tmp_path_factory.mktemp("upstream-jobset")) as plane:
        yield plane


@pytest.fixture(params=["embedded", "upstream"])
async def api(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[KubeAPI]:
    """A client of a plane that runs JobSets."""
    if request.param == "upstream":
        plane: UpstreamJobSetPlane = request.getfixturevalue("upstream_jobset")
        client = await KubeAPI.from_kubeconfig(str(plane.kubeconfig))
        try:
            yield client
        finally:
            items, _ = await client.list(jobsets_path("default"))
            for js in items:
                await client.delete(jobsets_path("default", js["metadata"]["name"]))
            await client.close()
        return
    async for client in _embedded(tmp_path):
        yield client


async def _embedded(tmp_path: Path) -> AsyncIterator[KubeAPI]:
    """Server, CRD, node, binder, both controllers."""
    server = EmbeddedAPIServer(admission=[jobset_admission])
    await server.start(port=0)
    client = KubeAPI.for_url(server.url, token=server.token, ssl_context=server.client_ssl_context())
    await client.create("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", jobset_crd())
    await wait_for(lambda: _served(client), 10, "the JobSet CRD to be served")
    agent = NodeAgent(
        client,
        NodeConfig(
            root_dir=tmp_path / "node",
            backoff_base=0.2,
            backoff_cap=0.4,
            retry_interval=0.2,
            heartbeat_interval=0.5,
            shutdown_grace=2.0,
            working_dir=tmp_path,
        ),
    )
    await agent.start()
    server.log_provider = agent.log_provider
    binder = Binder(client, resync_interval=0.5)
    jobs = JobController(client, backoff_base=0.1, backoff_cap=0.2)
    jobsets = JobSetController(client)
    for part in (binder, jobs, jobsets):
        await part.start()
    try:
        yield client
    finally:
        await jobsets.stop()
        await jobs.stop()
        await binder.stop()
        await agent.stop()
        await client.close()
        await server.stop()


async def _served(client: KubeAPI) -> bool:
    try:
        await client.list(jobsets_path("default"))
    except Exception:
        return False
    return True


async def create_jobset(api: KubeAPI, js: JsonDict) -> JsonDict:
    namespace = js["metadata"].get("namespace") or "default"
    js["metadata"].pop("uid", None)
    return await api.create(jobsets_path(namespace), js)


async def get_jobset(api: KubeAPI, name: str, namespace: str = "default") -> JsonDict | None:
    return await api.get_or_none(jobsets_path(namespace, name))


async def jobset_condition(api: KubeAPI, name: str, kind: str, timeout: float = 90.0) -> JsonDict:
    async def check() -> JsonDict | None:
        js = await get_jobset(api, name)
        for cond in ((js or {}).get("status") or {}).get("conditions") or []:
            if cond.get("type") == kind and cond.get("status") == "True":
                return js
        return None

    found: JsonDict = await wait_for(check, timeout, f"jobset {name} condition {kind}")
    return found


async def list_jobs(api: KubeAPI, selector: str = "", namespace: str = "default") -> list[JsonDict]:
    items, _ = await api.list(group_path("batch", "v1", "jobs", namespace), {"labelSelector": selector})
    return items


async def list_pods(api: KubeAPI, selector: str = "", namespace: str = "default") -> list[JsonDict]:
    items, _ = await api.list(core_path("pods", namespace), {"labelSelector": selector})
    return items


async def read_log(api: KubeAPI, name: str, namespace: str = "default") -> str:
    async with api.session.get(f"{api.base_url}{core_path('pods', namespace, name, 'log')}") as resp:
        text = await resp.text()
        assert resp.status == 200, text
        return text


async def events_of(api: KubeAPI, name: str, namespace: str = "default") -> list[tuple[str, str, str]]:
    items, _ = await api.list(
        core_path("events", namespace),
        {"fieldSelector": f"involvedObject.kind=JobSet,involvedObject.name={name}"},
    )
    return [(e["type"], e["reason"], e["message"]) for e in items]
