"""Operator throughput and memory against an API server: the embedded one, or any server a
kubeconfig names (issue 3 and issue 10; upstream's figures: docs/upstream-behaviour.md#client-rate-limits,
#caches). Prints figures; asserts nothing.

    python benchmarks/operator_bench.py [--sizes 1,100,1000] [--rss-pods 10000]
    python benchmarks/operator_bench.py --kubeconfig /tmp/cp/kubeconfig [--context C] [--server-pids P,P]

Three processes: this driver, the API server, and the operator (the real `Manager` with its
default `RuntimeConfig`, reaching the server over HTTP). With `--kubeconfig` the server is whatever
the kubeconfig names (no kubelet needed: pods stay Pending, the benchmark counts the objects it
sees created on a watch); its CPU is read from /proc when it runs on this machine (bench_plane.py).

Measured:
* create-to-children: PyTorchJob (Master 1 + Worker N-1) created -> all N pods and N services
  seen ADDED on a watch; median of --runs runs;
* the raw create rate of the same server with a plain aiohttp client (128 in flight, 2N objects),
  and the operator's rate (2N / create-to-children) as a fraction of it; raw and operator runs
  alternate, and the CPU each process spent per object shows which one is the bottleneck;
* the operator's RSS with 10,000 cached pods vs an empty operator;
* the server's own figures: creates/s, and watch fan-out to 10 watchers;
* against a real server: what API Priority and Fairness did to the measured requests.

Every measurement runs in a namespace of its own, deleted (and waited for) when it is done.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import aiohttp
import orjson

ROOT = Path(__file__).resolve().parent.parent
# Children get PYTHONPATH (this tree, or --baseline's), which then decides where kubetrain comes from.
for _path in (ROOT, ROOT / "benchmarks") if not os.environ.get("PYTHONPATH") else (ROOT / "benchmarks",):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from bench_plane import (  # noqa: E402
    ChildProcess,
    Plane,
    apf_delta,
    apf_snapshot,
    drop_service_account,
    from_kubeconfig,
    proc_rss_mb,
    request,
    use_service_account,
)

JsonDict = dict[str, Any]
JOB_LABEL = "training.kubeflow.org/job-name"
OPERATOR_LABEL = "training.kubeflow.org/operator-name"
RAW_IN_FLIGHT = 128
# (2N - 30) / 20 s at upstream's defaults (docs/upstream-behaviour.md#client-rate-limits)
UPSTREAM_1000_S = 98.0
RUN_ID = uuid.uuid4().hex[:6]
Meters = dict[str, Callable[[], float | None]]
"""CPU-seconds readers by name, read when a timed measurement starts and ends."""


# ---- child processes ----------------------------------------------------------------------------


def serve_apiserver(profile: str | None) -> None:
    """Child: run the embedded API server and print its URL and kubeconfig (its token and CA)."""
    from kubetrain.embedded.apiserver import EmbeddedAPIServer

    async def main() -> None:
        server = EmbeddedAPIServer(history_size=200_000)
        url = await server.start()
        with tempfile.TemporaryDirectory(prefix="operator-bench-") as tmp:
            kubeconfig = server.write_kubeconfig(Path(tmp) / "kubeconfig")
            print(json.dumps({"url": url, "pid": os.getpid(), "kubeconfig": str(kubeconfig)}), flush=True)
            stop = asyncio.Event()
            asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
            await stop.wait()
            await server.stop()

    run_profiled(main, profile)


def run_operator(args: argparse.Namespace) -> None:
    """Child: run the Manager with its default settings until SIGTERM; print when synced, and its
    request and retry counts when stopped (retries are where 429s from the server show)."""
    from prometheus_client import CollectorRegistry

    from kubetrain.runtime import KubeClient, Manager, RuntimeConfig

    async def main() -> None:
        client = await KubeClient.from_kubeconfig(args.kubeconfig, args.context, qps=args.kube_api_qps)
        manager = Manager(client, RuntimeConfig(), registry=CollectorRegistry())
        started = time.perf_counter()
        await manager.start()
        synced = time.perf_counter() - started
        print(json.dumps({"ready": True, "sync_s": synced, "pid": os.getpid()}), flush=True)
        stop = asyncio.Event()
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
        await stop.wait()
        await manager.stop(drain_timeout=2.0)
        print(
            json.dumps(
                {
                    "requests": client.requests_total,
                    "retries": client.retries_total,
                    "connections": client.connections_opened,
                }
            ),
            flush=True,
        )
        await client.close()

    run_profiled(main, args.profile)


def run_raw(args: argparse.Namespace) -> None:
    """Child: the raw client, a plain aiohttp client in a process of its own (as the operator is).

    Answers one JSON line per request line on stdin: `warm` opens its connections to a namespace
    before the clock starts, `go` sends the creates and answers when all were answered.
    """

    async def main() -> None:
        plane = await from_kubeconfig(args.kubeconfig, args.context, None)
        identity, base = plane.admin, plane.base
        loop = asyncio.get_running_loop()
        async with identity.session(RAW_IN_FLIGHT + 4) as s:
            print(json.dumps({"ready": True, "pid": os.getpid()}), flush=True)
            while line := await loop.run_in_executor(None, sys.stdin.readline):
                msg = json.loads(line)
                where = NsRef(msg["ns"], msg["owner"])
                if msg["op"] == "warm":
                    await warm(s, f"{base}{where.path('pods')}", RAW_IN_FLIGHT)
                else:
                    await raw_creates(s, base, where, msg["n"])
                print(json.dumps({"ok": True, "429": RAW_429[0]}), flush=True)

    asyncio.run(main())


def run_profiled(main: Callable[[], Coroutine[Any, Any, None]], profile: str | None) -> None:
    """asyncio.run(main()), under cProfile writing to `profile` when given."""
    if profile:
        import cProfile

        cProfile.runctx("asyncio.run(main())", globals(), {"asyncio": asyncio, "main": main}, profile)
    else:
        asyncio.run(main())


class Child(ChildProcess):
    script = Path(__file__)


# ---- the driver's HTTP -------------------------------------------------------------------------

RAW_429: list[int] = [0, 0]
"""429 Too Many Requests answers (retried after Retry-After) this process got, and the raw client."""


async def post(s: aiohttp.ClientSession, url: str, obj: JsonDict) -> None:
    body = json.dumps(obj)
    while True:
        async with s.post(url, data=body, headers={"Content-Type": "application/json"}) as r:
            if r.status == 429:
                RAW_429[0] += 1
                await asyncio.sleep(float(r.headers.get("Retry-After", "1")))
                continue
            if r.status >= 300:
                raise RuntimeError(f"POST {url}: {r.status} {await r.text()}")
            await r.read()
            return


async def list_rv(s: aiohttp.ClientSession, base: str, path: str) -> str:
    async with s.get(f"{base}{path}", params={"limit": "1"}) as r:
        return str((await r.json())["metadata"]["resourceVersion"])


WATCH_RESTARTS: list[int] = [0]
"""Watches of the driver the server ended early (kube-apiserver closes a watcher that does not keep
up); each was resumed from the last resourceVersion seen."""


async def count_added(
    s: aiohttp.ClientSession, base: str, path: str, rv: str, selector: str, want: int, ready: asyncio.Event
) -> float:
    """Watch from `rv` until `want` distinct objects were ADDED; return the monotonic time of the
    last one. A watch the server ends early is resumed from the last resourceVersion seen."""
    seen: set[str] = set()
    while True:
        params = {"watch": "true", "resourceVersion": rv, "labelSelector": selector, "timeoutSeconds": "600"}
        async with s.get(f"{base}{path}", params=params, timeout=aiohttp.ClientTimeout(total=None)) as r:
            if r.status != 200:
                raise RuntimeError(f"watch {path}: {r.status} {await r.text()}")
            ready.set()
            async for line in r.content:
                if not line.strip():
                    continue
                event = orjson.loads(line)
                meta = (event.get("object") or {}).get("metadata") or {}
                if event.get("type") == "ERROR":
                    raise RuntimeError(f"watch on {path}: {event.get('object')}")
                rv = meta.get("resourceVersion", rv)
                if event.get("type") == "ADDED":
                    seen.add(meta.get("name", ""))
                    if len(seen) >= want:
                        return time.monotonic()
        WATCH_RESTARTS[0] += 1
        if WATCH_RESTARTS[0] > 1000:
            raise RuntimeError(f"watch on {path} keeps ending: {len(seen)}/{want} seen")


class NsRef:
    """Where objects go: a namespace and the owner its pods point to."""

    def __init__(self, name: str, owner: JsonDict) -> None:
        self.name = name
        self.owner = owner

    def path(self, plural: str) -> str:
        return f"/api/v1/namespaces/{self.name}/{plural}"


class Namespace(NsRef):
    """A namespace of one measurement: created with an owner ConfigMap, deleted and waited for.

    Pods are owned by the ConfigMap: pods owned by a missing object would be garbage-collected at
    once, as on a real cluster.
    """

    def __init__(self, plane: Plane, tag: str) -> None:
        super().__init__(f"bench-{RUN_ID}-{tag}", {})
        self.plane = plane

    async def __aenter__(self) -> Namespace:
        base, name = self.plane.base, self.name
        async with self.plane.admin.session() as s:
            body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
            await request(s, "POST", f"{base}/api/v1/namespaces", body)
            if await has_service_accounts(self.plane):
                await wait_for(s, f"{base}/api/v1/namespaces/{name}/serviceaccounts/default", present=True)
            cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bench-owner"}}
            made = await request(s, "POST", f"{base}/api/v1/namespaces/{name}/configmaps", cm)
        uid = made["metadata"]["uid"]
        self.owner = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "name": "bench-owner",
            "uid": uid,
            "controller": True,
        }
        return self

    async def __aexit__(self, *exc: object) -> None:
        await delete_namespace(self.plane, self.name)


async def delete_namespace(plane: Plane, name: str) -> None:
    """Delete a namespace and wait until the server's namespace controller has emptied it.

    Its pods are deleted first, at once (grace period 0) and by one collection delete: without
    a kubelet kube-apiserver still deletes them gracefully, and kube-controller-manager then
    takes minutes over 10,000 terminating pods (its pod GC force-deletes them one by one).
    """
    async with plane.admin.session() as s:
        url = f"{plane.base}/api/v1/namespaces/{name}"
        # Jobs first: an operator seeing its pods go while the job stays recreates them, and on a
        # Terminating namespace each try fails (403) and is retried: thousands of requests.
        jobs = f"{plane.base}/apis/kubeflow.org/v1/namespaces/{name}/pytorchjobs"
        await request(s, "DELETE", jobs, {"propagationPolicy": "Background"}, ok=(404,))
        await wait_for_empty(s, jobs)
        for plural in ("pods", "services"):
            body = {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0}
            # A collection of 10,000 may outlast the request timeout (504, or the connection is
            # closed); the server goes on, and the namespace deletion below finishes the job.
            with contextlib.suppress(aiohttp.ClientError, TimeoutError):
                await request(s, "DELETE", f"{url}/{plural}", body, ok=(404, 405, 504))
        await request(s, "DELETE", url, ok=(404,))
        await wait_for(s, url, present=False, seconds=600)


async def wait_for_empty(s: aiohttp.ClientSession, url: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        async with s.get(url, params={"limit": "1"}) as r:
            if r.status == 404 or not (await r.json()).get("items"):
                return
        await asyncio.sleep(0.1)
    raise RuntimeError(f"{url} still lists objects after {seconds:.0f} s")


async def wait_for(s: aiohttp.ClientSession, url: str, present: bool, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        async with s.get(url) as r:
            await r.read()
            if (r.status == 200) == present:
                return
        await asyncio.sleep(0.1)
    raise RuntimeError(f"{url} still {'absent' if present else 'present'} after {seconds:.0f} s")


_HAS_SA: list[bool] = []


async def has_service_accounts(plane: Plane) -> bool:
    """Does the server run a ServiceAccount controller (so pods wait for the namespace's account)?"""
    if not _HAS_SA:
        url = f"{plane.base}/api/v1/namespaces/default/serviceaccounts/default"
        async with plane.admin.session() as s, s.get(url) as r:
            await r.read()
            _HAS_SA.append(r.status == 200)
    return _HAS_SA[0]


def pod(ns: NsRef, name: str, labels: dict[str, str], i: int) -> JsonDict:
    """A pod shaped like the operator's (labels, ownerRef, env, ports): realistic cache entries."""
    env = [{"name": f"VAR_{k}", "value": f"value-{k}-{i}"} for k in range(8)]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": ns.name,
            "labels": labels,
            "ownerReferences": [dict(ns.owner)],
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


def service(ns: NsRef, name: str, labels: dict[str, str]) -> JsonDict:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": ns.name, "labels": labels},
        "spec": {"clusterIP": "None", "selector": labels, "ports": [{"name": "p", "port": 23456}]},
    }


