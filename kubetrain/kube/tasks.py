"""Stopping background tasks: cancel them, then wait until each has really finished.

Every long-running part (the API server's controllers, the event recorder's writers, log
followers, reconcile workers) stops the same way, and a task left running after `stop()` returns
writes into a closed session; one helper keeps the two steps together.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable
from typing import Any


async def cancel_and_wait(tasks: Iterable[asyncio.Task[Any]]) -> None:
    """Cancel every task, then await each (its CancelledError is expected and swallowed)."""
    pending = list(tasks)
    for task in pending:
        task.cancel()
    for task in pending:
        with contextlib.suppress(asyncio.CancelledError):
            await task
