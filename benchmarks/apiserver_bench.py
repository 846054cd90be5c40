"""Embedded API server throughput: creates/s, get/list latency, watch fan-out.

The server runs in a separate *process* (its own interpreter, so its own GIL and core); the load
generator is an aiohttp client in this process. Prints figures only.

    python benchmarks/apiserver_bench.py [--pods 2000] [--concurrency 64] [--watchers 10] [--state-file F]

``--state-file`` keeps the objects in that SQLite file, as `kubetrain up` does (default: in memory).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import ssl
import statistics
import sys
import time
from multiprocessing.connection import Connection
from typing import Any

import aiohttp

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def _serve(conn: Connection, state_file: str | None) -> None:
    from pathlib import Path

    from kubetrain.embedded.apiserver import EmbeddedAPIServer

    async def main() -> None:
        server = EmbeddedAPIServer(state_file=Path(state_file) if state_file else None)
        conn.send((await server.start(), server.token, server.ca_pem))
        await asyncio.get_running_loop().run_in_executor(None, conn.recv)  # wait for "stop"
        await server.stop()

    asyncio.run(main())


def _pod(name: str) -> bytes:
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "labels": {
                    "training.kubeflow.org/job-name": "bench",
                    "training.kubeflow.org/replica-type": "worker",
                },
            },
            "spec": {
                "containers": [
                    {
                        "name": "pytorch",
                        "image": "pytorch/pytorch:2.3",
                        "command": ["python", "-u", "train.py"],
                        "env": [{"name": "WORLD_SIZE", "value": "2000"}, {"name": "RANK", "value": "0"}],
                        "ports": [{"containerPort": 23456, "name": "pytorchjob-port"}],
                    }
                ],
                "restartPolicy": "OnFailure",
            },
        }
    ).encode()


async def _namespace(session: aiohttp.ClientSession, url: str, name: str) -> None:
    async with session.post(f"{url}/api/v1/namespaces", json={"metadata": {"name": name}}) as resp:
        assert resp.status == 201, await resp.text()


async def _create_pods(session: aiohttp.ClientSession, url: str, ns: str, n: int, concurrency: int) -> float:
    bodies = [_pod(f"pod-{i}") for i in range(n)]
    queue: asyncio.Queue[bytes] = asyncio.Queue()
    for body in bodies:
        queue.put_nowait(body)
    headers = {"Content-Type": "application/json"}

    async def worker() -> None:
        while not queue.empty():
            body = queue.get_nowait()
            async with session.post(f"{url}/api/v1/namespaces/{ns}/pods", data=body, headers=headers) as resp:
                await resp.read()
                assert resp.status == 201, resp.status

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - start


async def _latency(session: aiohttp.ClientSession, url: str, path: str, times: int) -> list[float]:
    out = []
    for _ in range(times):
        start = time.perf_counter()
        async with session.get(url + path) as resp:
            await resp.read()
            assert resp.status == 200
        out.append(time.perf_counter() - start)
    return out


async def _watch_fanout(
    session: aiohttp.ClientSession, url: str, n: int, concurrency: int, watchers: int
) -> tuple[float, float]:
    ns = "fanout"
    await _namespace(session, url, ns)
    _, listed = await _get_json(session, f"{url}/api/v1/namespaces/{ns}/pods")
    rv = listed["metadata"]["resourceVersion"]
    done_at: list[float] = []

    async def watch() -> None:
        seen = 0
        async with session.get(
            f"{url}/api/v1/namespaces/{ns}/pods",
            params={"watch": "1", "resourceVersion": rv},
            timeout=aiohttp.ClientTimeout(total=None),
        ) as resp:
            async for line in resp.content:
                if b'"ADDED"' in line[:20]:
                    seen += 1
                    if seen == n:
                        done_at.append(time.perf_counter())
                        return

    tasks = [asyncio.create_task(watch()) for _ in range(watchers)]
    await asyncio.sleep(0.3)
    start = time.perf_counter()
    create_time = await _create_pods(session, url, ns, n, concurrency)
    await asyncio.wait_for(asyncio.gather(*tasks), 120)
    total = max(done_at) - start
    return create_time, total


async def _get_json(session: aiohttp.ClientSession, url: str) -> tuple[int, Any]:
    async with session.get(url) as resp:
        return resp.status, await resp.json()


def _cpu_seconds(pid: int) -> float:
    """User + system CPU of process `pid` (all its threads): a figure a busy machine blurs less."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _ms(values: list[float], q: float) -> str:
    ordered = sorted(values)
    return f"{ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000:.2f} ms"


