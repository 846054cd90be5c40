"""Polling for tests that wait on a live system: one helper for every tier."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Callable
from typing import Any


async def wait_for(
    check: Callable[[], Any], timeout: float = 30.0, what: str = "condition", interval: float = 0.1
) -> Any:
    """Call `check` (plain or async) until it returns something truthy, and return that.

    On timeout the AssertionError names `what` and the last value seen, which is usually what a
    reader of a failed run needs first.
    """
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        last = check()
        if inspect.isawaitable(last):
            last = await last
        if last:
            return last
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}; last={last!r}")
        await asyncio.sleep(interval)
