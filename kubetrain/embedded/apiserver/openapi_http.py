"""/openapi/v2 and /openapi/v3 over HTTP, with kube-openapi's negotiation and caching headers.

As ``k8s.io/kube-openapi/pkg/handler3``: the discovery document lists each group-version with a
``?hash=`` URL; a group-version requested with the current hash is immutable for a year
(``Cache-Control: public, immutable``, ``Expires``), with a stale hash it redirects (301) to the
current one; every document has a quoted SHA-512 ``Etag`` and ``Last-Modified`` and answers
conditional requests with 304 (Go's ``http.ServeContent``). Only JSON is produced: a client that
accepts nothing but the protobuf forms gets 406, which kubectl treats as "no v2 document" and
falls back to its built-in patch logic (it reads v3 as JSON).
"""

from __future__ import annotations

import email.utils
import time

from aiohttp import web

from .openapi import Document, OpenAPIService, relative_url

JSON = "application/json"
_JSON_TYPES = {("application", "json"), ("application", "*"), ("*", "*")}


def _accepts_json(header: str) -> bool:
    """goautoneg: the clauses by preference; the first one JSON satisfies wins, q=0 excluded."""
    for clause in (header or "*/*").split(","):
        parts = [p.strip() for p in clause.split(";")]
        mime = parts[0]
        q = 1.0
        for param in parts[1:]:
            if param.startswith("q="):
                try:
                    q = float(param[2:])
                except ValueError:
                    q = 0.0
        if q <= 0 or "/" not in mime:
            continue
        kind, _, sub = mime.partition("/")
        if (kind, sub) in _JSON_TYPES:
            return True
    return False


def _http_date(ts: float) -> str:
    return email.utils.formatdate(ts, usegmt=True)


def _serve(request: web.Request, doc: Document, headers: dict[str, str]) -> web.Response:
    """http.ServeContent: conditional GET on the Etag and Last-Modified, then the bytes."""
    quoted = f'"{doc.etag}"'
    headers = {
        **headers,
        "Etag": quoted,
        "Last-Modified": _http_date(int(doc.last_modified)),
        "Accept-Ranges": "bytes",
    }
    inm = request.headers.get("If-None-Match")
    if inm is not None:
        tags = [t.strip() for t in inm.split(",")]
        if quoted in tags or "*" in tags or f"W/{quoted}" in tags:
            return web.Response(status=304, headers=headers)
    else:
        ims = request.headers.get("If-Modified-Since")
        parsed = email.utils.parsedate_to_datetime(ims).timestamp() if ims else None
        if parsed is not None and int(doc.last_modified) <= parsed:
            return web.Response(status=304, headers=headers)
    resp = web.Response(body=doc.data, headers={**headers, "Content-Type": JSON})
    if "gzip" in request.headers.get("Accept-Encoding", ""):
        resp.enable_compression()
    return resp


class OpenAPIHandlers:
    """The three routes; documents come from the OpenAPIService."""

    def __init__(self, service: OpenAPIService) -> None:
        self.service = service

    async def v2(self, request: web.Request) -> web.StreamResponse:
        headers = {"Vary": "Accept"}
        if not _accepts_json(request.headers.get("Accept", "")):
            return web.Response(status=406, headers=headers)
        return _serve(request, self.service.v2(), headers)

    async def v3_discovery(self, request: web.Request) -> web.StreamResponse:
        return _serve(request, self.service.discovery(), {})

    async def v3_group_version(self, request: web.Request) -> web.StreamResponse:
        key = request.match_info["gv"].strip("/")
        headers = {"Vary": "Accept"}
        doc = self.service.group_version(key)
        if doc is None:
            return web.Response(status=404, text="404 page not found\n", headers=headers)
        if not _accepts_json(request.headers.get("Accept", "")):
            return web.Response(status=406, headers=headers)
        wanted = request.query.get("hash")
        if wanted:
            if wanted != doc.etag:
                target = relative_url(key, doc.etag)
                return web.Response(
                    status=301,
                    text=f'<a href="{target}">Moved Permanently</a>.\n\n',
                    content_type="text/html",
                    headers={**headers, "Location": target},
                )
            expires = time.gmtime(time.time() + 365 * 24 * 3600)
            headers["Cache-Control"] = "public, immutable"
            headers["Expires"] = time.strftime("%a, %d %b %Y %H:%M:%S UTC", expires)
        return _serve(request, doc, headers)

    def register(self, app: web.Application) -> None:
        """Routes to add before the API handler's catch-all."""
        app.router.add_get("/openapi/v2", self.v2)
        app.router.add_get("/openapi/v3", self.v3_discovery)
        app.router.add_get("/openapi/v3/{gv:.+}", self.v3_group_version)
