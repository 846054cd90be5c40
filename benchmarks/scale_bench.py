"""One big job on the local plane: created, scheduled as far as the node allows, deleted (issue 17).

    python benchmarks/scale_bench.py [--replicas 1000,5000,10000] [--runs 1] [--timeout 600]
                                     [--tree DIR] [--profile OUT]

For each size a fresh `LocalPlane` (what `kubetrain up` runs: API server, operator, binder, node)
starts in its own process; this process creates a JAXJob of N workers whose containers run
`sleep`, watches the pods and prints:

* created: job created -> N pods seen ADDED;
* placed: job created -> every pod either Running or Pending with `PodScheduled=False` (the node
  runs at most its `pods` allocatable, 110 like a kubelet; the others wait for capacity);
* plan CPU/event: the median thread CPU of one `plan()` call of the job, with the number of calls;
* loop stall: the longest the plane's event loop went without running a 50 ms ticker (a
  livelocked loop shows here first);
* peak RSS: the plane process' VmHWM; RSS after: VmRSS once the job's pods are gone;
* delete: DELETE of the job (background propagation, as kubectl) -> its last pod gone.

A phase that does not end within `--timeout` seconds prints `>TIMEOUT` and the run goes on to the
next phase. `--tree DIR` runs the plane from another source tree (e.g. `git archive` of an older
commit) for before/after figures; `--profile OUT` writes a cProfile of the plane per run.
Benchmarks print figures and never assert.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

JsonDict = dict[str, Any]
NAMESPACE = "default"
JOB = "scale"
TICK = 0.05


# -- the plane process -------------------------------------------------------------------------


def serve(kubeconfig: str, stats_file: str, profile: str | None) -> None:
    """Run a LocalPlane until SIGTERM, timing every plan() call; write the figures as JSON."""
    import kubetrain.kinds.registry as served
    from kubetrain.cli.plane import LocalPlane

    plan_cpu: list[float] = []
    real_plan = served.plan

    def timed_plan(job: Any, observed: Any, now: Any, config: Any) -> Any:
        start = time.thread_time()
        try:
            return real_plan(job, observed, now, config)
        finally:
            if (job.get("metadata") or {}).get("name") == JOB:
                plan_cpu.append(time.thread_time() - start)

    served.plan = timed_plan  # Planner.default() reads the module attribute when the Manager starts
    gc_time = [0.0, 0.0]  # seconds in the cyclic GC, of which in full (generation 2) collections
    gc_started = [0.0]

    def gc_timer(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            gc_started[0] = time.perf_counter()
            return
        spent = time.perf_counter() - gc_started[0]
        gc_time[0] += spent
        if info["generation"] == 2:
            gc_time[1] += spent

    gc.callbacks.append(gc_timer)

    async def main() -> None:
        stall = 0.0
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, stop.set)

        async def ticker() -> None:
            nonlocal stall
            while True:
                before = time.monotonic()
                await asyncio.sleep(TICK)
                stall = max(stall, time.monotonic() - before - TICK)

        with tempfile.TemporaryDirectory(prefix="scale-bench-") as workdir:
            plane = LocalPlane(working_dir=Path(workdir))
            await plane.start()
            tick = asyncio.create_task(ticker())
            try:
                plane.write_kubeconfig(kubeconfig)
                await stop.wait()
            finally:
                tick.cancel()
                await plane.stop()
        Path(stats_file).write_text(json.dumps({"plan_cpu": plan_cpu, "stall": stall, "gc": gc_time}))

    if profile is None:
        asyncio.run(main())
        return
    import cProfile

    profiler = cProfile.Profile()
    profiler.enable()
    try:
        asyncio.run(main())
    finally:
        profiler.disable()
        profiler.dump_stats(profile)


# -- the measuring process ---------------------------------------------------------------------


def proc_field_mb(pid: int, name: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(name + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def job_manifest(replicas: int) -> JsonDict:
    """A JAXJob: O(1) env per pod and no init container, so only the node's pod limit binds."""
    template = {"spec": {"containers": [{"name": "jax", "image": "busybox:1", "command": ["sleep", "3600"]}]}}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "JAXJob",
        "metadata": {"name": JOB, "namespace": NAMESPACE},
        "spec": {
            "jaxReplicaSpecs": {
                "Worker": {"replicas": replicas, "restartPolicy": "Never", "template": template}
            }
        },
    }


