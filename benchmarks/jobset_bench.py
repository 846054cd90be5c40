"""JobSet figures for the embedded plane (benchmarks print figures, they never assert).

    PYTHONPATH=. python benchmarks/jobset_bench.py [--runs N] [--e2e 1,10,50]

* `plan()` for JobSets of 1, 100 and 1,000 Jobs: `create` (nothing exists: every Job built) and
  `steady` (every Job running, status current: the plan must be empty), median of N runs;
* installing upstream's 780 kB JobSet CRD into a fresh embedded API server;
* end to end on the embedded plane (server, node, binder, Job and JobSet controllers): a JobSet
  of K Jobs of one pod each running ``python -c pass``, from create to ``Completed``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from kubetrain.embedded.apiserver import EmbeddedAPIServer
from kubetrain.embedded.jobcontroller import JobController
from kubetrain.embedded.jobset import JobSetController, jobset_crd
from kubetrain.embedded.jobset.controller import jobsets_path
from kubetrain.embedded.jobset.reconcile import plan
from kubetrain.embedded.node import KubeAPI, NodeAgent, NodeConfig
from kubetrain.embedded.scheduler import Binder
from tests.jobset_builders import child_job, jobset

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def median_ms(fn: Any, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def plan_figures(runs: int) -> None:
    for jobs in (1, 100, 1000):
        js = jobset().replicated_job("workers", jobs, parallelism=2).build()
        first = plan(js, [], service_exists=True, now=time.time())
        assert first is not None and len(first.create_jobs) == jobs
        js["status"] = first.status
        children = [child_job(js, "workers", i) for i in range(jobs)]
        current = plan(js, children, service_exists=True, now=time.time())
        assert current is not None
        js["status"] = current.status
        steady = plan(js, children, service_exists=True, now=time.time())
        assert steady is not None and steady.empty
        create = median_ms(lambda js=js: plan(js, [], service_exists=True, now=time.time()), runs)
        still = median_ms(lambda js=js, c=children: plan(js, c, service_exists=True, now=time.time()), runs)
        print(f"plan  {jobs:5d} Jobs   create {create:8.2f} ms   steady {still:8.2f} ms")


async def e2e(sizes: list[int]) -> None:
    server = EmbeddedAPIServer()
    await server.start(port=0)
    api = KubeAPI.for_url(server.url, token=server.token, ssl_context=server.client_ssl_context())
    start = time.perf_counter()
    await api.create(CRDS, jobset_crd())
    while True:
        try:
            await api.list(jobsets_path("default"))
            break
        except Exception:
            await asyncio.sleep(0.01)
    print(f"CRD   install until served: {(time.perf_counter() - start) * 1000:.0f} ms")
    root = Path(tempfile.mkdtemp())
    agent = NodeAgent(api, NodeConfig(root_dir=root / "node", working_dir=root))
    await agent.start()
    parts: list[Any] = [Binder(api), JobController(api), JobSetController(api)]
    for part in parts:
        await part.start()
    try:
        for size in sizes:
            name = f"bench-{size}"
            body = (
                jobset(name, uid=None)
                .replicated_job("w", size, command=[sys.executable, "-c", "pass"])
                .build()
            )
            start = time.perf_counter()
            await api.create(jobsets_path("default"), body)
            while True:
                got = await api.get(jobsets_path("default", name))
                if (got.get("status") or {}).get("terminalState"):
                    break
                await asyncio.sleep(0.05)
            took = time.perf_counter() - start
            print(f"e2e   {size:3d} Jobs x 1 pod: {got['status']['terminalState']} in {took:.2f} s")
    finally:
        for part in reversed(parts):
            await part.stop()
        await agent.stop()
        await api.close()
        await server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--e2e", default="1,10,50", help="JobSet sizes (Jobs) to run end to end; '' for none")
    args = parser.parse_args()
    plan_figures(args.runs)
    sizes = [int(s) for s in args.e2e.split(",") if s]
    if sizes:
        asyncio.run(e2e(sizes))


if __name__ == "__main__":
    main()
