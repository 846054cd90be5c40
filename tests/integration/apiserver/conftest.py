"""Fixtures: a fresh embedded API server per test, reached only over HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from kubernetes_asyncio import client, config

from kubetrain.embedded.apiserver import EmbeddedAPIServer, MemoryLogProvider

from .helpers import Http


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[EmbeddedAPIServer]:
    srv = EmbeddedAPIServer(bookmark_interval=0.2, log_provider=MemoryLogProvider(poll_interval=0.01))
    await srv.start()
    try:
        yield srv
    finally:
        await srv.stop()


@pytest.fixture
def kubeconfig(server: EmbeddedAPIServer, tmp_path: Path) -> Path:
    return server.write_kubeconfig(tmp_path / "kubeconfig")


@pytest.fixture
async def api(kubeconfig: Path) -> AsyncIterator[client.ApiClient]:
    cfg = client.Configuration()
    await config.load_kube_config(config_file=str(kubeconfig), client_configuration=cfg)
    async with client.ApiClient(configuration=cfg) as api_client:
        yield api_client


@pytest.fixture
def core(api: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(api)


@pytest.fixture
def custom(api: client.ApiClient) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api)


@pytest.fixture
async def http(server: EmbeddedAPIServer) -> AsyncIterator[Http]:
    async with aiohttp.ClientSession() as session:
        yield Http(server.url, session)
