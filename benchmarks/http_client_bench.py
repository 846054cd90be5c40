"""The operator's HTTP client against alternatives, on the operator's own request mix (issue 12 item 6).
Prints figures; asserts nothing.

    python benchmarks/http_client_bench.py [--kubeconfig DIR/kubeconfig] [--rounds 7] [--objects 300]

Clients, each in a process of its own (so its CPU is its own), all against the same server in the
same run, their rounds interleaved (the order rotates each round) so that the load other processes
put on the machine hits every client alike:

* `http11`: kubetrain's hand-written keep-alive pool (`kubetrain/kube/http11.py`), when the tree
  under test still has it (`--tree DIR` points at another tree, e.g. `git archive REV | tar -x`);
* `aiohttp`: aiohttp tuned as an operator would use it: one shared connector of 512 connections that
  keeps idle ones 60 s (TLS handshakes cost kube-apiserver 9-15% CPU when connections are dropped
  early), `DummyCookieJar`, `auto_decompress=False` (and no `Accept-Encoding`, so nothing arrives
  compressed), pre-encoded URLs, no `trust_env`;
* `httptools`: the same pool as `http11` with its response parser replaced by httptools' (llhttp);
  only when the tree has `http11` and httptools is installed.

One round, per client, in a namespace of its own: a watch on the namespace's pods (through aiohttp,
as the operator's watches are) is opened, then N pods are created (POST, 64 in flight), read (GET),
labelled (merge PATCH), listed three times in pages of 50, and deleted (DELETE, grace 0); the round
ends when the watch has seen every deletion. Pods name no scheduler, so nothing else writes them.
The figures are medians over --rounds rounds, after one warm-up round per client that opens its
connections: requests/s, client CPU per request, server CPU per request (kube-apiserver + etcd, or
the embedded server, read from /proc), connections opened per round (each a TLS handshake).
Against a real plane the kubeconfig's user (an admin, exempt from API Priority and Fairness) sends.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol

import aiohttp
import orjson
import yarl

ROOT = Path(__file__).resolve().parent.parent
for _path in (ROOT / "benchmarks",) if os.environ.get("PYTHONPATH") else (ROOT, ROOT / "benchmarks"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from bench_plane import ChildProcess, Identity, Plane, from_kubeconfig, proc_cpu_s  # noqa: E402

JsonDict = dict[str, Any]
IN_FLIGHT = 64
PAGE = 50
LISTS = 3
RUN_ID = uuid.uuid4().hex[:6]
ALL_CLIENTS = ("http11", "aiohttp", "httptools")


# ---- the clients --------------------------------------------------------------------------------


class Client(Protocol):
    connections: int

    async def send(
        self, method: str, target: str, body: bytes | None, content_type: str
    ) -> tuple[int, bytes]:
        """`target` is path?query; the status and the whole body."""
        ...

    async def close(self) -> None: ...


def _load_http11() -> Any:
    """`ConnectionPool` and `_Connection` of the tree under test: kube/ first, then runtime/ (older)."""
    for module in ("kubetrain.kube.http11", "kubetrain.runtime.http11"):
        try:
            return __import__(module, fromlist=["ConnectionPool"])
        except ImportError:
            continue
    return None


class PoolClient:
    """kubetrain's http11 pool, optionally with another connection (parser) class."""

    def __init__(self, identity: Identity, base: str, connection_class: type | None = None) -> None:
        http11 = _load_http11()
        assert http11 is not None, "this tree has no http11 module"
        self._pool = http11.ConnectionPool(base, ssl_context=identity.ssl, max_connections=512)
        if connection_class is not None:
            self._pool._connect = self._connector(connection_class)
        self._headers = {"Accept": "application/json", **identity.headers}

    def _connector(self, connection_class: type) -> Callable[[], Awaitable[Any]]:
        pool = self._pool

        async def connect() -> Any:
            loop = asyncio.get_running_loop()
            _, conn = await loop.create_connection(connection_class, pool._host, pool._port, ssl=pool._ssl)
            pool.connections_opened += 1
            return conn

        return connect

    @property
    def connections(self) -> int:
        return int(self._pool.connections_opened)

    async def send(
        self, method: str, target: str, body: bytes | None, content_type: str
    ) -> tuple[int, bytes]:
        headers = {**self._headers, "Content-Type": content_type} if body is not None else self._headers
        resp = await self._pool.request(method, target, headers, body, timeout=60.0)
        return resp.status, resp.body

    async def close(self) -> None:
        self._pool.close()


