"""Operator throughput and memory against the embedded API server (issue 3; spec
performance-reliability §1.4, §1.7, §5). Prints figures; asserts nothing.

    python benchmarks/operator_bench.py [--sizes 1,100,1000] [--rss-pods 10000]

Three processes: this driver, the API server, and the operator (the real `Manager` with its
default `RuntimeConfig`, reaching the server over HTTP). The server and the operator each get
their own process so they do not share one event loop, and so the operator's RSS is its own.

Measured:
* create-to-children: PyTorchJob (Master 1 + Worker N-1) created -> all N pods and N services
  seen ADDED on a watch; median of --runs runs;
* the raw create rate of the same server with a plain aiohttp client (128 in flight, 2N objects),
  and the operator's rate (2N / create-to-children) as a fraction of it; raw and operator runs
  alternate, and the CPU each process spent per object shows which one is the bottleneck;
* the operator's RSS with 10,000 cached pods vs an empty operator;
* the server's own figures: creates/s, and watch fan-out to 10 watchers.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

JsonDict = dict[str, Any]
NS = "default"
JOB_LABEL = "training.kubeflow.org/job-name"
OPERATOR_LABEL = "training.kubeflow.org/operator-name"
RAW_IN_FLIGHT = 128
UPSTREAM_1000_S = 98.0  # spec §1.4: (2N - 30) / 20 QPS at upstream's defaults


# ---- child processes ----------------------------------------------------------------------------


def serve_apiserver(profile: str | None) -> None:
    """Child: run the embedded API server and print its URL."""
    from kubetrain.embedded.apiserver import EmbeddedAPIServer

    async def main() -> None:
        server = EmbeddedAPIServer(history_size=200_000)
        url = await server.start()
        print(json.dumps({"url": url, "pid": os.getpid()}), flush=True)
        stop = asyncio.Event()
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
        await stop.wait()
        await server.stop()

    run_profiled(main, profile)


def run_operator(url: str, profile: str | None, qps: float) -> None:
    """Child: run the Manager with its default settings until SIGTERM; print when synced."""
    from prometheus_client import CollectorRegistry

    from kubetrain.runtime import KubeClient, Manager, RuntimeConfig

    async def main() -> None:
        client = KubeClient.for_url(url, qps=qps)
        manager = Manager(client, RuntimeConfig(), registry=CollectorRegistry())
        started = time.perf_counter()
        await manager.start()
        synced = time.perf_counter() - started
        print(json.dumps({"ready": True, "sync_s": synced, "pid": os.getpid()}), flush=True)
        stop = asyncio.Event()
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
        await stop.wait()
        await manager.stop(drain_timeout=2.0)
        await client.close()

    run_profiled(main, profile)


def run_profiled(main: Callable[[], Coroutine[Any, Any, None]], profile: str | None) -> None:
    """asyncio.run(main()), under cProfile writing to `profile` when given."""
    if profile:
        import cProfile

        cProfile.runctx("asyncio.run(main())", globals(), {"asyncio": asyncio, "main": main}, profile)
    else:
        asyncio.run(main())


class Child:
    """A child process of this script that prints one JSON line when it is ready."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, __file__, *args],
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"child {args} exited with {self.proc.wait()}")
        self.info: JsonDict = json.loads(line)

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def cpu_s(self) -> float:
        """User + system CPU seconds this child has used so far."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


# ---- the driver's HTTP -------------------------------------------------------------------------


@asynccontextmanager
async def session(limit: int = 256) -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=limit)) as s:
        yield s


async def post(s: aiohttp.ClientSession, url: str, obj: JsonDict) -> None:
    async with s.post(url, data=json.dumps(obj), headers={"Content-Type": "application/json"}) as r:
        if r.status >= 300:
            raise RuntimeError(f"POST {url}: {r.status} {await r.text()}")
        await r.read()


async def list_rv(s: aiohttp.ClientSession, base: str, path: str) -> str:
    async with s.get(f"{base}{path}", params={"limit": "1"}) as r:
        return str((await r.json())["metadata"]["resourceVersion"])


async def count_added(
    s: aiohttp.ClientSession, base: str, path: str, rv: str, selector: str, want: int, ready: asyncio.Event
) -> float:
    """Watch from `rv` until `want` ADDED events; return the monotonic time of the last one."""
    params = {"watch": "true", "resourceVersion": rv, "labelSelector": selector, "timeoutSeconds": "600"}
    seen = 0
    async with s.get(f"{base}{path}", params=params, timeout=aiohttp.ClientTimeout(total=None)) as r:
        ready.set()
        async for line in r.content:
            if not line.strip():
                continue
            if json.loads(line).get("type") == "ADDED":
                seen += 1
                if seen >= want:
                    return time.monotonic()
    raise RuntimeError(f"watch on {path} ended after {seen}/{want}")


OWNER: JsonDict = {}
"""ownerReference to a ConfigMap that lives for the whole run: pods owned by a missing object would
be garbage-collected at once, like on a real cluster."""


async def make_owner(base: str) -> None:
    async with session() as s:
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bench-owner", "namespace": NS}}
        async with s.post(f"{base}/api/v1/namespaces/{NS}/configmaps", json=body) as r:
            uid = (await r.json())["metadata"]["uid"]
    OWNER.update(apiVersion="v1", kind="ConfigMap", name="bench-owner", uid=uid, controller=True)


def pod(name: str, labels: dict[str, str], i: int) -> JsonDict:
    """A pod shaped like the operator's (labels, ownerRef, env, ports): realistic cache entries."""
    env = [{"name": f"VAR_{k}", "value": f"value-{k}-{i}"} for k in range(8)]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": NS,
            "labels": labels,
            "ownerReferences": [dict(OWNER)],
        },
        "spec": {
            "containers": [
                {
                    "name": "pytorch",
                    "image": "docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727",
                    "command": ["python3", "/opt/pytorch-mnist/mnist.py", "--epochs=1"],
                    "env": env,
                    "ports": [{"name": "pytorchjob-port", "containerPort": 23456}],
                }
            ],
            "restartPolicy": "OnFailure",
        },
    }