async def warm(s: aiohttp.ClientSession, url: str, connections: int) -> None:
    """Open `connections` keep-alive connections (TLS handshakes) before the clock starts: the
    operator's pool is warm too."""

    async def one() -> None:
        async with s.get(url, params={"limit": "1"}) as r:
            await r.read()

    await asyncio.gather(*(one() for _ in range(connections)))


async def raw_creates(s: aiohttp.ClientSession, base: str, ns: NsRef, n_objects: int) -> None:
    """`n_objects` creates, half pods, half services, RAW_IN_FLIGHT at a time."""
    labels = {"bench": "raw"}
    sem = asyncio.Semaphore(RAW_IN_FLIGHT)

    async def one(i: int) -> None:
        async with sem:
            if i % 2 == 0:
                await post(s, base + ns.path("pods"), pod(ns, f"raw-{i}", labels, i))
            else:
                await post(s, base + ns.path("services"), service(ns, f"raw-{i}", labels))

    await asyncio.gather(*(one(i) for i in range(n_objects)))


async def raw_create_rate(
    plane: Plane, ns: Namespace, n_objects: int, meters: Meters, raw: Child
) -> tuple[float, dict[str, float]]:
    """Objects/s for `n_objects` creates by the raw client (its own process, the operator's identity).

    Timed exactly as the operator is: from the first create until the last object is seen ADDED
    on the same two watches, so the server does the same watch work in both measurements.
    """
    await raw.ask({"op": "warm", "ns": ns.name, "owner": ns.owner})

    async def creates() -> None:
        reply = await raw.ask({"op": "go", "ns": ns.name, "owner": ns.owner, "n": n_objects})
        RAW_429[1] = reply["429"]

    pods, services = (n_objects + 1) // 2, n_objects // 2
    seconds, cpu = await time_until_seen(plane, ns, "bench=raw", pods, services, creates, meters)
    return n_objects / seconds, cpu