class AiohttpClient:
    """aiohttp as a tuned operator client would use it."""

    def __init__(self, identity: Identity, base: str) -> None:
        self._base = base
        self.connections = 0
        trace = aiohttp.TraceConfig()
        trace.on_connection_create_end.append(self._counted)
        connector = aiohttp.TCPConnector(
            limit=512, ssl=identity.ssl if identity.ssl is not None else True, keepalive_timeout=60.0
        )
        self._session = aiohttp.ClientSession(
            connector=connector,
            cookie_jar=aiohttp.DummyCookieJar(),
            auto_decompress=False,
            skip_auto_headers=("Accept-Encoding", "User-Agent"),
            headers={"Accept": "application/json", "User-Agent": "kubetrain", **identity.headers},
            trace_configs=[trace],
            timeout=aiohttp.ClientTimeout(total=60.0),
        )

    async def _counted(self, *_: Any) -> None:
        self.connections += 1

    async def send(
        self, method: str, target: str, body: bytes | None, content_type: str
    ) -> tuple[int, bytes]:
        url = yarl.URL(self._base + target, encoded=True)
        headers = {"Content-Type": content_type} if body is not None else None
        async with self._session.request(method, url, data=body, headers=headers) as resp:
            return resp.status, await resp.read()

    async def close(self) -> None:
        await self._session.close()


def httptools_connection_class() -> type:
    """http11's connection with httptools parsing the responses (same pool, same reuse rules)."""
    import httptools

    http11 = _load_http11()

    class HttptoolsConnection(http11._Connection):  # type: ignore[misc,name-defined]
        def __init__(self) -> None:
            super().__init__()
            self._parser = httptools.HttpResponseParser(self)

        async def exchange(self, payload: bytes, head_request: bool) -> Any:
            self._parser = httptools.HttpResponseParser(self)
            self._h: dict[str, str] = {}
            self._chunks: list[bytes] = []
            return await super().exchange(payload, head_request)

        def data_received(self, data: bytes) -> None:
            if self._waiter is None or self._waiter.done():
                self.close()
                return
            self.received_any = True
            try:
                self._parser.feed_data(data)
            except httptools.HttpParserError as exc:
                self.close()
                self._waiter.set_exception(http11.HTTPProtocolError(str(exc)))

        def on_header(self, name: bytes, value: bytes) -> None:
            key = name.decode("latin-1").lower()
            text = value.decode("latin-1")
            self._h[key] = f"{self._h[key]}, {text}" if key in self._h else text

        def on_body(self, body: bytes) -> None:
            self._chunks.append(body)

        def on_message_complete(self) -> None:
            self._keep_alive = self._parser.should_keep_alive()
            if self._waiter is not None and not self._waiter.done():
                status = self._parser.get_status_code()
                self._waiter.set_result(http11.Response(status, self._h, b"".join(self._chunks)))

        def eof_received(self) -> bool:
            self.closed = True
            return False

        def connection_lost(self, exc: Exception | None) -> None:
            self.closed = True
            if self._waiter is not None and not self._waiter.done():
                self._waiter.set_exception(http11.ServerDisconnected(f"server closed the connection: {exc}"))

        @property
        def reusable(self) -> bool:
            return not self.closed and self._keep_alive

    return HttptoolsConnection