def service(name: str, labels: dict[str, str]) -> JsonDict:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": NS, "labels": labels},
        "spec": {"clusterIP": "None", "selector": labels, "ports": [{"name": "p", "port": 23456}]},
    }


async def raw_create_rate(base: str, n_objects: int, tag: str, in_flight: int = RAW_IN_FLIGHT) -> float:
    """Objects/s for `n_objects` creates (half pods, half services) with `in_flight` concurrent.

    Timed exactly as the operator is: from the first create until the last object is seen ADDED
    on the same two watches, so the server does the same watch work in both measurements.
    """
    labels = {"bench": tag}
    pods, services = (n_objects + 1) // 2, n_objects // 2

    async def creates(s: aiohttp.ClientSession) -> None:
        sem = asyncio.Semaphore(in_flight)

        async def one(i: int) -> None:
            async with sem:
                if i % 2 == 0:
                    await post(s, f"{base}/api/v1/namespaces/{NS}/pods", pod(f"{tag}-{i}", labels, i))
                else:
                    await post(s, f"{base}/api/v1/namespaces/{NS}/services", service(f"{tag}-{i}", labels))

        await asyncio.gather(*(one(i) for i in range(n_objects)))

    seconds = await time_until_seen(base, f"bench={tag}", pods, services, creates, in_flight)
    return n_objects / seconds


