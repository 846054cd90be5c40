"""Only Kubernetes media types are read as request bodies; anything else is kube-apiserver's 415.

kube-apiserver picks the body's decoder from ``Content-Type`` (``negotiation.NegotiateInputSerializer``)
and refuses a type it has no serializer for. Reading ``text/plain`` (or a form) as JSON, as this
server once did, is what lets a web page write to it: those are the content types a browser sends
cross-origin without asking first. An absent ``Content-Type`` is JSON, as upstream defaults to its
first serializer (no browser sends a cross-origin body without one, and the token check comes first).

Creates, updates, subresource POSTs and DeleteOptions go through here; PATCH has its own list of
patch types and its own answers (`rest.ObjectStorage.patch`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web

from . import errors
from .jsonutil import dumps

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

BODY_TYPES = ("application/json", "application/yaml")
"""The serializers this server decodes (kube-apiserver also has protobuf and, gated, CBOR)."""

_DECODING_METHODS = frozenset({"POST", "PUT"})


def media_type(header: str) -> str:
    """``application/json; charset=utf-8`` -> ``application/json`` (types are case-insensitive)."""
    return header.partition(";")[0].strip().lower()


def unsupported(accepted: tuple[str, ...] = BODY_TYPES) -> errors.APIError:
    """``negotiation.NewUnsupportedMediaTypeError``, with the types this server accepts."""
    return errors.unsupported_media_type(
        "the body of the request was in an unknown format - accepted media types include: "
        + ", ".join(accepted)
    )


@web.middleware
async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Refuse a body of a type no serializer reads, before anything parses it (DELETE decodes its
    DeleteOptions only when there is a body, as upstream)."""
    decodes = request.method in _DECODING_METHODS or (request.method == "DELETE" and request.body_exists)
    if decodes:
        header = request.headers.get("Content-Type", "")
        if header and media_type(header) not in BODY_TYPES:
            err = unsupported()
            return web.Response(body=dumps(err.status()), status=err.code, content_type="application/json")
    return await handler(request)