def _placed(pod: JsonDict) -> bool:
    """Running, or Pending with the scheduler's verdict written (PodScheduled=False)."""
    status = pod.get("status") or {}
    if status.get("phase") == "Running":
        return True
    return any(
        c.get("type") == "PodScheduled" and c.get("status") == "False" for c in status.get("conditions") or []
    )


@dataclass
class PodWatch:
    """The job's pods as one watch sees them; `changed` fires on every event."""

    pods: dict[str, JsonDict] = field(default_factory=dict)
    ever: int = 0
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def placed(self) -> int:
        return sum(1 for p in self.pods.values() if _placed(p))

    def running(self) -> int:
        return sum(1 for p in self.pods.values() if (p.get("status") or {}).get("phase") == "Running")

    def unschedulable(self) -> int:
        return sum(
            1
            for p in self.pods.values()
            if any(
                c.get("reason") == "Unschedulable" for c in (p.get("status") or {}).get("conditions") or []
            )
        )


async def watch_pods(s: aiohttp.ClientSession, base: str, into: PodWatch) -> None:
    path = f"{base}/api/v1/namespaces/{NAMESPACE}/pods"
    selector = {"labelSelector": f"training.kubeflow.org/job-name={JOB}"}
    async with s.get(path, params=selector) as resp:
        rv = (await resp.json())["metadata"]["resourceVersion"]
    params = {**selector, "watch": "1", "resourceVersion": rv, "allowWatchBookmarks": "false"}
    async with s.get(path, params=params, timeout=aiohttp.ClientTimeout(total=None)) as resp:
        async for line in resp.content:
            event = json.loads(line)
            obj = event["object"]
            name = obj["metadata"]["name"]
            if event["type"] == "DELETED":
                into.pods.pop(name, None)
            else:
                if name not in into.pods and event["type"] == "ADDED":
                    into.ever += 1
                into.pods[name] = obj
            into.changed.set()