async def time_until_seen(
    base: str,
    selector: str,
    pods: int,
    services: int,
    start: Callable[[aiohttp.ClientSession], Coroutine[Any, Any, None]],
    in_flight: int = 0,
) -> float:
    """Seconds from calling `start` until `pods` pods and `services` services matching `selector`
    were seen ADDED on two watches opened before it."""
    async with session(in_flight + 8) as s:
        pods_path, svcs_path = f"/api/v1/namespaces/{NS}/pods", f"/api/v1/namespaces/{NS}/services"
        pods_rv, svcs_rv = await list_rv(s, base, pods_path), await list_rv(s, base, svcs_path)
        ready = [asyncio.Event(), asyncio.Event()]
        watches = [
            asyncio.create_task(count_added(s, base, pods_path, pods_rv, selector, pods, ready[0])),
            asyncio.create_task(count_added(s, base, svcs_path, svcs_rv, selector, services, ready[1])),
        ]
        await asyncio.gather(*(e.wait() for e in ready))
        started = time.monotonic()
        await start(s)
        done = await asyncio.wait_for(asyncio.gather(*watches), timeout=600)
        return max(done) - started


async def delete_collection(base: str, selector: str) -> None:
    async with session() as s:
        for path in ("pods", "services"):
            async with s.delete(
                f"{base}/api/v1/namespaces/{NS}/{path}", params={"labelSelector": selector}
            ) as r:
                await r.read()


def pytorch_job(name: str, replicas: int) -> JsonDict:
    template = {"spec": {"containers": [{"name": "pytorch", "image": "busybox:1"}]}}
    specs: JsonDict = {"Master": {"replicas": 1, "template": template}}
    if replicas > 1:
        specs["Worker"] = {"replicas": replicas - 1, "template": template}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"pytorchReplicaSpecs": specs},
    }


async def create_to_children(base: str, name: str, replicas: int) -> float:
    """Seconds from the job's create until N pods and N services were seen ADDED."""

    async def create(s: aiohttp.ClientSession) -> None:
        await post(s, f"{base}/apis/kubeflow.org/v1/namespaces/{NS}/pytorchjobs", pytorch_job(name, replicas))

    return await time_until_seen(base, f"{JOB_LABEL}={name}", replicas, replicas, create)


async def delete_job(base: str, name: str) -> None:
    async with session() as s:
        url = f"{base}/apis/kubeflow.org/v1/namespaces/{NS}/pytorchjobs/{name}"
        async with s.delete(url, json={"propagationPolicy": "Background"}) as r:
            await r.read()
        selector = f"{JOB_LABEL}={name}"
        for path in ("pods", "services"):  # wait for the garbage collector, so runs do not overlap
            for _ in range(600):
                async with s.get(
                    f"{base}/api/v1/namespaces/{NS}/{path}", params={"labelSelector": selector, "limit": "1"}
                ) as r:
                    if not (await r.json()).get("items"):
                        break
                await asyncio.sleep(0.1)


async def fan_out(base: str, watchers: int, n_pods: int) -> tuple[float, float]:
    """(events delivered/s over all watchers, creates/s while they watch)."""
    async with session(RAW_IN_FLIGHT + watchers + 4) as s:
        rv = await list_rv(s, base, f"/api/v1/namespaces/{NS}/pods")
        ready = [asyncio.Event() for _ in range(watchers)]
        tasks = [
            asyncio.create_task(
                count_added(s, base, f"/api/v1/namespaces/{NS}/pods", rv, "bench=fanout", n_pods, e)
            )
            for e in ready
        ]
        await asyncio.gather(*(e.wait() for e in ready))
        sem = asyncio.Semaphore(RAW_IN_FLIGHT)

        async def one(i: int) -> None:
            async with sem:
                await post(
                    s, f"{base}/api/v1/namespaces/{NS}/pods", pod(f"fanout-{i}", {"bench": "fanout"}, i)
                )

        started = time.monotonic()
        await asyncio.gather(*(one(i) for i in range(n_pods)))
        created = time.monotonic()
        last = max(await asyncio.gather(*tasks))
        return watchers * n_pods / (last - started), n_pods / (created - started)


