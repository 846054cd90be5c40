"""Fixtures: every conformance test runs against two targets, reached only over HTTP(S).

* ``embedded``: a fresh EmbeddedAPIServer per test (TLS with its own CA, its bearer token);
* ``real``: the kube-apiserver of ``scripts/k8s-control-plane`` (TLS, admin client certificate), found
  through ``KUBETRAIN_CONFORMANCE_KUBECONFIG``. Without it the ``real`` case skips, and fails under
  ``CI=true``. A real server cannot be fresh per test, so every test gets its own namespace
  (``ns``) and unique names for cluster-scoped objects (``unique``), removed at teardown.

``@pytest.mark.embedded_only("why")`` keeps a test on the embedded target (fault injection, the
in-process log provider, the server's test controls). ``@pytest.mark.deliberate_difference("why")``
marks a test of upstream behaviour that the embedded server deliberately does not copy: it must
fail there (strict xfail), and the reason is listed in the README.
"""

from __future__ import annotations

import os
import secrets
import ssl
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from kubernetes_asyncio import client, config

from kubetrain.embedded.apiserver import EmbeddedAPIServer, MemoryLogProvider

from .helpers import CRDS, NS, Http, WidgetKind, eventually, install_widget_crd

KUBECONFIG_ENV = "KUBETRAIN_CONFORMANCE_KUBECONFIG"
IN_CI = os.environ.get("CI") == "true"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "embedded_only(reason): runs against the embedded server only")
    config.addinivalue_line(
        "markers", "deliberate_difference(reason): upstream behaviour the embedded server does not copy"
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "target" in metafunc.fixturenames:
        only = metafunc.definition.get_closest_marker("embedded_only")
        metafunc.parametrize("target", ["embedded"] if only else ["embedded", "real"], indirect=True)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        marker = item.get_closest_marker("deliberate_difference")
        callspec = getattr(item, "callspec", None)
        if marker and callspec is not None and callspec.params.get("target") == "embedded":
            reason = f"deliberate difference: {marker.args[0] if marker.args else ''}"
            item.add_marker(pytest.mark.xfail(strict=True, reason=reason))


@dataclass
class Target:
    """One API server under test: its URL, how to reach it, and its controls when embedded."""

    name: str
    url: str
    kubeconfig: Path
    ssl: ssl.SSLContext | bool = True
    anonymous_ssl: ssl.SSLContext | bool = True
    """TLS without the client certificate: a request that carries no credentials."""
    headers: dict[str, str] = field(default_factory=dict)
    """What authenticates a request besides TLS: the embedded server's bearer token."""
    server: EmbeddedAPIServer | None = None
    cleanups: list[str] = field(default_factory=list)

    @property
    def real(self) -> bool:
        return self.name == "real"


@pytest.fixture(scope="session")
def real_kubeconfig() -> Path:
    path = os.environ.get(KUBECONFIG_ENV, "")
    if not path:
        msg = f"{KUBECONFIG_ENV} is unset: run scripts/k8s-control-plane up DIR and export DIR/kubeconfig"
        if IN_CI:
            pytest.fail(msg)
        pytest.skip(msg)
    if not Path(path).is_file():
        pytest.fail(f"{KUBECONFIG_ENV}={path}: no such file")
    return Path(path)


async def _ssl_contexts(kubeconfig: Path) -> tuple[str, ssl.SSLContext, ssl.SSLContext]:
    """The server URL, a TLS context with the kubeconfig's CA and client certificate, and one
    with the CA only."""
    cfg = client.Configuration()
    await config.load_kube_config(config_file=str(kubeconfig), client_configuration=cfg)
    ctx = ssl.create_default_context(cafile=cfg.ssl_ca_cert)
    if cfg.cert_file:
        ctx.load_cert_chain(cfg.cert_file, cfg.key_file)
    return cfg.host, ctx, ssl.create_default_context(cafile=cfg.ssl_ca_cert)


@pytest.fixture
async def target(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Target]:
    if request.param == "embedded":
        srv = EmbeddedAPIServer(bookmark_interval=0.2, log_provider=MemoryLogProvider(poll_interval=0.01))
        await srv.start()
        try:
            kubeconfig = srv.write_kubeconfig(tmp_path / "admin.kubeconfig")
            auth = {"Authorization": f"Bearer {srv.token}"}
            ctx = srv.client_ssl_context()
            yield Target("embedded", srv.url, kubeconfig, ctx, ctx, auth, srv)
        finally:
            await srv.stop()
        return
    kubeconfig = request.getfixturevalue("real_kubeconfig")
    url, ctx, anonymous = await _ssl_contexts(kubeconfig)
    tgt = Target("real", url, kubeconfig, ctx, anonymous)
    yield tgt


@pytest.fixture
def server(target: Target) -> EmbeddedAPIServer:
    """The embedded server's own controls; only for tests marked ``embedded_only``."""
    assert target.server is not None, "a test using `server` must be marked embedded_only"
    return target.server


@pytest.fixture
def real(target: Target) -> bool:
    return target.real


@pytest.fixture
async def http(target: Target) -> AsyncIterator[Http]:
    connector = aiohttp.TCPConnector(ssl=target.ssl)
    async with aiohttp.ClientSession(connector=connector, headers=target.headers) as session:
        h = Http(target.url, session)
        yield h
        for path in reversed(target.cleanups):  # cluster-scoped objects the test registered
            await h.delete(path)


@pytest.fixture
async def anonymous_http(target: Target) -> AsyncIterator[Http]:
    """Raw HTTP with no credentials at all (no token, no client certificate)."""
    connector = aiohttp.TCPConnector(ssl=target.anonymous_ssl)
    async with aiohttp.ClientSession(connector=connector) as session:
        yield Http(target.url, session)


@pytest.fixture
def suffix() -> str:
    return secrets.token_hex(4)


@pytest.fixture
def unique(suffix: str, target: Target) -> Callable[..., str]:
    """``unique("n1")`` -> ``n1-<suffix>``; ``unique("n1", cleanup=PATH)`` deletes PATH/name after."""

    def make(name: str, cleanup: str | None = None) -> str:
        full = f"{name}-{suffix}"
        if cleanup is not None:
            target.cleanups.append(f"{cleanup}/{full}")
        return full

    return make


@pytest.fixture
async def ns(http: Http, target: Target, suffix: str) -> AsyncIterator[NS]:
    """A namespace of this test's own; on a real server it has its ServiceAccount before use."""
    name = f"kt-{suffix}"
    status, body, _ = await http.post("/api/v1/namespaces", {"metadata": {"name": name}})
    assert status == 201, body
    if target.real:  # the ServiceAccount admission plugin rejects pods until `default` exists

        async def has_sa() -> bool:
            s, _, _ = await http.get(f"/api/v1/namespaces/{name}/serviceaccounts/default")
            return s == 200

        await eventually(has_sa, timeout=30)
    yield NS(name)
    target.cleanups.insert(0, f"/api/v1/namespaces/{name}")


@pytest.fixture
def cleanup(target: Target) -> Callable[[str], None]:
    """Register a path to DELETE after the test (cluster-scoped objects: CRDs, nodes, namespaces)."""
    return target.cleanups.append


@pytest.fixture
def widget_kind(ns: NS, suffix: str, cleanup: Callable[[str], None]) -> WidgetKind:
    """The Widget kind in a group of this test's own (not installed); its CRD is removed after."""
    kind = WidgetKind(f"t{suffix}.example.com", ns.name)
    cleanup(f"{CRDS}/{kind.crd_name}")
    return kind


@pytest.fixture
async def widgets(http: Http, widget_kind: WidgetKind) -> WidgetKind:
    """The Widget CRD, installed and served."""
    await install_widget_crd(http, widget_kind)
    return widget_kind


@pytest.fixture
def kubeconfig(target: Target, ns: NS, tmp_path: Path) -> Path:
    """A kubeconfig for the target whose context's namespace is the test's namespace."""
    cfg: dict[str, Any] = yaml.safe_load(target.kubeconfig.read_text())
    current = cfg["current-context"]
    for ctx in cfg["contexts"]:
        if ctx["name"] == current:
            ctx["context"]["namespace"] = ns.name
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(cfg))
    path.chmod(0o600)
    return path


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
