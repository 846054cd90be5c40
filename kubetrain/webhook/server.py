"""The HTTPS admission server: one POST route per kind on upstream's paths, TLS from a directory.

The certificate directory holds `tls.crt` and `tls.key` whoever put them there: a mounted
cert-manager Secret, or `CertProvisioner` for operator-generated certificates. The server watches
the files and reloads them into its TLS context when they change, so a rotated certificate is used
by new connections without a restart (controller-runtime's certwatcher does the same).

`ready` turns true only once a certificate is loaded and the socket listens: it is what `/readyz`
reports, so the Service never routes admission calls to a replica that cannot answer them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path

from aiohttp import web

from kubetrain.api.kinds import KindInfo
from kubetrain.kinds.registration import Lookup
from kubetrain.webhook import review
from kubetrain.webhook.certs import TLS_CERT_KEY, TLS_KEY_KEY
from kubetrain.webhook.handler import admit, routes

log = logging.getLogger(__name__)

DEFAULT_PORT = 9443
DEFAULT_CERT_DIR = Path("/tmp/k8s-webhook-server/serving-certs")
"""controller-runtime's default location, kept so upstream-style volume mounts work unchanged."""
MAX_REQUEST_BYTES = 7 * 1024 * 1024
"""controller-runtime's limit; the API server itself caps objects at about 3 MiB."""


class WebhookServer:
    """Serves AdmissionReview validation for `kinds` over TLS with reloadable certificates."""

    def __init__(
        self,
        cert_dir: Path = DEFAULT_CERT_DIR,
        *,
        host: str | None = None,
        port: int = DEFAULT_PORT,
        kinds: Iterable[KindInfo] | None = None,
        reload_interval: float = 10.0,
        lookup: Lookup | None = None,
    ) -> None:
        self.cert_dir = Path(cert_dir)
        self.host = host or None
        self.requested_port = port
        self.routes = routes(kinds)
        self.lookup = lookup
        """How rules that read other objects (a TrainJob's runtime) find them (None: they check
        what the object holds)."""
        self.reload_interval = reload_interval
        self._ssl: ssl.SSLContext | None = None
        self._stamp: tuple[float, float] | None = None
        self._runner: web.AppRunner | None = None
        self._watcher: asyncio.Task[None] | None = None
        self._port = 0

    # -- HTTP -----------------------------------------------------------------------------------

    def app(self) -> web.Application:
        app = web.Application(client_max_size=MAX_REQUEST_BYTES)
        for path, info in self.routes.items():
            app.router.add_post(path, self._handler(info))
        return app

    def _handler(self, info: KindInfo) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
        async def handle(request: web.Request) -> web.StreamResponse:
            return await self._admit(info, request)

        return handle

    async def _admit(self, info: KindInfo, request: web.Request) -> web.Response:
        api_version = review.ADMISSION_V1
        try:
            body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            too_large = f"request entity is larger than limit of {MAX_REQUEST_BYTES}"
            return _json(review.errored("", 413, too_large))
        try:
            admission, api_version = review.parse_review(body, request.headers.get("Content-Type"))
        except review.MalformedReview as exc:
            log.warning("rejecting malformed admission request on %s: %s", request.path, exc)
            return _json(review.errored("", 400, str(exc)))
        try:
            response = admit(info, admission, self.lookup)
        except Exception:  # a bug of ours must still produce an answer the API server can show
            log.exception("admission of %s %s/%s failed", info.kind, admission.namespace, admission.name)
            response = review.errored(admission.uid, 500, "internal error validating the object")
        if not response.allowed:
            log.info(
                "%s %s %s/%s: %s",
                admission.operation,
                info.kind,
                admission.namespace,
                admission.name,
                response.status.get("message", ""),
            )
        return _json(response, api_version)

    # -- lifecycle ------------------------------------------------------------------------------

    @property
    def ready(self) -> bool:
        """Certificates loaded and the socket listening."""
        return self._ssl is not None and self._runner is not None and self._port != 0

    @property
    def port(self) -> int:
        return self._port

    def has_certificates(self) -> bool:
        return (self.cert_dir / TLS_CERT_KEY).is_file() and (self.cert_dir / TLS_KEY_KEY).is_file()

    async def wait_for_certificates(self, timeout: float | None = None, poll: float = 0.5) -> None:
        """Wait until the directory holds a certificate (a cert-manager mount may lag the pod)."""
        async with asyncio.timeout(timeout):
            while not self.has_certificates():
                await asyncio.sleep(poll)

    async def start(self) -> None:
        """Load the certificates and listen; raises FileNotFoundError if there are none yet."""
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        self._load(context)
        self._ssl = context
        runner = web.AppRunner(self.app(), access_log=None, handle_signals=False, shutdown_timeout=2.0)
        await runner.setup()
        site = web.TCPSite(runner, self.host, self.requested_port, ssl_context=context, backlog=256)
        await site.start()
        self._runner = runner
        sockets = getattr(site._server, "sockets", None) or ()
        self._port = sockets[0].getsockname()[1] if sockets else self.requested_port
        self._watcher = asyncio.create_task(self._watch(), name="kubetrain-webhook-certwatcher")
        log.info("webhook server listening on :%d for %d kinds", self._port, len(self.routes))

    async def stop(self) -> None:
        if self._watcher is not None:
            self._watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watcher
            self._watcher = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        self._port = 0

    async def __aenter__(self) -> WebhookServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # -- certificates ---------------------------------------------------------------------------

    def _files_stamp(self) -> tuple[float, float]:
        return ((self.cert_dir / TLS_CERT_KEY).stat().st_mtime, (self.cert_dir / TLS_KEY_KEY).stat().st_mtime)

    def _load(self, context: ssl.SSLContext) -> None:
        stamp = self._files_stamp()
        context.load_cert_chain(self.cert_dir / TLS_CERT_KEY, self.cert_dir / TLS_KEY_KEY)
        self._stamp = stamp

    def reload_certificates(self) -> bool:
        """Load changed files into the live TLS context; True if it reloaded.

        A half-replaced pair fails to load and is retried at the next check; the old certificate
        keeps serving meanwhile.
        """
        if self._ssl is None:
            return False
        try:
            if self._files_stamp() == self._stamp:
                return False
            self._load(self._ssl)
        except (OSError, ssl.SSLError) as exc:
            log.warning("could not reload webhook certificates from %s: %s", self.cert_dir, exc)
            return False
        log.info("webhook certificates reloaded from %s", self.cert_dir)
        return True

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(self.reload_interval)
            self.reload_certificates()


def _json(response: review.AdmissionResponse, api_version: str = review.ADMISSION_V1) -> web.Response:
    return web.json_response(review.review_body(response, api_version))
