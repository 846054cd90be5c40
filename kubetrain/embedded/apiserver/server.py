"""The embedded API server: wiring, lifecycle, and the controls tests and embedders use."""

from __future__ import annotations

import asyncio
import ipaddress
import os
import secrets
import shutil
import ssl
import tempfile
import threading
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from aiohttp import web

from kubetrain.kube.tasks import cancel_and_wait

from . import errors, fieldvalidation, mediatypes
from .access import AccessControl
from .admission import AdmissionPlugin
from .crd import CRDController
from .faults import FaultInjector
from .gc import ControllerManager
from .handlers import APIHandler
from .kubeconfig import write_kubeconfig
from .logs import LogProvider
from .openapi import OpenAPIService, builtin_data
from .openapi_http import OpenAPIHandlers
from .persistence import Journal
from .resources import NAMESPACE_KEY, ResourceCatalog
from .rest import Converter, ObjectStorage, PodDeletion
from .serviceaccounts import TokenIssuer
from .store import Store
from .tls import ServingTLS, make_serving_tls

T = TypeVar("T")

INITIAL_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


def _check_loopback(host: str) -> None:
    if host == "localhost":
        return
    try:
        if ipaddress.ip_address(host).is_loopback:
            return
    except ValueError:
        pass
    raise ValueError(
        f"the embedded API server has a self-signed certificate and one bearer token for all "
        f"clients: it listens on loopback only, not {host!r}"
    )