async def bulk_pods(base: str, count: int) -> None:
    labels_of = lambda i: {OPERATOR_LABEL: "pytorchjob-controller", JOB_LABEL: f"cached-{i // 10}"}  # noqa: E731
    async with session(RAW_IN_FLIGHT) as s:
        sem = asyncio.Semaphore(RAW_IN_FLIGHT)

        async def one(i: int) -> None:
            async with sem:
                await post(s, f"{base}/api/v1/namespaces/{NS}/pods", pod(f"cached-{i}", labels_of(i), i))

        await asyncio.gather(*(one(i) for i in range(count)))


async def install_crds(base: str) -> None:
    import yaml

    from kubetrain.api.crds import generate
    from kubetrain.runtime import KubeClient
    from kubetrain.runtime.crds import install_crds as install

    async with KubeClient.for_url(base, qps=0) as client:
        await install(client, [yaml.safe_load(t) for t in generate().values()])


# ---- the run ------------------------------------------------------------------------------------


def fmt(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


async def bench(args: argparse.Namespace) -> None:
    sizes = [int(x) for x in args.sizes.split(",")]
    print(f"kubetrain operator benchmark -- python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    print("processes: API server, operator (Manager, default RuntimeConfig), and this driver, each separate;")
    limit = "unlimited, as kubetrain run/up" if not args.kube_api_qps else f"{args.kube_api_qps:g}"
    print(f"operator client QPS: {limit} (--kube-api-qps)")
    print(f"           on {os.cpu_count()} cores they still compete for CPU, so figures are a lower bound.\n")

    server = Child("--role", "server", *(["--profile", args.profile_server] if args.profile_server else []))
    base = server.info["url"]
    try:
        await install_crds(base)
        await make_owner(base)

        # Memory first, on a clean server.
        qps = ("--kube-api-qps", str(args.kube_api_qps))
        empty = Child("--role", "operator", "--url", base, *qps)
        await asyncio.sleep(1.0)
        rss_empty = empty.rss_mb()
        empty.stop()
        started = time.monotonic()
        await bulk_pods(base, args.rss_pods)
        bulk_s = time.monotonic() - started
        loaded = Child("--role", "operator", "--url", base, *qps)
        await asyncio.sleep(1.0)
        rss_loaded = loaded.rss_mb()
        sync_loaded = loaded.info["sync_s"]
        loaded.stop()
        await delete_collection(base, f"{OPERATOR_LABEL}=pytorchjob-controller")

        rows = []
        cpu: list[tuple[int, float, float, float]] = []
        operator = Child(
            "--role", "operator", "--url", base, *qps, *(["--profile", args.profile] if args.profile else [])
        )
        try:
            for n in sizes:
                # Raw and operator runs alternate, so a slow patch of the machine hits both.
                raws, times, server_cpus, operator_cpus, raw_cpus = [], [], [], [], []
                for r in range(args.runs):
                    s0 = server.cpu_s()
                    raws.append(await raw_create_rate(base, 2 * n, f"raw{n}-{r}"))
                    raw_cpus.append((server.cpu_s() - s0) / (2 * n))
                    await delete_collection(base, f"bench=raw{n}-{r}")
                    name = f"bench-{n}-{r}"
                    s0, o0 = server.cpu_s(), operator.cpu_s()
                    times.append(await create_to_children(base, name, n))
                    server_cpus.append((server.cpu_s() - s0) / (2 * n))
                    operator_cpus.append((operator.cpu_s() - o0) / (2 * n))
                    await delete_job(base, name)
                median = statistics.median(times)
                rows.append((n, args.runs, median, statistics.median(raws), 2 * n / median))
                med = statistics.median
                cpu.append((n, med(raw_cpus), med(server_cpus), med(operator_cpus)))
        finally:
            operator.stop()

        fan_rate, fan_creates = await fan_out(base, 10, args.fanout_pods)
        server_rss = server.rss_mb()
    finally:
        server.stop()

    print("create-to-children (PyTorchJob Master 1 + Worker N-1; N pods + N services on a watch)")
    print(f"{'N':>6} {'runs':>4} {'median':>10} {'operator':>13} {'raw server':>13} {'fraction':>9}")
    for n, runs, median, raw, rate in rows:
        print(f"{n:>6} {runs:>4} {fmt(median):>10} {rate:>9.0f} /s {raw:>9.0f} /s {rate / raw:>8.0%}")
    if any(r[0] < 10 for r in rows):
        print("(a small N measures latency, not rate: the operator adds one hop -- the job's watch event,")
        print(" a reconcile, its status write -- before the children; the rate target is for large N)")
    big = [r for r in rows if r[0] == 1000]
    if big:
        t, raw, rate = big[0][2], big[0][3], big[0][4]
        print(
            f"\n1,000 replicas: {t:.2f} s (target < 10 s; upstream at default QPS ~{UPSTREAM_1000_S:.0f} s,"
        )
        print(
            f"  {UPSTREAM_1000_S / t:.0f}x slower); fraction of the raw rate {rate / raw:.0%} (target >= 70%)"
        )
    print(f"\nraw create rate: plain aiohttp client, {RAW_IN_FLIGHT} in flight, 2N objects (pods, services),")
    print("  timed like the operator: until the last object is seen ADDED on the same watches")
    print("\nCPU per created object (µs, medians): the busier process is the bottleneck")
    print(f"{'N':>6} {'server, raw':>12} {'server, operator':>17} {'operator':>9}")
    for n, raw_cpu, server_cpu, operator_cpu in cpu:
        print(f"{n:>6} {raw_cpu * 1e6:>12.0f} {server_cpu * 1e6:>17.0f} {operator_cpu * 1e6:>9.0f}")
    extra = rss_loaded - rss_empty
    print("\noperator memory (RSS of the operator process, after cache sync)")
    print(f"  empty operator:              {rss_empty:7.1f} MB")
    print(
        f"  with {args.rss_pods:,} cached pods:   {rss_loaded:7.1f} MB  (+{extra:.1f} MB; target < +100 MB)"
    )
    print(
        f"  cache sync of {args.rss_pods:,} pods:   {sync_loaded:.2f} s (driver's bulk create {bulk_s:.2f} s)"
    )
    print("\nAPI server")
    print(f"  creates/s (raw, largest N):  {rows[-1][3]:7.0f} /s")
    print(
        f"  watch fan-out, 10 watchers:  {fan_rate:7.0f} events/s delivered ({args.fanout_pods} pods; "
        f"{fan_creates:.0f} creates/s meanwhile)"
    )
    print(f"  server RSS at the end:       {server_rss:7.1f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--role", choices=("bench", "server", "operator"), default="bench")
    parser.add_argument("--url")
    parser.add_argument("--sizes", default="1,100,1000")
    parser.add_argument("--runs", type=int, default=3, help="runs per size (medians are printed)")
    parser.add_argument("--rss-pods", type=int, default=10_000)
    parser.add_argument("--fanout-pods", type=int, default=1_000)
    parser.add_argument("--profile", help="cProfile the operator process into this file")
    parser.add_argument("--profile-server", help="cProfile the API server process into this file")
    parser.add_argument(
        "--kube-api-qps",
        type=float,
        default=0.0,
        help="the operator's client rate limit: 0 (unlimited) is what kubetrain run/up use against the "
        "embedded server; 500 is `kubetrain operator`'s default for real clusters",
    )
    args = parser.parse_args()
    if args.role == "server":
        serve_apiserver(args.profile)
    elif args.role == "operator":
        run_operator(args.url, args.profile, args.kube_api_qps)
    else:
        asyncio.run(bench(args))


if __name__ == "__main__":
    main()