async def time_until_seen(
    plane: Plane,
    ns: Namespace,
    selector: str,
    pods: int,
    services: int,
    start: Callable[[], Coroutine[Any, Any, None]],
    meters: Meters,
) -> tuple[float, dict[str, float]]:
    """Seconds from calling `start` until `pods` pods and `services` services matching `selector`
    were seen ADDED on two watches opened before it, and the CPU seconds each meter read meanwhile
    (set-up such as opening the watches and warming connections is outside both)."""
    wanted = [(ns.path("pods"), selector, pods), (ns.path("services"), selector, services)]
    return await time_until_added(plane, wanted, start, meters)


async def time_until_added(
    plane: Plane,
    wanted: list[tuple[str, str, int]],
    start: Callable[[], Coroutine[Any, Any, None]],
    meters: Meters,
) -> tuple[float, dict[str, float]]:
    """time_until_seen for any collections: (path, label selector, count) each, one watch each."""
    base = plane.base
    async with plane.admin.session(4 + 2 * len(wanted)) as s:
        rvs = [await list_rv(s, base, path) for path, _, _ in wanted]
        ready = [asyncio.Event() for _ in wanted]
        watches = [
            asyncio.create_task(count_added(s, base, path, rv, selector, count, event))
            for (path, selector, count), rv, event in zip(wanted, rvs, ready, strict=True)
        ]
        await asyncio.wait_for(asyncio.gather(*(e.wait() for e in ready)), timeout=60)
        cpu0 = {k: read() for k, read in meters.items()}
        started = time.monotonic()
        await start()
        done = await asyncio.wait_for(asyncio.gather(*watches), timeout=600)
        cpu = {k: read() for k, read in meters.items()}
        deltas = {k: v - v0 for k, v in cpu.items() if (v0 := cpu0[k]) is not None and v is not None}
        return max(done) - started, deltas