class EmbeddedAPIServer:
    """An in-memory, Kubernetes-compatible API server on one asyncio event loop.

    ``pod_deletion`` decides what DELETE does to a pod bound to a node: ``"immediate"`` removes it
    at once; ``"graceful"`` keeps it with a deletionTimestamp until a node agent confirms with
    gracePeriodSeconds=0; ``"auto"`` (default) is graceful only when the pod's Node object exists,
    i.e. a node agent has registered. Unbound and finished pods are always removed at once.

    ``admission`` plugins validate every CREATE and UPDATE before it is stored, the way validating
    webhooks do on a cluster (see ``admission``); ``server.rest.admission.add()`` adds one later.

    ``state_file`` keeps every object in that SQLite file (see ``persistence``): a server made
    with the same file later starts with them, resourceVersions continuing above the old ones.

    It serves HTTPS with a CA of its own (``tls``; ``plain_http`` adds `plain_url` for in-process
    clients), and every request needs
    ``Authorization: Bearer <server.token>`` (``access``): a fresh random token and CA per server,
    which ``write_kubeconfig`` writes into the kubeconfig; in-process clients take ``token`` and
    ``ca_file`` (or ``client_ssl_context()``) from this object.
    """

    def __init__(
        self,
        *,
        pod_deletion: PodDeletion = "auto",
        bookmark_interval: float = 60.0,
        history_size: int = 100_000,
        watch_queue_size: int = 10_000,
        log_provider: LogProvider | None = None,
        converters: dict[str, Converter] | None = None,
        admission: list[AdmissionPlugin] | None = None,
        state_file: Path | None = None,
        plain_http: bool = False,
        service_accounts: bool = True,
    ) -> None:
        self.store = Store(history_size)
        self.catalog = ResourceCatalog()
        self.rest = ObjectStorage(self.store, self.catalog, pod_deletion, converters)
        self._crds = CRDController(self.store, self.catalog)
        self.openapi = OpenAPIService(self.catalog)
        self._controllers = ControllerManager(self.rest)
        self._service_accounts = service_accounts
        self.tokens = TokenIssuer(self.store.get) if service_accounts else None
        self.rest.service_accounts = service_accounts
        self.hub = self._make_hub(bookmark_interval, watch_queue_size)
        self.faults = FaultInjector()
        self.log_provider = log_provider
        self._runner: web.AppRunner | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._host = "127.0.0.1"
        self._port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self.token = secrets.token_urlsafe(32)
        self._tls: ServingTLS | None = None
        self._ca_dir: Path | None = None
        self._plain_http = plain_http
        self._plain_port = 0
        self._journal: Journal | None = None
        if state_file is not None:
            self._journal = Journal(state_file)
            snapshot = self._journal.load()
            self.store.restore(snapshot.objects, snapshot.resource_version)
            self.rest.restored()
            self.store.persist_to(self._journal)
        ns_type = self.catalog.storage_type(NAMESPACE_KEY)
        assert ns_type is not None
        for name in INITIAL_NAMESPACES:
            if self.store.get(NAMESPACE_KEY, "", name) is None:
                self.rest.create(ns_type, "", {"metadata": {"name": name}})
        self.store.open_window()
        for plugin in admission or ():
            self.rest.admission.add(plugin)

    def _make_hub(self, interval: float, queue: int) -> Any:
        from .watch import WatchHub

        return WatchHub(self.store, interval, queue)

    # --- lifecycle -----------------------------------------------------------------------

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Listen on ``host:port`` (0 picks a free port) and start the built-in controllers."""
        _check_loopback(host)
        self._tls = make_serving_tls(host)
        self._ca_dir = Path(tempfile.mkdtemp(prefix="kubetrain-apiserver-"))
        (self._ca_dir / "ca.crt").write_bytes(self._tls.ca_pem)
        handler = APIHandler(
            self.rest,
            self.hub,
            self.faults,
            lambda: self.log_provider,
            lambda: f"{self._host}:{self._port}",
            self.tokens,
        )
        access = AccessControl(self.token, host, self.tokens)
        app = web.Application(
            client_max_size=64 * 1024 * 1024,
            middlewares=[access.middleware, mediatypes.middleware, fieldvalidation.middleware],
        )
        OpenAPIHandlers(self.openapi).register(app)
        app.router.add_route("*", "/{tail:.*}", handler.handle)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port, backlog=1024, ssl_context=self._tls.context)
        await site.start()
        server = site._server
        assert server is not None and server.sockets  # type: ignore[attr-defined]
        self._host, self._port = host, server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]
        if self._plain_http:
            plain = web.TCPSite(self._runner, host, 0, backlog=1024)
            await plain.start()
            self._plain_port = plain._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self._loop = asyncio.get_running_loop()
        if self._service_accounts:
            self._controllers.publish_root_ca(self._tls.ca_pem.decode())
        # The OpenAPI schemas field validation needs: decompressed off the loop, not on a first write.
        self._loop.run_in_executor(None, builtin_data)
        self._tasks = [
            asyncio.create_task(self._controllers.run(), name="kubetrain-apiserver-controllers"),
            asyncio.create_task(self.hub.run_bookmarks(), name="kubetrain-apiserver-bookmarks"),
        ]
        return self.url

    async def stop(self) -> None:
        """Close watches, stop the controllers and the listener."""
        self.hub.break_all()
        await cancel_and_wait(self._tasks)
        self._tasks = []
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._ca_dir is not None:
            shutil.rmtree(self._ca_dir, ignore_errors=True)
            self._ca_dir = None
        if self._journal is not None:
            await asyncio.to_thread(self._journal.close)  # commits what is still pending
            self._journal = None

    async def __aenter__(self) -> EmbeddedAPIServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @property
    def url(self) -> str:
        if not self._port:
            raise RuntimeError("the server is not started")
        host = f"[{self._host}]" if ":" in self._host else self._host
        return f"https://{host}:{self._port}"

    @property
    def port(self) -> int:
        return self._port

    @property
    def plain_url(self) -> str:
        """With ``plain_http``: a second, plain-HTTP listener on the same loopback address, with
        the same checks and token, for clients in this process. TLS costs the one-loop server ~40%
        of its create rate, and what TLS adds on loopback (privacy of the token) is kept from other
        users anyway: only root can read loopback traffic, and root can read the kubeconfig."""
        if not self._plain_port:
            raise RuntimeError("the server is not started with plain_http")
        host = f"[{self._host}]" if ":" in self._host else self._host
        return f"http://{host}:{self._plain_port}"

    @property
    def ca_pem(self) -> bytes:
        """The PEM of the CA that signed the serving certificate (what clients trust)."""
        if self._tls is None:
            raise RuntimeError("the server is not started")
        return self._tls.ca_pem

    @property
    def ca_file(self) -> str:
        """``ca_pem`` as a file, for clients configured by path (kubernetes_asyncio); removed at stop."""
        if self._ca_dir is None:
            raise RuntimeError("the server is not started")
        return str(self._ca_dir / "ca.crt")

    def client_ssl_context(self) -> ssl.SSLContext:
        """A TLS context for clients of this server (aiohttp and the like)."""
        if self._tls is None:
            raise RuntimeError("the server is not started")
        return self._tls.client_context()

    def write_kubeconfig(
        self, path: str | os.PathLike[str], context: str = "kubetrain", namespace: str = "default"
    ) -> Path:
        return write_kubeconfig(path, self.url, self.token, self.ca_pem, context, namespace)

    # --- controls for tests (call on the server's loop; ServerThread.call does that) ------

    @property
    def bookmark_interval(self) -> float:
        return float(self.hub.bookmark_interval)

    @bookmark_interval.setter
    def bookmark_interval(self, seconds: float) -> None:
        self.hub.bookmark_interval = seconds

    def compact(self) -> int:
        """Drop all watch history: a watch from any older resourceVersion now gets 410 Gone."""
        return self.store.compact()

    def break_watches(self, gone: bool = False) -> int:
        """Close every open watch; with ``gone`` each first receives a 410 Expired ERROR event."""
        rv = self.store.resource_version
        err = errors.expired(f"too old resource version: {rv} ({rv})") if gone else None
        return self.hub.break_all(err)

    def inject_fault(
        self,
        verb: str,
        resource: str,
        code: int,
        count: int = 1,
        retry_after: int = 1,
        namespace: str | None = None,
    ) -> None:
        """Make the next ``count`` (verb, resource) requests fail with 409, 429, 500 or 503."""
        self.faults.inject(verb, resource, code, count, retry_after, namespace)


class ServerThread:
    """Runs an EmbeddedAPIServer on its own event loop in a daemon thread, for sync users.

    >>> with ServerThread() as srv:
    ...     srv.server.write_kubeconfig("/tmp/kubeconfig")
    """

    def __init__(
        self,
        server: EmbeddedAPIServer | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        **server_kwargs: Any,
    ) -> None:
        self._server = server
        self._server_kwargs = server_kwargs
        self._host, self._port = host, port
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="kubetrain-apiserver", daemon=True)
        self._ready: Future[str] = Future()

    @property
    def server(self) -> EmbeddedAPIServer:
        if self._server is None:
            raise RuntimeError("the server thread is not started")
        return self._server

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def token(self) -> str:
        return self.server.token

    @property
    def ca_file(self) -> str:
        return self.server.ca_file

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)

        async def boot() -> str:
            if self._server is None:
                self._server = EmbeddedAPIServer(**self._server_kwargs)
            return await self._server.start(self._host, self._port)

        try:
            self._ready.set_result(self._loop.run_until_complete(boot()))
        except BaseException as exc:
            self._ready.set_exception(exc)
            return
        self._loop.run_forever()
        self._loop.run_until_complete(self.server.stop())
        self._loop.close()

    def start(self, timeout: float = 10.0) -> str:
        self._thread.start()
        return self._ready.result(timeout)

    def stop(self, timeout: float = 10.0) -> None:
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout)

    def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run ``fn`` on the server's loop (where all server state lives) and return its result."""

        async def run() -> T:
            return fn(*args, **kwargs)

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(30)

    def __enter__(self) -> ServerThread:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