def make_client(name: str, identity: Identity, base: str) -> Client:
    if name == "aiohttp":
        return AiohttpClient(identity, base)
    if name == "http11":
        return PoolClient(identity, base)
    return PoolClient(identity, base, httptools_connection_class())


def available_clients(wanted: list[str]) -> list[str]:
    have = []
    for name in wanted:
        if name in ("http11", "httptools") and _load_http11() is None:
            print(f"{name}: this tree has no http11 pool; left out", file=sys.stderr)
            continue
        if name == "httptools":
            try:
                import httptools  # noqa: F401
            except ImportError:
                print("httptools: not installed; left out", file=sys.stderr)
                continue
        have.append(name)
    return have


# ---- one round of the mix -----------------------------------------------------------------------


def pod(name: str) -> JsonDict:
    """A pod shaped like an operator's replica pod (labels, env, ports, requests), ~1.5 KB."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "labels": {
                "training.kubeflow.org/job-name": "bench",
                "training.kubeflow.org/operator-name": "pytorchjob-controller",
                "training.kubeflow.org/replica-type": "worker",
                "training.kubeflow.org/replica-index": name.rsplit("-", 1)[-1],
            },
        },
        "spec": {
            "schedulerName": "no-such-scheduler",
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "pytorch",
                    "image": "docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727",
                    "command": ["python3", "/opt/pytorch-mnist/mnist.py", "--epochs=1"],
                    "ports": [{"name": "pytorchjob-port", "containerPort": 23456}],
                    "env": [
                        {"name": "MASTER_PORT", "value": "23456"},
                        {"name": "MASTER_ADDR", "value": "bench-master-0"},
                        {"name": "WORLD_SIZE", "value": "300"},
                        {"name": "RANK", "value": name.rsplit("-", 1)[-1]},
                        {"name": "PYTHONUNBUFFERED", "value": "1"},
                    ],
                    "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                }
            ],
        },
    }


async def run_mix(
    client: Client, watcher: aiohttp.ClientSession, base: str, ns: str, n: int, tag: str
) -> int:
    """One round; the number of requests sent (the watch not counted)."""
    pods = f"/api/v1/namespaces/{ns}/pods"
    names = [f"p{tag}-{i}" for i in range(n)]
    seen_deleted = 0
    watch_open = asyncio.Event()
    all_deleted = asyncio.Event()

    async def watch() -> None:
        nonlocal seen_deleted
        url = yarl.URL(f"{base}{pods}?watch=true&allowWatchBookmarks=true&timeoutSeconds=600", encoded=True)
        async with watcher.get(url, timeout=aiohttp.ClientTimeout(total=None, sock_read=120)) as resp:
            watch_open.set()
            buf = b""
            async for chunk in resp.content.iter_any():
                buf += chunk
                *lines, buf = buf.split(b"\n")
                for line in lines:
                    event = orjson.loads(line)
                    name = event["object"].get("metadata", {}).get("name", "")
                    if event["type"] == "DELETED" and name.startswith(f"p{tag}-"):
                        seen_deleted += 1
                        if seen_deleted == n:
                            all_deleted.set()
                            return

    slots = asyncio.Semaphore(IN_FLIGHT)
    sent = 0

    async def call(
        method: str, target: str, body: Any = None, content_type: str = "application/json"
    ) -> bytes:
        nonlocal sent
        data = None if body is None else orjson.dumps(body)
        async with slots:
            status, raw = await client.send(method, target, data, content_type)
        sent += 1
        if status >= 300:
            raise RuntimeError(f"{method} {target}: {status} {raw[:300]!r}")
        orjson.loads(raw)  # the operator decodes every answer it reads
        return raw

    watch_task = asyncio.create_task(watch())
    await asyncio.wait_for(watch_open.wait(), 30)
    await asyncio.gather(*(call("POST", pods, pod(name)) for name in names))
    await asyncio.gather(*(call("GET", f"{pods}/{name}") for name in names))
    patch = {"metadata": {"labels": {"bench/patched": "true"}}}
    await asyncio.gather(
        *(call("PATCH", f"{pods}/{name}", patch, "application/merge-patch+json") for name in names)
    )
    for _ in range(LISTS):
        cont = ""
        while True:
            raw = await call("GET", f"{pods}?limit={PAGE}" + (f"&continue={cont}" if cont else ""))
            cont = (orjson.loads(raw).get("metadata") or {}).get("continue") or ""
            if not cont:
                break
    options = {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0}
    await asyncio.gather(*(call("DELETE", f"{pods}/{name}", options) for name in names))
    await asyncio.wait_for(all_deleted.wait(), 120)
    await watch_task
    return sent


def run_client(args: argparse.Namespace) -> None:
    """Child: one client; answers each `{"ns", "n", "tag"}` line with the round's figures."""

    async def main() -> None:
        plane = await from_kubeconfig(args.kubeconfig, args.context, None)
        client = make_client(args.client, plane.admin, plane.base)
        watcher = plane.admin.session(8)
        loop = asyncio.get_running_loop()
        print(json.dumps({"ready": True, "pid": os.getpid()}), flush=True)
        while line := await loop.run_in_executor(None, sys.stdin.readline):
            msg = json.loads(line)
            opened = client.connections
            cpu, wall = time.process_time(), time.perf_counter()
            try:
                sent = await run_mix(client, watcher, plane.base, msg["ns"], msg["n"], msg["tag"])
            except BaseException as exc:  # the stdin reader thread would keep a plain exit waiting
                print(f"{args.client}: {exc!r}", file=sys.stderr, flush=True)
                os._exit(1)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            out = {"wall": wall, "cpu": cpu, "requests": sent, "connections": client.connections - opened}
            print(json.dumps(out), flush=True)
        await client.close()
        await watcher.close()

    asyncio.run(main())