def pytorch_job(ns: Namespace, name: str, replicas: int) -> JsonDict:
    template = {"spec": {"containers": [{"name": "pytorch", "image": "busybox:1"}]}}
    specs: JsonDict = {"Master": {"replicas": 1, "template": template}}
    if replicas > 1:
        specs["Worker"] = {"replicas": replicas - 1, "template": template}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name, "namespace": ns.name},
        "spec": {"pytorchReplicaSpecs": specs},
    }


async def create_to_children(
    plane: Plane, ns: Namespace, name: str, replicas: int, meters: Meters
) -> tuple[float, dict[str, float]]:
    """Seconds from the job's create (by the kubeconfig's user) until N pods and N services were
    seen ADDED."""

    async def create() -> None:
        async with plane.admin.session(4) as s:
            url = f"{plane.base}/apis/kubeflow.org/v1/namespaces/{ns.name}/pytorchjobs"
            await post(s, url, pytorch_job(ns, name, replicas))

    return await time_until_seen(plane, ns, f"{JOB_LABEL}={name}", replicas, replicas, create, meters)


async def fan_out(plane: Plane, ns: Namespace, watchers: int, n_pods: int) -> tuple[float, float]:
    """(events delivered/s over all watchers, creates/s while they watch)."""
    base = plane.base
    async with plane.admin.session(RAW_IN_FLIGHT + watchers + 4) as s:
        rv = await list_rv(s, base, ns.path("pods"))
        ready = [asyncio.Event() for _ in range(watchers)]
        tasks = [
            asyncio.create_task(count_added(s, base, ns.path("pods"), rv, "bench=fanout", n_pods, e))
            for e in ready
        ]
        await asyncio.gather(*(e.wait() for e in ready))
        sem = asyncio.Semaphore(RAW_IN_FLIGHT)

        async def one(i: int) -> None:
            async with sem:
                await post(s, base + ns.path("pods"), pod(ns, f"fanout-{i}", {"bench": "fanout"}, i))

        started = time.monotonic()
        await asyncio.gather(*(one(i) for i in range(n_pods)))
        created = time.monotonic()
        last = max(await asyncio.gather(*tasks))
        return watchers * n_pods / (last - started), n_pods / (created - started)


