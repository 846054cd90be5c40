"""/openapi/v2 and /openapi/v3 over HTTP, with kube-openapi's negotiation and caching headers.

As ``k8s.io/kube-openapi/pkg/handler3``: the discovery document lists each group-version with a
``?hash=`` URL; a group-version requested with the current hash is immutable for a year
(``Cache-Control: public, immutable``, ``Expires``), with a stale hash it redirects (301) to the
current one; every document has a quoted SHA-512 ``Etag`` and ``Last-Modified`` and answers
conditional requests with 304 (Go's ``http.ServeContent``); every other response says
``Cache-Control: no-cache, private`` as kube-apiserver's filters do. Every document is served
as JSON or as gnostic's protobuf (kubectl asks v2 in protobuf, v3 in JSON), byte for byte what
kube-apiserver encodes from the same JSON; other media types get 406.
"""

from __future__ import annotations

import asyncio
import email.utils
import time

from aiohttp import web

from .openapi import Document, OpenAPIService, relative_url

JSON = "application/json"
_JSON_TYPES = {("application", "json"), ("application", "*"), ("*", "*")}
_V2_PROTOBUF = (
    "com.github.proto-openapi.spec.v2@v1.0+protobuf",
    "com.github.proto-openapi.spec.v2.v1.0+protobuf",
)
_V3_PROTOBUF = (
    "com.github.proto-openapi.spec.v3.v1.0+protobuf",
    "com.github.proto-openapi.spec.v3@v1.0+protobuf",
)
V3_PROTOBUF_TYPE = "application/com.github.proto-openapi.spec.v3.v1.0+protobuf"


def _negotiate(header: str, protobuf: tuple[str, ...]) -> str | None:
    """goautoneg: clauses by preference (q=0 excluded); ``json`` or ``protobuf`` for the first
    one either satisfies, JSON first where a wildcard allows both, as kube-openapi lists them."""
    clauses = []
    for order, clause in enumerate((header or "*/*").split(",")):
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
        clauses.append((-q, order, kind, sub))
    for _, _, kind, sub in sorted(clauses):
        if (kind, sub) in _JSON_TYPES:
            return "json"
        if kind == "application" and sub in protobuf:
            return "protobuf"
    return None


def _http_date(ts: float) -> str:
    return email.utils.formatdate(ts, usegmt=True)


NO_CACHE = {"Cache-Control": "no-cache, private"}  # what kube-apiserver sends on every other response


def _not_modified(request: web.Request, etag: str | None, last_modified: int) -> bool:
    """http.ServeContent's checks: If-None-Match on the Etag, else If-Modified-Since."""
    inm = request.headers.get("If-None-Match")
    if inm is not None:
        tags = [t.strip() for t in inm.split(",")]
        return etag is not None and (f'"{etag}"' in tags or "*" in tags or f'W/"{etag}"' in tags)
    ims = request.headers.get("If-Modified-Since")
    if not ims:
        return False
    try:
        return last_modified <= email.utils.parsedate_to_datetime(ims).timestamp()
    except (TypeError, ValueError):
        return False


def _serve(
    request: web.Request,
    doc: Document,
    headers: dict[str, str],
    etag: bool = True,
    content_type: str = JSON,
) -> web.Response:
    """The document's bytes, or 304 to a conditional request that already has them."""
    headers = dict(headers)
    if etag:
        headers["Etag"] = f'"{doc.etag}"'
    modified = int(doc.last_modified)
    if _not_modified(request, doc.etag if etag else None, modified):
        return web.Response(status=304, headers=headers)
    headers["Accept-Ranges"] = "bytes"
    headers["Last-Modified"] = _http_date(modified)
    resp = web.Response(body=doc.data, headers={**headers, "Content-Type": content_type})
    if "gzip" in request.headers.get("Accept-Encoding", ""):
        resp.enable_compression()
    return resp


class OpenAPIHandlers:
    """The three routes; documents come from the OpenAPIService."""

    def __init__(self, service: OpenAPIService) -> None:
        self.service = service
        self._v2_proto: tuple[str, bytes] | None = None
        self._v3_proto: dict[str, tuple[str, bytes]] = {}

    async def v2(self, request: web.Request) -> web.StreamResponse:
        headers = {**NO_CACHE, "Vary": "Accept"}
        form = _negotiate(request.headers.get("Accept", ""), _V2_PROTOBUF)
        if form is None:
            return web.Response(status=406, headers=headers)
        doc = self.service.v2()
        if form == "protobuf":
            from .openapi_proto import CONTENT_TYPE, to_protobuf  # protobuf is imported on first use

            if self._v2_proto is None or self._v2_proto[0] != doc.etag:
                # Seconds of CPU for the whole document: off the event loop, cached by its hash.
                data = await asyncio.get_running_loop().run_in_executor(None, to_protobuf, doc.doc)
                self._v2_proto = (doc.etag, data)
            served = Document(doc.doc, self._v2_proto[1], doc.etag, doc.last_modified)
            return _serve(request, served, headers, content_type=CONTENT_TYPE)
        return _serve(request, doc, headers)

    async def v3_discovery(self, request: web.Request) -> web.StreamResponse:
        """As the aggregator serves it: no Etag, Last-Modified of now, sniffed as text/plain."""
        doc = self.service.discovery()
        fresh = Document(doc.doc, doc.data, doc.etag, time.time())
        return _serve(request, fresh, NO_CACHE, etag=False, content_type="text/plain; charset=utf-8")

    async def v3_group_version(self, request: web.Request) -> web.StreamResponse:
        key = request.match_info["gv"].strip("/")
        doc = self.service.group_version(key)
        if doc is None:
            return web.Response(status=404, headers=NO_CACHE)
        headers = {**NO_CACHE, "Vary": "Accept"}
        form = _negotiate(request.headers.get("Accept", ""), _V3_PROTOBUF)
        if form is None:
            return web.Response(status=406, headers=headers)
        content_type = V3_PROTOBUF_TYPE if form == "protobuf" else JSON
        wanted = request.query.get("hash")
        if wanted:
            if wanted != doc.etag:
                headers.update(
                    {
                        "Content-Type": content_type,
                        "Etag": f'"{doc.etag}"',
                        "Location": relative_url(key, doc.etag),
                    }
                )
                return web.Response(status=301, headers=headers)
            expires = time.gmtime(time.time() + 365 * 24 * 3600)
            headers["Cache-Control"] = "public, immutable"
            headers["Expires"] = time.strftime("%a, %d %b %Y %H:%M:%S UTC", expires)
        if form == "protobuf":
            doc = await self._v3_protobuf(key, doc)
        return _serve(request, doc, headers, content_type=content_type)

    async def _v3_protobuf(self, key: str, doc: Document) -> Document:
        """The document's protobuf form, built off the event loop once per hash."""
        from .openapi_proto3 import to_protobuf  # protobuf is imported on first use

        cached = self._v3_proto.get(key)
        if cached is None or cached[0] != doc.etag:
            data = await asyncio.get_running_loop().run_in_executor(None, to_protobuf, doc.doc)
            cached = self._v3_proto[key] = (doc.etag, data)
        return Document(doc.doc, cached[1], doc.etag, doc.last_modified)

    def register(self, app: web.Application) -> None:
        """Routes to add before the API handler's catch-all."""
        app.router.add_get("/openapi/v2", self.v2)
        app.router.add_get("/openapi/v3", self.v3_discovery)
        app.router.add_get("/openapi/v3/{gv:.+}", self.v3_group_version)
