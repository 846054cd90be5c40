"""Embedding API: the background-thread server for sync users, kubeconfig, loopback only."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest
import yaml

from kubetrain.embedded.apiserver import EmbeddedAPIServer, ServerThread


def test_server_thread_serves_sync_clients(tmp_path: Path) -> None:
    with ServerThread(pod_deletion="immediate") as srv:
        request = urllib.request.Request(
            srv.url + "/api/v1/namespaces", headers={"Authorization": f"Bearer {srv.token}"}
        )
        with urllib.request.urlopen(request, context=srv.server.client_ssl_context()) as resp:
            body = json.load(resp)
        assert {n["metadata"]["name"] for n in body["items"]} >= {"default", "kube-system"}
        path = srv.server.write_kubeconfig(tmp_path / "kc", context="ctx", namespace="team")
        cfg = yaml.safe_load(path.read_text())
        assert cfg["current-context"] == "ctx"
        assert cfg["clusters"][0]["cluster"]["server"] == srv.url
        assert cfg["contexts"][0]["context"]["namespace"] == "team"
        assert path.stat().st_mode & 0o777 == 0o600
        rv = srv.call(srv.server.compact)
        assert rv >= 4


async def test_refuses_non_loopback_hosts() -> None:
    with pytest.raises(ValueError, match="loopback only"):
        await EmbeddedAPIServer().start(host="0.0.0.0")


async def test_url_before_start_is_an_error() -> None:
    with pytest.raises(RuntimeError):
        _ = EmbeddedAPIServer().url


async def test_async_context_manager() -> None:
    async with EmbeddedAPIServer() as srv:
        assert srv.url.startswith("https://127.0.0.1:")
        assert srv.port > 0
