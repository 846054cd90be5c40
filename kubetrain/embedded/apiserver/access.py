"""Who may talk to the embedded API server: loopback Host and Origin, then the plane's bearer token.

The server listens on loopback, but loopback is shared by every local user, and every web page
the user's browser opens can reach it: a cross-origin ``POST`` with a "simple" content type needs
no CORS preflight, and DNS rebinding lets a page's own hostname resolve to 127.0.0.1. So, in
this order, a request must

1. name a loopback ``Host`` (``127.0.0.1``, ``localhost``, ``[::1]`` or the address the server
   listens on, with or without the port): a rebound page sends ``Host: evil.example:PORT``;
2. carry no ``Origin``, or a loopback one: browsers add it to cross-origin writes;
3. carry ``Authorization: Bearer <token>``, the random token of this server that only the
   kubeconfig (mode 0600) holds, or a service-account token this server issued to a pod
   (`serviceaccounts`; its requests are then authorized by `rbac`). Cookies and query
   parameters are never credentials.

Step 3 answers as kube-apiserver with a token authenticator: a missing or wrong token is a 401
Status ``Unauthorized``. Anonymous requests may read what kube-apiserver's default RBAC grants
``system:unauthenticated`` (the ``system:public-info-viewer`` ClusterRole), so health checks work
without the kubeconfig; a wrong token is refused there too, as authentication fails before
authorization. Unlike a default kube-apiserver, which lets anonymous requests through to RBAC
(403 for everything else), anonymous requests elsewhere get 401, as with kube-apiserver's
``anonymous.conditions`` limited to those paths: nothing here authorizes, so nothing else may be
anonymous.
"""

from __future__ import annotations

import contextvars
import hmac
from collections.abc import Awaitable, Callable

from aiohttp import web

from kubetrain.kube.loopback import LoopbackNames

from . import errors
from .jsonutil import dumps
from .serviceaccounts import ADMIN, TokenIssuer, UserInfo

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
CURRENT_USER: contextvars.ContextVar[UserInfo | None] = contextvars.ContextVar("kubetrain_user", default=None)
"""Who sent the request being handled (set by the middleware); None for anonymous reads."""

PUBLIC_INFO_PATHS = frozenset({"/healthz", "/livez", "/readyz", "/version", "/version/"})
"""The nonResourceURLs of kube-apiserver's ``system:public-info-viewer`` ClusterRole."""


def unauthorized() -> errors.APIError:
    """kube-apiserver's answer when authentication fails (``responsewriters.Unauthorized``)."""
    return errors.APIError(401, "Unauthorized", "Unauthorized")


def _forbidden(message: str) -> errors.APIError:
    return errors.APIError(403, "Forbidden", message)


def _answer(err: errors.APIError) -> web.Response:
    return web.Response(body=dumps(err.status()), status=err.code, content_type="application/json")


class AccessControl:
    """The three checks above, as one aiohttp middleware; ``token`` is the credential to accept."""

    def __init__(self, token: str, listen_host: str, tokens: TokenIssuer | None = None) -> None:
        if not token:
            raise ValueError("the embedded API server needs a non-empty bearer token")
        self._token = token.encode()
        self._loopback = LoopbackNames([listen_host])
        self._tokens = tokens

    def host_error(self, host: str | None) -> errors.APIError | None:
        if self._loopback.host_allowed(host):
            return None
        return _forbidden(
            f'host "{host}" is not allowed: the local plane answers requests for 127.0.0.1, localhost '
            "or [::1] only (a web page reaching it through DNS rebinding names its own host); "
            "use the server address of the kubeconfig `kubetrain up` wrote"
        )

    def origin_error(self, origin: str | None) -> errors.APIError | None:
        if self._loopback.origin_allowed(origin):
            return None
        return _forbidden(
            f'origin "{origin}" is not allowed: the local plane refuses requests sent by web pages '
            "of other sites; call it with kubectl, the kubetrain client or an SDK, not from a browser"
        )

    def authenticate(self, request: web.Request) -> tuple[bool, UserInfo | None]:
        """Whether the request may go on, and as whom: this server's token (compared in constant
        time; `ADMIN`), a service-account token of `tokens`, or no token at all on a
        public-info path (anonymous: None)."""
        token = _bearer(request.headers.get("Authorization"))
        if token is None:
            return request.method in ("GET", "HEAD") and request.path in PUBLIC_INFO_PATHS, None
        # aiohttp keeps undecodable header bytes as surrogates: compare the bytes that were sent.
        if hmac.compare_digest(token.encode("utf-8", "surrogateescape"), self._token):
            return True, ADMIN
        user = self._tokens.authenticate(token) if self._tokens is not None else None
        return user is not None, user

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        err = self.host_error(request.headers.get("Host")) or self.origin_error(request.headers.get("Origin"))
        if err is None:
            ok, user = self.authenticate(request)
            if not ok:
                err = unauthorized()
            CURRENT_USER.set(user)
        if err is not None:
            return _answer(err)
        return await handler(request)


def _bearer(authorization: str | None) -> str | None:
    """The token of ``Authorization: Bearer <token>`` (scheme in any case), as kube-apiserver's
    bearertoken authenticator reads it; None when the header tries no token authentication."""
    scheme, _, token = (authorization or "").strip().partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None
