"""Fixtures: the real embedded API server over HTTP, a node agent, and helpers to drive pods."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from kubetrain.embedded.apiserver import EmbeddedAPIServer
from kubetrain.embedded.node import KubeAPI, NodeAgent, NodeConfig
from kubetrain.kube.client import core_path
from tests.polling import wait_for

PY = sys.executable
JsonDict = dict[str, Any]


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


def fast_config(tmp_path: Path, **overrides: Any) -> NodeConfig:
    cfg = NodeConfig(
        root_dir=tmp_path / "node",
        backoff_base=0.2,
        backoff_cap=0.4,
        retry_interval=0.2,
        heartbeat_interval=0.5,
        shutdown_grace=2.0,
        working_dir=tmp_path,
    )
    for key, value in overrides.items():
        setattr(cfg, key, value)
    return cfg


@pytest.fixture
async def agent(server: EmbeddedAPIServer, api: KubeAPI, tmp_path: Path) -> AsyncIterator[NodeAgent]:
    node = NodeAgent(api, fast_config(tmp_path))
    await node.start()
    server.log_provider = node.log_provider
    yield node
    await node.stop()


async def make_agent(server: EmbeddedAPIServer, api: KubeAPI, tmp_path: Path, **overrides: Any) -> NodeAgent:
    node = NodeAgent(api, fast_config(tmp_path, **overrides))
    await node.start()
    server.log_provider = node.log_provider
    return node


def pod(name: str, *containers: JsonDict, node: str | None = "kubetrain-local", **spec: Any) -> JsonDict:
    body: JsonDict = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": list(containers), **spec},
    }
    if node:
        body["spec"]["nodeName"] = node
    return body


def container(name: str, code: str, **extra: Any) -> JsonDict:
    return {"name": name, "image": "python:3.11", "command": [PY, "-c", code], **extra}


async def create(api: KubeAPI, obj: JsonDict, namespace: str = "default") -> JsonDict:
    plural = {"Pod": "pods", "Service": "services", "ConfigMap": "configmaps", "Secret": "secrets"}[
        obj["kind"]
    ]
    return await api.create(core_path(plural, namespace), obj)


async def get_pod(api: KubeAPI, name: str, namespace: str = "default") -> JsonDict | None:
    return await api.get_or_none(core_path("pods", namespace, name))


async def wait_phase(api: KubeAPI, name: str, *phases: str, timeout: float = 15.0) -> JsonDict:
    async def check() -> JsonDict | None:
        p = await get_pod(api, name)
        return p if p and (p.get("status") or {}).get("phase") in phases else None

    result: JsonDict = await wait_for(check, timeout, f"pod {name} phase in {phases}")
    return result


async def read_log(api: KubeAPI, name: str, **params: str) -> str:
    async with api.session.get(
        f"{api.base_url}{core_path('pods', 'default', name, 'log')}", params=params
    ) as r:
        text = await r.text()
        assert r.status == 200, text
        return text
