"""`Dashboard`: the web server `kubetrain up`, `run --dashboard` and `kubetrain dashboard` start.

It reads the live state through the client it is given (the plane's, or a kubeconfig's: its
credentials stay on the server side), the history store at `history` if one is there, and local
pods' CPU and memory from `usage`. It listens on 127.0.0.1 only (`guard` says who may ask).
"""

from __future__ import annotations

import asyncio
import errno
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from aiohttp import web

from kubetrain.dashboard import DEFAULT_PORT, HOST
from kubetrain.dashboard.assets import Assets
from kubetrain.dashboard.guard import Guard, add_security_headers
from kubetrain.dashboard.history import HistoryReader
from kubetrain.dashboard.livestate import LiveState
from kubetrain.dashboard.logfeed import LogFeeds
from kubetrain.dashboard.routes import Routes
from kubetrain.dashboard.usage import UsageSource
from kubetrain.kube.tasks import cancel_and_wait

if TYPE_CHECKING:
    from kubetrain.client.aio import AsyncClient


class Dashboard:
    """`url = await dashboard.start(port)` ... `await dashboard.stop()`; the client stays the caller's."""

    def __init__(
        self,
        client: AsyncClient | None,
        *,
        history: Path | None = None,
        usage: UsageSource | None = None,
        namespace: str = "",
        title: str = "kubetrain",
    ) -> None:
        self.client = client
        self.state = LiveState(client.kube.api, namespace=namespace) if client is not None else None
        self.feeds = LogFeeds(client.in_namespace) if client is not None else None
        self.history = HistoryReader(history) if history is not None else None
        self.routes = Routes(Assets(), self.state, self.feeds, self.history, usage, title)
        self._runner: web.AppRunner | None = None
        self.port = 0
        self.fell_back = False
        """The asked port was taken, so the dashboard listens on a free one."""

    async def start(self, port: int = DEFAULT_PORT, *, fallback: bool = True) -> str:
        """Listen on 127.0.0.1:`port` (0: a free one; taken and `fallback`: a free one)."""
        guard = Guard()
        app = web.Application(middlewares=[guard.middleware])
        app.on_response_prepare.append(add_security_headers)
        self.routes.register(app)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=1.0)
        await self._runner.setup()
        try:
            try:
                site = await self._listen(port)
            except OSError as exc:
                if not (fallback and port and exc.errno == errno.EADDRINUSE):
                    raise
                site = await self._listen(0)
                self.fell_back = True
            server = site._server
            assert server is not None and server.sockets  # type: ignore[attr-defined]
            self.port = server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]
            if self.state is not None:
                await self.state.start()
        except BaseException:
            await self.stop()
            raise
        return self.url

    async def _listen(self, port: int) -> web.TCPSite:
        assert self._runner is not None
        site = web.TCPSite(self._runner, HOST, port, reuse_address=True)
        await site.start()
        return site

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/"

    def job_url(self, namespace: str, kind: str, name: str) -> str:
        return self.url + "jobs/" + "/".join(quote(part, safe="") for part in (namespace, kind, name))

    async def stop(self) -> None:
        await cancel_and_wait(set(self.routes.streams))
        if self.feeds is not None:
            await self.feeds.close()
        if self.state is not None:
            await self.state.stop()
        if self._runner is not None:
            await asyncio.wait_for(self._runner.cleanup(), 5.0)
            self._runner = None