async def bulk_pods(plane: Plane, ns: Namespace, count: int) -> None:
    labels_of = lambda i: {OPERATOR_LABEL: "pytorchjob-controller", JOB_LABEL: f"cached-{i // 10}"}  # noqa: E731
    async with plane.admin.session(RAW_IN_FLIGHT) as s:
        sem = asyncio.Semaphore(RAW_IN_FLIGHT)

        async def one(i: int) -> None:
            async with sem:
                await post(s, plane.base + ns.path("pods"), pod(ns, f"cached-{i}", labels_of(i), i))

        await asyncio.gather(*(one(i) for i in range(count)))


async def install_crds(plane: Plane, texts: list[str] | None = None) -> None:
    """Install CRDs (YAML texts; default: the six v1 replica-spec kinds') and wait until served."""
    import yaml

    from kubetrain.api.crds import generate
    from kubetrain.kinds.registry import REPLICA_SPEC_KINDS
    from kubetrain.runtime import KubeClient
    from kubetrain.runtime.crds import install_crds as install

    assert plane.kubeconfig is not None
    client = await KubeClient.from_kubeconfig(plane.kubeconfig, plane.context, qps=0)
    async with client:
        crds = texts or generate(REPLICA_SPEC_KINDS.values()).values()
        await install(client, [yaml.safe_load(t) for t in crds])


# ---- the run ------------------------------------------------------------------------------------


