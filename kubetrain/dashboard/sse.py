"""Server-Sent Events over aiohttp: ``event: NAME`` / ``data: JSON`` frames on one response.

The browser's EventSource reconnects by itself (after ``retry`` ms) when the stream breaks, and
each new stream starts with the whole current state, so nothing is lost across a reconnect or a
restarted server. A comment line every `PING_SECONDS` finds a page that went away.
"""

from __future__ import annotations

from typing import Any

import orjson
from aiohttp import web

PING_SECONDS = 15.0
RETRY_MS = 2000


class EventStream:
    def __init__(self, response: web.StreamResponse) -> None:
        self.response = response

    @classmethod
    async def open(cls, request: web.Request) -> EventStream:
        response = web.StreamResponse(
            headers={
                "Content-Type": "text/event-stream; charset=utf-8",
                "Cache-Control": "no-store",
                "X-Accel-Buffering": "no",
            }
        )
        await response.prepare(request)
        await response.write(f"retry: {RETRY_MS}\n\n".encode())
        return cls(response)

    async def send(self, event: str, data: Any) -> None:
        await self.response.write(frame(event, data))

    async def ping(self) -> None:
        await self.response.write(b": ping\n\n")


def frame(event: str, data: Any) -> bytes:
    """One event: JSON has no raw newline (orjson escapes them), so it is one ``data:`` line."""
    return b"event: " + event.encode() + b"\ndata: " + orjson.dumps(data) + b"\n\n"