async def until(watch: PodWatch, done: Any, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not done():
        watch.changed.clear()
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(watch.changed.wait(), min(left, 1.0))
    return True


async def node_pods(s: aiohttp.ClientSession, base: str) -> int:
    async with s.get(f"{base}/api/v1/nodes") as resp:
        items = (await resp.json())["items"]
    return sum(int((n.get("status") or {}).get("allocatable", {}).get("pods", 0)) for n in items)


async def one_run(args: argparse.Namespace, replicas: int, run: int) -> JsonDict:
    here = Path(__file__).resolve()
    with tempfile.TemporaryDirectory(prefix="scale-bench-") as tmp:
        kubeconfig, stats = f"{tmp}/kubeconfig", f"{tmp}/stats.json"
        env = dict(os.environ)
        if args.tree:
            env["PYTHONPATH"] = str(Path(args.tree).resolve())
        command = [sys.executable, str(here), "--serve", kubeconfig, "--stats", stats]
        if args.profile:
            command += ["--profile", f"{args.profile}.{replicas}.{run}"]
        child = subprocess.Popen(command, env=env, cwd=args.tree or None)
        try:
            return await _measure(args, replicas, child, kubeconfig, stats)
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()


async def _measure(
    args: argparse.Namespace, replicas: int, child: subprocess.Popen[bytes], kubeconfig: str, stats: str
) -> JsonDict:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_plane import from_kubeconfig  # type: ignore[import-not-found]

    deadline = time.monotonic() + 60
    while not Path(kubeconfig).exists():
        if child.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("the plane did not start")
        await asyncio.sleep(0.1)
    plane = await from_kubeconfig(kubeconfig, None, None)
    out: JsonDict = {"replicas": replicas}
    timeout = args.timeout
    async with plane.admin.session() as s:
        capacity = await node_pods(s, plane.base)
        watch = PodWatch()
        watcher = asyncio.create_task(watch_pods(s, plane.base, watch))
        await asyncio.sleep(0.5)
        t0 = time.monotonic()
        async with s.post(
            f"{plane.base}/apis/kubeflow.org/v1/namespaces/{NAMESPACE}/jaxjobs", json=job_manifest(replicas)
        ) as resp:
            if resp.status >= 300:
                raise RuntimeError(f"create: {resp.status} {await resp.text()}")
        ok = await until(watch, lambda: watch.ever >= replicas, timeout)
        out["created"] = time.monotonic() - t0 if ok else None
        ok = ok and await until(watch, lambda: watch.placed() >= replicas, timeout)
        out["placed"] = time.monotonic() - t0 if ok else None
        out["running"], out["unschedulable"], out["capacity"] = (
            watch.running(),
            watch.unschedulable(),
            capacity,
        )
        out["peak_rss_created"] = proc_field_mb(child.pid, "VmHWM")
        t1 = time.monotonic()
        async with s.delete(
            f"{plane.base}/apis/kubeflow.org/v1/namespaces/{NAMESPACE}/jaxjobs/{JOB}",
            json={"propagationPolicy": "Background"},
        ) as resp:
            if resp.status >= 300:
                raise RuntimeError(f"delete: {resp.status} {await resp.text()}")
        ok = await until(watch, lambda: not watch.pods, timeout)
        out["delete"] = time.monotonic() - t1 if ok else None
        out["left"] = len(watch.pods)
        out["peak_rss"] = proc_field_mb(child.pid, "VmHWM")
        out["rss_after"] = proc_field_mb(child.pid, "VmRSS")
        watcher.cancel()
    child.send_signal(signal.SIGTERM)
    try:
        child.wait(timeout=120)
        figures = json.loads(Path(stats).read_text())
    except (subprocess.TimeoutExpired, OSError, ValueError):
        figures = {"plan_cpu": [], "stall": float("nan"), "gc": [float("nan")] * 2}
    cpu = figures["plan_cpu"]
    out["plans"] = len(cpu)
    out["plan_cpu_ms"] = statistics.median(cpu) * 1000 if cpu else float("nan")
    out["plan_cpu_total"] = sum(cpu)
    out["stall"] = figures["stall"]
    out["gc_s"], out["gc_full_s"] = figures["gc"]
    return out


def fmt_s(value: float | None, timeout: float) -> str:
    return f">{timeout:.0f} s" if value is None else f"{value:.1f} s"


def median(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if len(known) == len(values) else None


def report(rows: list[JsonDict], timeout: float) -> None:
    print(
        f"{'replicas':>8} {'created':>9} {'placed':>9} {'run/unsch':>10} {'plan CPU/event':>18} "
        f"{'plan total':>10} {'loop stall':>10} {'GC (full)':>14} {'peak RSS':>9} {'RSS after':>9} "
        f"{'delete':>9}"
    )
    for replicas in sorted({r["replicas"] for r in rows}):
        runs = [r for r in rows if r["replicas"] == replicas]

        def med(key: str, runs: list[JsonDict] = runs) -> float:
            return statistics.median(r[key] for r in runs)

        def phase(key: str, runs: list[JsonDict] = runs) -> str:
            return fmt_s(median([r[key] for r in runs]), timeout)

        print(
            f"{replicas:>8} {phase('created'):>9} {phase('placed'):>9} "
            f"{runs[0]['running']:>4}/{runs[0]['unschedulable']:<5} "
            f"{med('plan_cpu_ms'):>7.1f} ms x{med('plans'):<6.0f} {med('plan_cpu_total'):>8.1f} s "
            f"{med('stall'):>8.2f} s {med('gc_s'):>5.1f} ({med('gc_full_s'):.1f}) s "
            f"{med('peak_rss'):>6.0f} MB {med('rss_after'):>6.0f} MB {phase('delete'):>9}"
        )
    runs_per_size = len(rows) // max(1, len({r["replicas"] for r in rows}))
    print(
        f"medians of {runs_per_size} run(s); node capacity {rows[0]['capacity']} pods; load average "
        f"{statistics.median(r['load'] for r in rows):.2f} (median at the runs' starts), "
        f"{os.getloadavg()[0]:.2f} at the end"
    )


async def bench(args: argparse.Namespace) -> None:
    rows = []
    for replicas in [int(n) for n in args.replicas.split(",")]:
        for run in range(args.runs):
            load = os.getloadavg()[0]
            row = await one_run(args, replicas, run)
            row["load"] = load
            print(json.dumps(row), flush=True)
            rows.append(row)
    report(rows, args.timeout)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--replicas", default="1000,5000,10000")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per phase")
    parser.add_argument("--tree", help="run the plane from this source tree")
    parser.add_argument("--profile", help="cProfile the plane into OUT.<replicas>.<run>")
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    parser.add_argument("--stats", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.stats, args.profile)
    else:
        asyncio.run(bench(args))


if __name__ == "__main__":
    main()
