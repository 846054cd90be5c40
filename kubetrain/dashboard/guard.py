"""Who may read the dashboard: this machine's browser, through its own pages, and nothing else.

The dashboard listens on 127.0.0.1 only, needs no credential (it holds the API's, never shows
it), and is read-only. Who could ask, and the answer:

* **Another user of the machine** (loopback is everyone's): a connection whose client socket
  another uid owns gets 403 (`peers`: the socket's owner from /proc/net/tcp; Linux only).

What a web page of another site could try:

* **DNS rebinding** (the page's own hostname resolved to 127.0.0.1, so the browser lets it read
  the answers): its requests name that hostname in ``Host``: 403 unless ``Host`` is loopback
  (`kubetrain.kube.loopback`, the embedded API server's check).
* **Cross-origin requests** (fetch, EventSource, a form): a browser sends ``Origin``; 403 unless
  it is this server's own origin (the scheme, loopback host and port the request was sent to).
  A subresource load of another origin without ``Origin`` (``<script src>``) carries
  ``Sec-Fetch-Site: cross-site`` or ``same-site``: the API and the assets refuse that too (pages
  may be opened from a link).
* **Writes**: there is nothing to write; every method but GET and HEAD is 405.
* **Reading the answers anyway, framing**: no CORS header is ever sent, ``Cross-Origin-Resource-
  Policy: same-origin``, a Content-Security-Policy that allows only this server's own scripts,
  styles and connections and no framing.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

from aiohttp import web

from kubetrain.dashboard.peers import owner, proc_available
from kubetrain.kube.loopback import LoopbackNames, split_authority

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

READ_METHODS = frozenset({"GET", "HEAD"})
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cache-Control": "no-store",
}
PAGE_PREFIXES = ("/api/", "/static/")
"""Paths only the dashboard's own pages load (refused when another site's page asks for them)."""
OWN_FETCHES = frozenset({"", "same-origin", "none"})
"""``Sec-Fetch-Site`` of a request from the dashboard's pages, a typed URL, or no browser."""


def _authority(scheme: str, netloc: str) -> tuple[str, str] | None:
    parts = split_authority(netloc)
    if parts is None:
        return None
    host, port = parts
    return host, port or ("443" if scheme == "https" else "80")


def same_origin(origin: str, host: str | None, scheme: str) -> bool:
    """Whether ``Origin`` is the origin the request was sent to (its Host and scheme)."""
    parts = urlsplit(origin.strip())
    if host is None or parts.scheme != scheme:
        return False
    mine = _authority(scheme, host)
    return mine is not None and _authority(parts.scheme, parts.netloc) == mine


class Guard:
    """Serves the user of this process only (where the kernel tells a client's user)."""

    def __init__(self) -> None:
        self._loopback = LoopbackNames()
        self.uid = os.getuid() if proc_available() else None
        self._verdicts: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()
        """Per connection: its client's user is ours (asked once, at its first request)."""

    def same_user(self, request: web.Request) -> bool:
        if self.uid is None:
            return True
        transport = request.transport
        if transport is None:
            return False
        verdict = self._verdicts.get(transport)
        if verdict is None:
            peer, ours = transport.get_extra_info("peername"), transport.get_extra_info("sockname")
            verdict = bool(peer and ours) and owner(peer[:2], ours[:2]) == self.uid
            self._verdicts[transport] = verdict
        return verdict

    def refusal(self, request: web.Request) -> web.Response | None:
        if not self.same_user(request):
            return _refuse(
                403,
                "the kubetrain dashboard serves the user who started it only (this connection is another "
                "user's)",
            )
        host = request.headers.get("Host")
        if not self._loopback.host_allowed(host):
            return _refuse(
                403,
                f"host {host!r} is not allowed: the kubetrain dashboard answers requests for 127.0.0.1, "
                "localhost or [::1] only (a web page reaching it through DNS rebinding names its own host)",
            )
        origin = request.headers.get("Origin")
        if origin is not None and not (
            self._loopback.origin_allowed(origin) and same_origin(origin, host, request.scheme)
        ):
            return _refuse(
                403, f"origin {origin!r} is not allowed: the kubetrain dashboard serves its own pages only"
            )
        site = request.headers.get("Sec-Fetch-Site", "")
        if site not in OWN_FETCHES and request.path.startswith(PAGE_PREFIXES):
            return _refuse(
                403, f"a {site} request is not allowed: the kubetrain dashboard serves its own pages only"
            )
        if request.method not in READ_METHODS:
            response = _refuse(405, f"{request.method} is not allowed: the kubetrain dashboard is read-only")
            response.headers["Allow"] = "GET, HEAD"
            return response
        return None

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        refused = self.refusal(request)
        if refused is not None:
            return refused
        return await handler(request)


def _refuse(status: int, message: str) -> web.Response:
    return web.Response(status=status, text=message + "\n", content_type="text/plain")


async def add_security_headers(request: web.Request, response: web.StreamResponse) -> None:
    """`on_response_prepare`: every answer, streams and errors included, gets the headers."""
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
    for name in [h for h in response.headers if h.lower().startswith("access-control-")]:
        del response.headers[name]