# ---- the driver ---------------------------------------------------------------------------------


class Child(ChildProcess):
    script = Path(__file__)


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


async def namespace(plane: Plane, name: str, create: bool, wait_for_sa: bool = False) -> None:
    async with plane.admin.session(4) as s:
        if create:
            body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
            async with s.post(f"{plane.base}/api/v1/namespaces", json=body) as r:
                if r.status >= 300:
                    raise RuntimeError(f"creating namespace {name}: {r.status} {await r.text()}")
            # A real plane admits pods only once the controller-manager made the default ServiceAccount.
            for _ in range(300 if wait_for_sa else 0):
                async with s.get(f"{plane.base}/api/v1/namespaces/{name}/serviceaccounts/default") as r:
                    if r.status == 200:
                        return
                await asyncio.sleep(0.1)
        else:
            async with s.delete(f"{plane.base}/api/v1/namespaces/{name}"):
                pass


async def bench(args: argparse.Namespace, kubeconfig: str, server_pids: dict[str, int], label: str) -> None:
    plane = await from_kubeconfig(kubeconfig, args.context, None)
    tree = str(Path(args.tree).resolve()) if args.tree else str(ROOT)
    os.environ["PYTHONPATH"] = tree
    sys.path.insert(0, tree)
    names = available_clients(args.clients.split(","))
    print(f"\n== {label}: {plane.base}; server CPU from /proc of {', '.join(server_pids) or 'nothing'}")
    print(f"   clients: {', '.join(names)} (tree {tree}); {args.objects} pods a round, {IN_FLIGHT} in flight")
    children: dict[str, Child] = {}
    spaces = {name: f"httpbench-{RUN_ID}-{name}" for name in names}
    figures: dict[str, dict[str, list[float]]] = {n: {} for n in names}

    def server_cpu() -> float:
        return sum(proc_cpu_s(p) for p in server_pids.values()) if server_pids else float("nan")

    try:
        for name in names:
            await namespace(plane, spaces[name], create=True, wait_for_sa=label.startswith("real"))
            children[name] = Child(
                "--role", "client", "--client", name, "--kubeconfig", kubeconfig, pythonpath=tree
            )
        for r in range(args.rounds + 1):  # round 0 warms every client up and is not counted
            order = names[r % len(names) :] + names[: r % len(names)]
            for name in order:
                before = server_cpu()
                out = await children[name].ask({"ns": spaces[name], "n": args.objects, "tag": f"{r}"})
                srv = server_cpu() - before
                if r == 0:
                    continue
                row = figures[name]
                for key, value in (
                    ("rate", out["requests"] / out["wall"]),
                    ("cpu_us", 1e6 * out["cpu"] / out["requests"]),
                    ("srv_us", 1e6 * srv / out["requests"]),
                    ("conns", float(out["connections"])),
                ):
                    row.setdefault(key, []).append(value)
            if r:
                print(
                    f"   [{time.strftime('%H:%M:%S')}] round {r} done ({load()})", file=sys.stderr, flush=True
                )
    finally:
        for child in children.values():
            child.stop()
        for space in spaces.values():
            await namespace(plane, space, create=False)
    report(names, figures)


