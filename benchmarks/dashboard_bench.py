"""What the web dashboard's live feeds cost (benchmarks print figures, they never assert).

    PYTHONPATH=. python benchmarks/dashboard_bench.py [--jobs 100] [--pages 5] [--seconds 10]

* `summary`: one jobs-page row (`views.job_summary`) and the snapshot of all `--jobs` jobs as one
  SSE frame (orjson), the work a page's first message costs;
* `feed`: the jobs stream end to end over HTTP: `--pages` pages hold `/api/jobs/stream` open while
  every job's status changes 10 times a second (`--jobs` x 10 informer events/s, as a plane busy
  with that many jobs writes them); prints the events sent per second, the batches and bytes each
  page got, and the process's CPU (the server, the informer handler and the pages' reading);
* `logs`: one replica log line through a job's log feed (buffered, read for metrics), with and
  without metrics on it: how many lines a second one core takes.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from typing import Any

import aiohttp

from kubetrain.client.joblogs import Stream
from kubetrain.client.kinds import resolve_kind
from kubetrain.dashboard.livestate import LiveState
from kubetrain.dashboard.logfeed import JobLogFeed
from kubetrain.dashboard.server import Dashboard
from kubetrain.dashboard.sse import frame
from kubetrain.dashboard.views import job_summary

PYTORCH = resolve_kind("pytorchjob")


def job(i: int, active: int) -> dict[str, Any]:
    container = {"name": "pytorch", "image": "pytorch/pytorch", "command": ["python", "train.py"]}
    spec = {"template": {"spec": {"containers": [container]}}}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {
            "name": f"job-{i}",
            "namespace": "default",
            "uid": f"uid-{i}",
            "creationTimestamp": "2026-01-02T03:04:05Z",
            "resourceVersion": str(active),
        },
        "spec": {
            "pytorchReplicaSpecs": {"Master": {"replicas": 1, **spec}, "Worker": {"replicas": 3, **spec}}
        },
        "status": {
            "startTime": "2026-01-02T03:04:06Z",
            "conditions": [
                {"type": "Created", "status": "True", "lastTransitionTime": "2026-01-02T03:04:05Z"},
                {"type": "Running", "status": "True", "lastTransitionTime": "2026-01-02T03:04:07Z"},
            ],
            "replicaStatuses": {"Master": {"active": 1}, "Worker": {"active": active % 4}},
        },
    }


def bench_summary(jobs: int, runs: int) -> None:
    objects = [job(i, i) for i in range(jobs)]
    per_row, snapshot = [], []
    for _ in range(runs):
        start = time.perf_counter()
        rows = [job_summary(j, PYTORCH) for j in objects]
        per_row.append((time.perf_counter() - start) / jobs)
        start = time.perf_counter()
        data = frame("snapshot", {"jobs": rows})
        snapshot.append(time.perf_counter() - start)
    print(
        f"summary: {statistics.median(per_row) * 1e6:.1f} µs per job row; snapshot frame of {jobs} jobs "
        f"{len(data) / 1024:.1f} KiB, serialized in {statistics.median(snapshot) * 1e3:.2f} ms "
        f"(median of {runs})"
    )


async def bench_feed(jobs: int, pages: int, seconds: float) -> None:
    state = LiveState(None)  # type: ignore[arg-type]  # fed by hand below: no API behind it
    handle = state._job_handler(PYTORCH)
    for i in range(jobs):
        handle("ADDED", job(i, 0))
    state.synced.set()
    dashboard = Dashboard(None)
    dashboard.routes.state = state
    await dashboard.start(0)
    url = f"{dashboard.url}api/jobs/stream"
    received = [{"bytes": 0, "batches": 0} for _ in range(pages)]

    async def read(session: aiohttp.ClientSession, counts: dict[str, int]) -> None:
        async with session.get(url) as response:
            async for chunk in response.content.iter_any():
                counts["bytes"] += len(chunk)
                counts["batches"] += chunk.count(b"event: jobs\n")

    async with aiohttp.ClientSession() as session:
        readers = [asyncio.create_task(read(session, counts)) for counts in received]
        await asyncio.sleep(1.0)  # every page has its snapshot
        for counts in received:
            counts["bytes"] = counts["batches"] = 0
        cpu, wall, events, tick = time.process_time(), time.perf_counter(), 0, 0
        while time.perf_counter() - wall < seconds:
            tick += 1
            for i in range(jobs):
                handle("MODIFIED", job(i, tick))
                events += 1
            await asyncio.sleep(0.1)
        elapsed = time.perf_counter() - wall
        used = time.process_time() - cpu
        for task in readers:
            task.cancel()
        await asyncio.gather(*readers, return_exceptions=True)
    await dashboard.stop()
    batches = statistics.median(c["batches"] for c in received) / elapsed
    kib = statistics.median(c["bytes"] for c in received) / elapsed / 1024
    print(
        f"feed: {jobs} jobs x 10 changes/s ({events / elapsed:.0f} events/s), {pages} pages: "
        f"each page {batches:.1f} messages/s, {kib:.0f} KiB/s; "
        f"process CPU {used / elapsed * 100:.0f}% of a core"
    )


def bench_logs(lines: int) -> None:
    feed = JobLogFeed(None, "bench")  # type: ignore[arg-type]  # no follower started: lines fed by hand
    stream = Stream("bench-worker-0", "uid", "pytorch", "worker-0", False, "c1")
    for label, text in (
        ("with metrics", "rank 1: epoch 3/8 step={} local_loss=0.4312 global_loss=0.4420 lr=0.05"),
        ("plain", "rank 1: loading shard {} of the dataset from /data/train"),
    ):
        start = time.perf_counter()
        for n in range(lines):
            feed._emit(stream, text.format(n))
        took = time.perf_counter() - start
        print(f"logs ({label}): {took / lines * 1e6:.1f} µs per line, {lines / took:,.0f} lines/s")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=100)
    parser.add_argument("--pages", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--lines", type=int, default=100_000)
    args = parser.parse_args()
    bench_summary(args.jobs, args.runs)
    asyncio.run(bench_feed(args.jobs, args.pages, args.seconds))
    bench_logs(args.lines)


if __name__ == "__main__":
    main()