def fmt(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


def spread(values: list[float], scale: float = 1.0, unit: str = "") -> str:
    """`median (min-max)` of `values` times `scale`."""
    med = statistics.median(values) * scale
    return f"{med:.0f}{unit} ({min(values) * scale:.0f}-{max(values) * scale:.0f})"


def baselines(args: argparse.Namespace) -> list[str]:
    return [d for d in (args.baseline or "").split(",") if d]


def progress(line: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {line} ({load()})", file=sys.stderr, flush=True)


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


async def make_plane(args: argparse.Namespace) -> tuple[Plane, Child | None]:
    """The plane to measure, and the embedded server's child process when we started one."""
    if args.kubeconfig:
        return await from_kubeconfig(args.kubeconfig, args.context, args.server_pids), None
    server = Child("--role", "server", *(["--profile", args.profile_server] if args.profile_server else []))
    plane = await from_kubeconfig(server.info["kubeconfig"], None, str(server.proc.pid))
    plane.description = "embedded API server (own process)"
    plane.server_pids = {"embedded": server.proc.pid}
    plane.worker = None  # one identity: the kubeconfig's token
    return plane, server


async def memory_phase(plane: Plane, args: argparse.Namespace, qps: tuple[str, ...]) -> JsonDict:
    """RSS of an empty operator and of one with --rss-pods cached pods, --rss-runs starts each;
    with --baseline, the baseline tree's operator too, its starts alternating with ours."""
    trees: dict[str, str | None] = {"": None, **{d: d for d in baselines(args)}}
    out: JsonDict = {f"{k}{tree}": [] for tree in trees for k in ("empty", "loaded", "sync")}

    async def start(tree: str, phase: str) -> None:
        child = Child("--role", "operator", *plane.operator_args(), *qps, pythonpath=trees[tree])
        await asyncio.sleep(1.0)
        out[f"{phase}{tree}"].append(child.rss_mb())
        if phase == "loaded":
            out[f"sync{tree}"].append(child.info["sync_s"])
        child.stop()
        progress(f"operator of {tree or 'this tree'}, {phase}: {out[f'{phase}{tree}'][-1]:.1f} MB")

    for _ in range(args.rss_runs):
        for tree in trees:
            await start(tree, "empty")
    async with Namespace(plane, "rss") as ns:
        started = time.monotonic()
        await bulk_pods(plane, ns, args.rss_pods)
        out["bulk_s"] = time.monotonic() - started
        for _ in range(args.rss_runs):
            for tree in trees:
                await start(tree, "loaded")
    return out


async def rate_phase(plane: Plane, args: argparse.Namespace, operator: Child, raw: Child, n: int) -> JsonDict:
    """--runs alternating raw and operator runs at size n, each in its own namespace."""
    keys = ("raw", "time", "srv_raw", "srv_op", "op", "cli", "oth_raw", "oth_op")
    out: dict[str, list[float]] = {k: [] for k in keys}
    apf0 = await apf_snapshot(plane)
    meters: Meters = {
        "srv": plane.server_cpu_s,
        "oth": plane.other_cpu_s,
        "op": operator.cpu_s,
        "cli": raw.cpu_s,
    }
    for r in range(args.runs):
        # Raw and operator runs alternate: a slow patch of the machine hits both.
        async with Namespace(plane, f"raw{n}-{r}") as ns:
            rate, cpu = await raw_create_rate(plane, ns, 2 * n, meters, raw)
            out["raw"].append(rate)
            out["cli"].append(cpu["cli"] / (2 * n))
            for key in ("srv", "oth"):
                if key in cpu:
                    out[f"{key}_raw"].append(cpu[key] / (2 * n))
        async with Namespace(plane, f"op{n}-{r}") as ns:
            seconds, cpu = await create_to_children(plane, ns, f"bench-{n}", n, meters)
            out["time"].append(seconds)
            out["op"].append(cpu["op"] / (2 * n))
            progress(f"N={n} run {r + 1}: raw {rate:.0f}/s, operator {2 * n / seconds:.0f}/s")
            for key in ("srv", "oth"):
                if key in cpu:
                    out[f"{key}_op"].append(cpu[key] / (2 * n))
    return {**out, "apf": apf_delta(apf0, await apf_snapshot(plane))}


async def bench(args: argparse.Namespace) -> None:
    sizes = [int(x) for x in args.sizes.split(",") if x.strip()]
    plane, server = await make_plane(args)
    print(f"kubetrain operator benchmark -- python {sys.version.split()[0]}, {os.cpu_count()} CPUs, {load()}")
    print(f"server: {plane.description}")
    where = (
        ", ".join(f"{k} pid {v}" for k, v in plane.server_pids.items()) or "not on this machine: not reported"
    )
    print(f"server CPU from /proc of: {where}")
    if plane.other_pids:
        print("rest of the control plane (CPU reported apart): " + ", ".join(plane.other_pids))
    print("processes: API server, operator (Manager, default RuntimeConfig), and this driver, each separate;")
    limit = "unlimited, as kubetrain run/up" if not args.kube_api_qps else f"{args.kube_api_qps:g}"
    print(f"operator client QPS: {limit} (--kube-api-qps)")
    print(f"           on {os.cpu_count()} cores they still compete for CPU, so figures are a lower bound.")

    qps = ("--kube-api-qps", str(args.kube_api_qps))
    identity_ns = f"bench-{RUN_ID}-identity"
    rows: list[tuple[int, JsonDict]] = []
    operator_final: JsonDict = {}
    try:
        await install_crds(plane)
        if args.kubeconfig and args.identity == "service-account":
            async with plane.admin.session() as s:
                body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": identity_ns}}
                await request(s, "POST", f"{plane.base}/api/v1/namespaces", body)
            await use_service_account(plane, identity_ns)
        print(f"raw client and operator authenticate as: {plane.creates.name or 'the kubeconfig user'}\n")

        memory = await memory_phase(plane, args, qps)
        profile = ["--profile", args.profile] if args.profile else []
        operator = Child("--role", "operator", *plane.operator_args(), *qps, *profile)
        raw = Child("--role", "raw", *plane.operator_args())
        try:
            for n in sizes:
                rows.append((n, await rate_phase(plane, args, operator, raw, n)))
        finally:
            raw.stop()
            operator.stop()
            operator_final = operator.final
        fan_rate = fan_creates = 0.0
        if args.fanout_pods:
            async with Namespace(plane, "fanout") as ns:
                fan_rate, fan_creates = await fan_out(plane, ns, 10, args.fanout_pods)
        server_rss = " + ".join(f"{proc_rss_mb(p):.0f}" for p in plane.server_pids.values()) or "n/a"
    finally:
        if server is not None:
            server.stop()
        elif args.kubeconfig and args.identity == "service-account":
            await drop_service_account(plane, identity_ns)
            await delete_namespace(plane, identity_ns)
    report(args, rows, memory, operator_final, fan_rate, fan_creates, server_rss)


def report(
    args: argparse.Namespace,
    rows: list[tuple[int, JsonDict]],
    memory: JsonDict,
    operator_final: JsonDict,
    fan_rate: float,
    fan_creates: float,
    server_rss: str,
) -> None:
    med = statistics.median
    print(f"create-to-children (PyTorchJob Master 1 + Worker N-1; N pods + N services on a watch); {load()}")
    print("  medians over the runs, (min-max) in brackets")
    print(f"{'N':>6} {'runs':>4} {'median':>10} {'operator /s':>20} {'raw server /s':>20} {'fraction':>9}")
    for n, row in rows:
        rates = [2 * n / t for t in row["time"]]
        fraction = med(rates) / med(row["raw"])
        print(
            f"{n:>6} {len(row['time']):>4} {fmt(med(row['time'])):>10} {spread(rates):>20} "
            f"{spread(row['raw']):>20} {fraction:>8.0%}"
        )
    if any(n < 10 for n, _ in rows):
        print("(a small N measures latency, not rate: the operator adds one hop -- the job's watch event,")
        print(" a reconcile, its status write -- before the children; the rate target is for large N)")
    big = [row for n, row in rows if n == 1000]
    if big:
        t, raw = med(big[0]["time"]), med(big[0]["raw"])
        print(
            f"\n1,000 replicas: {t:.2f} s (target < 10 s; upstream at default QPS ~{UPSTREAM_1000_S:.0f} s,"
        )
        print(
            f"  {UPSTREAM_1000_S / t:.0f}x slower); fraction of the raw rate {2000 / t / raw:.0%}"
            " (target >= 90%)"
        )
    print(
        f"\nraw create rate: a plain aiohttp client in its own process, {RAW_IN_FLIGHT} in flight, 2N objects"
    )
    print("  (pods, services), timed like the operator: until the last is seen ADDED on the same watches")
    print("\nCPU per created object (µs, medians): the busier process is the bottleneck")
    print(
        f"{'N':>6} {'server, raw':>12} {'server, operator':>17} {'raw client':>11} {'operator':>9}"
        f" {'rest of plane raw/op':>21}"
    )
    for n, row in rows:
        us = {k: f"{med(v) * 1e6:.0f}" if v else "n/a" for k, v in row.items() if k != "apf"}
        rest = f"{us['oth_raw']}/{us['oth_op']}"
        print(f"{n:>6} {us['srv_raw']:>12} {us['srv_op']:>17} {us['cli']:>11} {us['op']:>9} {rest:>21}")
    if operator_final:
        print(
            f"operator client: {operator_final['requests']} requests on {operator_final['connections']} "
            f"connections (each a TLS handshake), {operator_final['retries']} retried "
            f"(429s from API Priority and Fairness would show here); raw client: {RAW_429[1]} answers 429,"
            f" driver {RAW_429[0]}; driver watches the server ended early: {WATCH_RESTARTS[0]}"
        )
    apf = [(n, row["apf"]) for n, row in rows if row["apf"]]
    if apf:
        print("\nAPI Priority and Fairness, per priority level, over each size's runs (server /metrics):")
        for n, lines in apf:
            print(f"  N = {n}:")
            for line in lines:
                print(f"    {line}")
    pods = args.rss_pods
    print(
        f"\noperator memory (RSS of the operator process after cache sync; median of {args.rss_runs} starts)"
    )
    for tree in ("", *baselines(args)):
        e, lo = memory[f"empty{tree}"], memory[f"loaded{tree}"]
        extra = med(lo) - med(e)
        if tree:
            print(f"  the operator of --baseline {tree}:")
        print(f"  empty operator:              {med(e):7.1f} MB  ({min(e):.1f}-{max(e):.1f})")
        print(
            f"  with {pods:,} cached pods:   {med(lo):7.1f} MB  ({min(lo):.1f}-{max(lo):.1f});"
            f" +{extra:.1f} MB = {extra * 1024 / pods:.2f} KiB per cached pod (target <= 2 KB)"
        )
        sync = med(memory[f"sync{tree}"])
        print(
            f"  cache sync of {pods:,} pods:   {sync:.2f} s (driver's bulk create {memory['bulk_s']:.2f} s)"
        )
    print("\nAPI server")
    if rows:
        print(f"  creates/s (raw, largest N):  {med(rows[-1][1]['raw']):7.0f} /s")
    print(
        f"  watch fan-out, 10 watchers:  {fan_rate:7.0f} events/s delivered ({args.fanout_pods} pods; "
        f"{fan_creates:.0f} creates/s meanwhile)"
    )
    print(f"  server RSS at the end:       {server_rss} MB")
    print(f"\n{load()}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--role", choices=("bench", "server", "operator", "raw"), default="bench")
    parser.add_argument(
        "--kubeconfig", help="measure the API server this kubeconfig names (default: embedded)"
    )
    parser.add_argument("--context", help="the kubeconfig context (default: its current-context)")
    parser.add_argument(
        "--server-pids",
        help="comma-separated pids of the server's processes on this machine (kube-apiserver, etcd) whose "
        "CPU counts as the server's; default: DIR/pids/ of a scripts/k8s-control-plane kubeconfig",
    )
    parser.add_argument(
        "--identity",
        choices=("service-account", "kubeconfig"),
        default="service-account",
        help="with --kubeconfig, who the raw client and the operator are: a ServiceAccount (subject to API "
        "Priority and Fairness, as a deployed operator) or the kubeconfig's user (an admin is APF-exempt)",
    )
    parser.add_argument("--sizes", default="1,100,1000")
    parser.add_argument("--runs", type=int, default=3, help="runs per size (medians are printed)")
    parser.add_argument("--rss-pods", type=int, default=10_000)
    parser.add_argument("--rss-runs", type=int, default=3, help="operator starts per memory figure")
    parser.add_argument("--fanout-pods", type=int, default=1_000)
    parser.add_argument(
        "--baseline",
        help="directories (comma-separated) each holding another kubetrain/ (e.g. `git archive HEAD~3 "
        "kubetrain | tar -x -C DIR`): their operators' RSS is measured too, for before/after",
    )
    parser.add_argument("--profile", help="cProfile the operator process into this file")
    parser.add_argument("--profile-server", help="cProfile the embedded API server process into this file")
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
        run_operator(args)
    elif args.role == "raw":
        run_raw(args)
    else:
        asyncio.run(bench(args))


if __name__ == "__main__":
    main()
