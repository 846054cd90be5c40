"""`kubetrain operator --history PATH`: record the cluster's jobs into a history file (off by default).

The recorder is the local plane's, over its own client. It needs, beyond the operator's RBAC,
`list`/`watch` on events and `get` on `pods/log` (see the README's History section). Its first
lists run beside the operator's start, never before it: a slow history must not delay reconciling.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from pathlib import Path

from kubetrain.cli.history import add_history_bounds, history_store
from kubetrain.history.recorder import HistoryRecorder
from kubetrain.kinds.registry import reconciled_versions
from kubetrain.runtime.operator import ClientFactory

log = logging.getLogger(__name__)


def add_history_options(parser: argparse.ArgumentParser) -> None:
    add_history_bounds(parser, off_switch=False).add_argument(
        "--history",
        metavar="PATH",
        default=None,
        help="record every job (spec, transitions, pods, events, logs) into this SQLite file, e.g. on "
        "a volume; `kubetrain history --history PATH` reads it (default: off)",
    )


@contextlib.asynccontextmanager
async def recording(args: argparse.Namespace, connect: ClientFactory) -> AsyncIterator[None]:
    """Records for as long as the block runs, when `--history` names a file."""
    store = history_store(Path(args.history), args) if args.history else None
    if store is None:
        yield
        return
    kube = await connect(args.kube_api_qps, args.kube_api_burst)
    recorder = HistoryRecorder(kube.api, store, reconciled_versions())
    starting = asyncio.create_task(recorder.start(), name="history recorder start")
    log.info("recording the job history into %s", args.history)
    try:
        yield
    finally:
        starting.cancel()
        await asyncio.gather(starting, return_exceptions=True)
        await recorder.stop()
        await kube.close()