async def run(
    url: str, token: str, ca_pem: bytes, n: int, concurrency: int, watchers: int, server_pid: int
) -> None:
    tls = ssl.create_default_context(cadata=ca_pem.decode())
    conn = aiohttp.TCPConnector(limit=concurrency + watchers + 8, ssl=tls)
    auth = {"Authorization": f"Bearer {token}"}
    async with aiohttp.ClientSession(connector=conn, headers=auth) as session:
        rates, cpus = [], []
        for run_no in range(3):
            ns = f"bench-{run_no}"
            await _namespace(session, url, ns)
            cpu = _cpu_seconds(server_pid)
            elapsed = await _create_pods(session, url, ns, n, concurrency)
            cpus.append((_cpu_seconds(server_pid) - cpu) / n * 1e6)
            rates.append(n / elapsed)
            print(
                f"  run {run_no + 1}: {n} pods in {elapsed:.2f}s = {n / elapsed:,.0f} pods/s, "
                f"server CPU {cpus[-1]:.0f} us/create"
            )
        median = statistics.median(rates)
        print(
            f"create rate (median of 3, N={n}, {concurrency} concurrent): {median:,.0f} pods/s, "
            f"server CPU {statistics.median(cpus):.0f} us/create"
        )

        gets = await _latency(session, url, "/api/v1/namespaces/bench-0/pods/pod-17", 500)
        print(f"get latency (500 sequential): p50 {_ms(gets, 0.5)}, p99 {_ms(gets, 0.99)}")
        lists = await _latency(session, url, "/api/v1/namespaces/bench-0/pods", 20)
        print(f"list latency ({n} pods, 20 sequential): p50 {_ms(lists, 0.5)}, p99 {_ms(lists, 0.99)}")
        sel = await _latency(
            session,
            url,
            "/api/v1/namespaces/bench-0/pods?labelSelector="
            "training.kubeflow.org/job-name%3Dbench,training.kubeflow.org/replica-type%3Dworker",
            20,
        )
        print(f"list with label selector ({n} pods match): p50 {_ms(sel, 0.5)}")

        create_time, total = await _watch_fanout(session, url, n, concurrency, watchers)
        delivered = n * watchers
        print(
            f"watch fan-out: {n} creates ({create_time:.2f}s) reached all {watchers} watchers "
            f"in {total:.2f}s = {delivered / total:,.0f} events/s delivered"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--watchers", type=int, default=10)
    parser.add_argument("--state-file", default=None, help="persist to this SQLite file (must not exist)")
    args = parser.parse_args()
    if args.state_file and os.path.exists(args.state_file):
        parser.error(f"--state-file {args.state_file} exists: the runs create the same pods; remove it")
    parent, child = mp.Pipe()
    proc = mp.get_context("spawn").Process(target=_serve, args=(child, args.state_file), daemon=True)
    proc.start()
    url, token, ca_pem = parent.recv()
    print(f"embedded API server at {url} (separate process, pid {proc.pid}); client: aiohttp in this process")
    try:
        assert proc.pid is not None
        asyncio.run(run(url, token, ca_pem, args.pods, args.concurrency, args.watchers, proc.pid))
    finally:
        parent.send("stop")
        proc.join(10)


if __name__ == "__main__":
    main()
