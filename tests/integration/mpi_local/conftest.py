"""Fixtures: the embedded API server, a node agent, the binder and the batch/v1 Job controller.

The MPI tests need OpenMPI (Debian ``openmpi-bin`` + ``libopenmpi-dev``) and ``mpi4py``; without
them they skip on a developer machine and fail under ``CI=true`` (a missing dependency in CI is
an error, never a silent skip).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from kubetrain.embedded.apiserver import EmbeddedAPIServer
from kubetrain.embedded.jobcontroller import JobController
from kubetrain.embedded.node import KubeAPI, NodeAgent, NodeConfig
from kubetrain.embedded.scheduler import Binder
from kubetrain.kube.client import core_path, group_path
from tests.polling import wait_for

JsonDict = dict[str, Any]
PY = sys.executable


def require_openmpi() -> None:
    missing = [
        what
        for what, ok in (
            ("mpirun (apt-get install openmpi-bin libopenmpi-dev)", shutil.which("mpirun") is not None),
            ("mpi4py (pip install mpi4py)", importlib.util.find_spec("mpi4py") is not None),
        )
        if not ok
    ]
    if not missing:
        return
    message = "OpenMPI tests need " + ", ".join(missing)
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture
async def server() -> AsyncIterator[EmbeddedAPIServer]:
    srv = EmbeddedAPIServer()
    await srv.start(port=0)
    yield srv
    await srv.stop()


@pytest.fixture
async def api(server: EmbeddedAPIServer) -> AsyncIterator[KubeAPI]:
    client = KubeAPI.for_url(server.url, token=server.token, ssl_context=server.client_ssl_context())
    yield client
    await client.close()


@pytest.fixture
async def plane(server: EmbeddedAPIServer, api: KubeAPI, tmp_path: Path) -> AsyncIterator[NodeAgent]:
    """Node agent + binder + Job controller: pods without nodeName get scheduled and run."""
    agent = NodeAgent(
        api,
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
    binder = Binder(api, resync_interval=0.5)
    await binder.start()
    jobs = JobController(api, backoff_base=0.1, backoff_cap=0.2)
    await jobs.start()
    yield agent
    await jobs.stop()
    await binder.stop()
    await agent.stop()


async def create(api: KubeAPI, obj: JsonDict, namespace: str = "default") -> JsonDict:
    if obj["kind"] == "Job":
        return await api.create(group_path("batch", "v1", "jobs", namespace), obj)
    plural = {"Pod": "pods", "Service": "services", "ConfigMap": "configmaps", "Secret": "secrets"}
    return await api.create(core_path(plural[obj["kind"]], namespace), obj)


async def get_job(api: KubeAPI, name: str, namespace: str = "default") -> JsonDict | None:
    return await api.get_or_none(group_path("batch", "v1", "jobs", namespace, name))


async def job_condition(
    api: KubeAPI, name: str, kind: str, timeout: float = 60.0, also: tuple[str, ...] = ()
) -> JsonDict:
    """The Job once its `kind` condition is True; on timeout the failure tells the story of its
    pods and of the pods `also` names."""

    async def check() -> JsonDict | None:
        job = await get_job(api, name)
        for cond in ((job or {}).get("status") or {}).get("conditions") or []:
            if cond.get("type") == kind and cond.get("status") == "True":
                return job
        return None

    try:
        result: JsonDict = await wait_for(check, timeout, f"job {name} condition {kind}")
    except AssertionError as err:
        pods = [p["metadata"]["name"] for p in await job_pods(api, name)]
        stories = [await pod_story(api, pod) for pod in (*pods, *also)]
        raise AssertionError("\n".join([str(err), *stories])) from None
    return result


async def job_pods(api: KubeAPI, name: str, namespace: str = "default") -> list[JsonDict]:
    items, _ = await api.list(
        core_path("pods", namespace), {"labelSelector": f"batch.kubernetes.io/job-name={name}"}
    )
    return items


async def pod_story(api: KubeAPI, name: str, namespace: str = "default") -> str:
    """The pod's phase, each container's state and the tail of its log: what a reader of a timed-out
    run needs to see where it hung (mpirun, an exec session, the init container...)."""
    pod = await api.get_or_none(core_path("pods", namespace, name))
    if pod is None:
        return f"pod {name}: not found"
    status = pod.get("status") or {}
    lines = [f"pod {name}: {status.get('phase')}"]
    for cs in [*(status.get("initContainerStatuses") or ()), *(status.get("containerStatuses") or ())]:
        lines.append(f"  {cs.get('name')}: {cs.get('state')}")
        async with api.session.get(
            f"{api.base_url}{core_path('pods', namespace, name, 'log')}", params={"container": cs["name"]}
        ) as r:
            lines.extend(f"    | {line}" for line in (await r.text()).splitlines()[-40:])
    return "\n".join(lines)


async def pod_finished(api: KubeAPI, name: str, timeout: float, also: tuple[str, ...] = ()) -> JsonDict:
    """The pod once Succeeded or Failed; on timeout the failure tells the story of it and of `also`."""

    async def finished() -> JsonDict | None:
        pod = await api.get_or_none(core_path("pods", "default", name))
        return pod if (pod or {}).get("status", {}).get("phase") in ("Succeeded", "Failed") else None

    try:
        result: JsonDict = await wait_for(finished, timeout, f"pod {name} to finish")
    except AssertionError as err:
        stories = [await pod_story(api, pod) for pod in (name, *also)]
        raise AssertionError("\n".join([str(err), *stories])) from None
    return result


async def read_log(api: KubeAPI, name: str, namespace: str = "default", **params: str) -> str:
    async with api.session.get(
        f"{api.base_url}{core_path('pods', namespace, name, 'log')}", params=params
    ) as r:
        text = await r.text()
        assert r.status == 200, text
        return text
