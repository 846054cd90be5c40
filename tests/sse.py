"""Reading a Server-Sent Events stream in tests: (event, data) pairs as a browser's EventSource gets them."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp


async def events(response: aiohttp.ClientResponse) -> AsyncIterator[tuple[str, Any]]:
    """Each event's name and decoded JSON data, until the stream ends (comments skipped)."""
    name, data = "message", []
    async for raw in response.content:
        line = raw.decode().rstrip("\n")
        if not line:
            if data:
                yield name, json.loads("\n".join(data))
            name, data = "message", []
        elif line.startswith(":") or line.startswith("retry:"):
            continue
        elif line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())