def report(names: list[str], figures: dict[str, dict[str, list[float]]]) -> None:
    med = statistics.median

    def spread(values: list[float], fmt: str) -> str:
        return f"{med(values):{fmt}} ({min(values):{fmt}}-{max(values):{fmt}})"

    base = names[0]
    print(
        f"   medians of {len(figures[base]['rate'])} rounds (min-max); ratios vs {base} in this run; {load()}"
    )
    print(
        f"   {'client':<10} {'requests/s':>20} {'client CPU µs/req':>22} "
        f"{'server CPU µs/req':>22} {'conns/round':>12}"
    )
    for name in names:
        row = figures[name]
        print(
            f"   {name:<10} {spread(row['rate'], '.0f'):>20} {spread(row['cpu_us'], '.0f'):>22} "
            f"{spread(row['srv_us'], '.0f'):>22} {med(row['conns']):>12.0f}"
        )
    for name in names[1:]:
        rate = med(figures[name]["rate"]) / med(figures[base]["rate"])
        cpu = med(figures[name]["cpu_us"]) / med(figures[base]["cpu_us"])
        print(f"   {name} / {base}: requests/s x{rate:.2f}, client CPU per request x{cpu:.2f}")


async def main_async(args: argparse.Namespace) -> None:
    print(
        f"http client benchmark -- python {sys.version.split()[0]}, aiohttp {aiohttp.__version__}, "
        f"{os.cpu_count()} CPUs, {load()}"
    )
    if not args.no_embedded:
        server = subprocess.Popen(
            [sys.executable, str(ROOT / "benchmarks" / "operator_bench.py"), "--role", "server"],
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(Path(args.tree).resolve()) if args.tree else str(ROOT)},
        )
        assert server.stdout is not None
        info = json.loads(server.stdout.readline())
        try:
            await bench(args, info["kubeconfig"], {"embedded": info["pid"]}, "embedded API server")
        finally:
            server.terminate()
            server.wait()
    if args.kubeconfig:
        from bench_plane import _local_pids

        pids, _ = _local_pids(Path(args.kubeconfig), None)
        await bench(args, args.kubeconfig, pids, "real kube-apiserver")
    print(f"\n{load()}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--role", choices=("bench", "client"), default="bench")
    parser.add_argument("--client", choices=ALL_CLIENTS)
    parser.add_argument("--clients", default=",".join(ALL_CLIENTS), help="which, the first is the baseline")
    parser.add_argument(
        "--kubeconfig", help="also measure against this server (a scripts/k8s-control-plane DIR)"
    )
    parser.add_argument("--context")
    parser.add_argument("--no-embedded", action="store_true", help="only the --kubeconfig server")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--objects", type=int, default=300, help="pods a round")
    parser.add_argument("--tree", help="a directory holding the kubetrain/ to measure (default: this one)")
    args = parser.parse_args()
    if args.role == "client":
        run_client(args)
    else:
        asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
