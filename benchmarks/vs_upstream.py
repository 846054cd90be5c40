"""kubetrain's operator head to head with upstream's, on one real control plane (issue 11). Prints
figures; asserts nothing.

    python benchmarks/vs_upstream.py [--replicas 1000] [--runs 3] [--fast-runs 5] [--mpi-workers 100]
    python benchmarks/vs_upstream.py --replicas 5 --runs 1 --fast-runs 1 --rss-pods 0 --mpi-workers 0

Measured, each operator a process of its own watching one namespace (no two at once):

* create-to-pods of a PyTorchJob of N replicas (Master 1 + Worker N-1): from the job's create
  until its N pods and N Services were seen ADDED on a watch, under (a) upstream's training-operator
  at its default flags, (b) the same with kubetrain's client QPS/burst and worker count, (c)
  `kubetrain operator` at its defaults; and the raw create rate of the same server: a plain
  concurrent client creating the same 2N objects, timed the same way;
* the same for an MPIJob v2beta1 of --mpi-workers workers against mpi-operator (its N worker pods
  and the launcher's pod, which kube-controller-manager's Job controller makes from the operator's
  batch Job, and the workers' Service);
* each operator's CPU seconds per object it created, and the server's (kube-apiserver + etcd);
* each operator's RSS idle (its run's empty namespace) and with --rss-pods pods in its namespace
  (its caches hold them: upstream's informers cache every pod of a watched namespace).

Without --kubeconfig the benchmark starts its own plane (`scripts/k8s-control-plane`) and stops its
kube-scheduler: with no node the scheduler would write `Unschedulable` into every pod and post an
event for it, server work no operator asked for. Every operator and the raw client authenticate as
one ServiceAccount bound to cluster-admin (API Priority and Fairness treats them as a deployed
operator). All arms use kubetrain's CRDs (the same kinds and versions as upstream's; only the one
job object is validated against them). Runs are interleaved, the arms' order rotating each round,
so that the other load of the machine hits each alike; the load average is printed with each run.

The last line is `vs upstream N=<n>: kubetrain <s> s, upstream-default <s> s (<x> x), upstream-equal
<s> s (<x> x), raw <s> s (ratio <r>)`: each x is upstream's time over kubetrain's, ratio is the raw
client's time over kubetrain's (1.0: kubetrain creates as fast as the server takes creates).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for _path in (ROOT, ROOT / "benchmarks"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

import pytest  # noqa: E402
from bench_plane import (  # noqa: E402
    Plane,
    drop_service_account,
    from_kubeconfig,
    proc_cpu_s,
    proc_rss_mb,
    request,
    use_service_account,
)
from operator_bench import (  # noqa: E402
    JOB_LABEL,
    RAW_IN_FLIGHT,
    Child,
    Namespace,
    bulk_pods,
    delete_namespace,
    install_crds,
    load,
    post,
    progress,
    pytorch_job,
    raw_create_rate,
    time_until_added,
)
from peer_operators import KUBETRAIN, Arm, Running, arms  # noqa: E402

from tests.differential import peers  # noqa: E402

JsonDict = dict[str, Any]
PLANE_SCRIPT = ROOT / "scripts" / "k8s-control-plane"
CRDS = ROOT / "manifests" / "crds"
RAW = "raw"
SETTLE_S = 3.0
"""Seconds an operator idles after its caches synced before its RSS is read."""
MPI_IMAGE = "mpioperator/openmpi:v0.8.0"


@dataclass
class Sample:
    """One measured run of one arm."""

    seconds: float
    objects: int
    cpu: dict[str, float]
    rss_mb: float | None = None
    sync_s: float | None = None
    load1: float = 0.0


@dataclass
class Results:
    runs: dict[str, list[Sample]] = field(default_factory=dict)
    idle: dict[str, list[float]] = field(default_factory=dict)
    loaded: dict[str, list[float]] = field(default_factory=dict)
    loaded_sync: dict[str, list[float]] = field(default_factory=dict)

    def add(self, key: str, sample: Sample) -> None:
        self.runs.setdefault(key, []).append(sample)


# ---- the plane -----------------------------------------------------------------------------------


class OwnPlane:
    """A control plane of scripts/k8s-control-plane in a scratch directory, without its scheduler."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def __enter__(self) -> Path:
        up = subprocess.run(
            [str(PLANE_SCRIPT), "up", str(self.directory)], capture_output=True, text=True, timeout=3600
        )
        if up.returncode != 0:
            raise SystemExit(f"vs_upstream: {up.stderr.strip()}")
        pid_file = self.directory / "pids" / "kube-scheduler"
        scheduler = int(pid_file.read_text())
        os.kill(scheduler, signal.SIGTERM)
        with contextlib.suppress(ChildProcessError, ProcessLookupError):
            for _ in range(100):
                os.kill(scheduler, 0)
                time.sleep(0.1)
        pid_file.unlink()  # the plane runs without it from here on
        return self.directory / "kubeconfig"

    def __exit__(self, *exc: object) -> None:
        subprocess.run(
            [str(PLANE_SCRIPT), "down", str(self.directory)], capture_output=True, timeout=120, check=False
        )
        shutil.rmtree(self.directory, ignore_errors=True)  # etcd's data: hundreds of MB after a run


# ---- the jobs ------------------------------------------------------------------------------------


def mpi_job(ns: Namespace, name: str, workers: int) -> JsonDict:
    def template(name: str, command: list[str]) -> JsonDict:
        return {"spec": {"containers": [{"name": name, "image": MPI_IMAGE, "command": command}]}}

    return {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": name, "namespace": ns.name},
        "spec": {
            "slotsPerWorker": 1,
            "mpiReplicaSpecs": {
                "Launcher": {"replicas": 1, "template": template("launcher", ["mpirun", "hostname"])},
                "Worker": {"replicas": workers, "template": template("worker", ["/usr/sbin/sshd", "-De"])},
            },
        },
    }


@dataclass(frozen=True)
class Workload:
    """A job of one kind and size: how to make it, what its children are, how many objects the
    operator itself creates for it."""

    kind: str
    replicas: int

    def job(self, ns: Namespace, name: str) -> JsonDict:
        if self.kind == "pytorch":
            return pytorch_job(ns, name, self.replicas)
        return mpi_job(ns, name, self.replicas)

    def wanted(self, ns: Namespace, name: str) -> list[tuple[str, str, int]]:
        """(path, label selector, count) of the children that mark the job's pods as created."""
        selector = f"{JOB_LABEL}={name}"
        if self.kind == "pytorch":
            return [
                (ns.path("pods"), selector, self.replicas),
                (ns.path("services"), selector, self.replicas),
            ]
        # the workers and the launcher Job's pod; the workers' Service carries only `app`
        return [(ns.path("pods"), selector, self.replicas + 1), (ns.path("services"), f"app={name}", 1)]

    @property
    def objects(self) -> int:
        """Objects the operator creates: pods and services; for MPI the workers, their Service, the
        hostfile ConfigMap, the SSH Secret and the launcher Job."""
        return 2 * self.replicas if self.kind == "pytorch" else self.replicas + 4

    def plural(self) -> str:
        return (
            "apis/kubeflow.org/v1/namespaces/{ns}/pytorchjobs"
            if self.kind == "pytorch"
            else ("apis/kubeflow.org/v2beta1/namespaces/{ns}/mpijobs")
        )


# ---- one run -------------------------------------------------------------------------------------


async def prepare(plane: Plane, ns: Namespace) -> None:
    """The empty Secret upstream's cert rotator fills in the namespace it runs in."""
    body = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": peers.WEBHOOK_SECRET}}
    async with plane.admin.session(2) as s:
        await request(s, "POST", f"{plane.base}{ns.path('secrets')}", body)


async def start_synced(arm: Arm, plane: Plane, ns: Namespace, log_dir: Path) -> tuple[Running, float]:
    """Start `arm` in `ns` and wait for its caches. mpi-operator's health port is a fixed :8080, so a
    start that lost it to another process on the machine is retried."""
    kubeconfig = Path(plane.worker_kubeconfig or plane.kubeconfig or "")
    for attempt in range(10):
        running = arm.start(kubeconfig, ns.name, log_dir)
        try:
            return running, await running.wait_synced()
        except (AssertionError, RuntimeError):
            taken = "address already in use" in running.peer.log()
            running.stop()
            if not taken or attempt == 9:
                raise
            progress(f"{arm.name}: its port is taken, retrying in 5 s")
            await asyncio.sleep(5)
    raise AssertionError("unreachable")


async def operator_run(plane: Plane, arm: Arm, work: Workload, tag: str, log_dir: Path) -> Sample:
    """One create-to-pods run of `arm` in a namespace of its own; RSS read idle beforehand."""
    async with Namespace(plane, tag) as ns:
        await prepare(plane, ns)
        running, sync_s = await start_synced(arm, plane, ns, log_dir)
        try:
            await asyncio.sleep(SETTLE_S)
            rss = proc_rss_mb(running.pid)
            name = f"vs-{work.replicas}"
            url = f"{plane.base}/{work.plural().format(ns=ns.name)}"

            async def create() -> None:
                async with plane.admin.session(2) as s:
                    await post(s, url, work.job(ns, name))

            meters: dict[str, Callable[[], float | None]] = {
                "op": lambda: proc_cpu_s(running.pid),
                "srv": plane.server_cpu_s,
            }
            load1 = os.getloadavg()[0]
            seconds, cpu = await time_until_added(plane, work.wanted(ns, name), create, meters)
        finally:
            running.stop()
    return Sample(seconds, work.objects, cpu, rss, sync_s, load1)


async def raw_run(plane: Plane, raw: Child, n_objects: int, tag: str) -> Sample:
    meters: dict[str, Callable[[], float | None]] = {"op": raw.cpu_s, "srv": plane.server_cpu_s}
    async with Namespace(plane, tag) as ns:
        load1 = os.getloadavg()[0]
        rate, cpu = await raw_create_rate(plane, ns, n_objects, meters, raw)
    return Sample(n_objects / rate, n_objects, cpu, load1=load1)


# ---- the phases ----------------------------------------------------------------------------------


async def create_phase(
    plane: Plane,
    work: Workload,
    lineup: list[Arm],
    raw: Child | None,
    args: argparse.Namespace,
    results: Results,
    log_dir: Path,
) -> None:
    """Rounds of one run per arm, the order rotating; upstream at its defaults only in the first
    --runs rounds (minutes each at N = 1,000)."""
    entries: list[Arm | None] = [*lineup, *([None] if raw is not None else [])]
    for r in range(max(args.runs, args.fast_runs)):
        shift = r % len(entries)
        for arm in entries[shift:] + entries[:shift]:
            key = f"{work.kind}/{arm.name if arm else RAW}"
            if arm is not None and arm.name == "upstream-default" and r >= args.runs:
                continue
            if arm is None and raw is not None:
                sample = await raw_run(plane, raw, work.objects, f"raw-{r}")
            elif arm is not None:
                sample = await operator_run(plane, arm, work, f"{work.kind}-{arm.name}-{r}", log_dir)
            results.add(key, sample)
            progress(f"{key} N={work.replicas} run {r + 1}: {sample.seconds:.2f} s")


async def memory_phase(
    plane: Plane, lineup: list[Arm], args: argparse.Namespace, results: Results, log_dir: Path
) -> None:
    """Each operator started on a namespace holding --rss-pods pods shaped like an operator's."""
    async with Namespace(plane, "rss") as ns:
        await prepare(plane, ns)
        started = time.monotonic()
        await bulk_pods(plane, ns, args.rss_pods)
        progress(f"{args.rss_pods} pods created in {time.monotonic() - started:.1f} s")
        for _ in range(args.rss_runs):
            for arm in lineup:
                running, sync_s = await start_synced(arm, plane, ns, log_dir)
                try:
                    await asyncio.sleep(SETTLE_S)
                    results.loaded.setdefault(arm.operator, []).append(proc_rss_mb(running.pid))
                    results.loaded_sync.setdefault(arm.operator, []).append(sync_s)
                finally:
                    running.stop()
                progress(
                    f"{arm.operator} with {args.rss_pods} pods: {results.loaded[arm.operator][-1]:.1f} MB"
                )


# ---- the report ----------------------------------------------------------------------------------

med = statistics.median


def span(values: list[float], digits: int = 2) -> str:
    return f"{med(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def us_per_object(samples: list[Sample], key: str) -> str:
    values = [s.cpu[key] / s.objects * 1e6 for s in samples if key in s.cpu]
    return f"{med(values):.0f}" if values else "n/a"


def version_of(arm: Arm) -> str:
    """`training-operator v1.9.2` from the cache directory scripts/upstream-operators names."""
    if arm.binary is None:
        return KUBETRAIN
    return arm.binary.parent.name.rsplit("-", 1)[0].replace(f"{arm.operator}-", f"{arm.operator} ")


def create_table(work: Workload, lineup: list[Arm], results: Results) -> None:
    what = (
        f"PyTorchJob of {work.replicas} replicas (Master 1 + Worker {work.replicas - 1}): "
        f"{work.replicas} pods + {work.replicas} Services"
        if work.kind == "pytorch"
        else f"MPIJob v2beta1 of {work.replicas} workers: {work.replicas} worker pods + the launcher's pod"
        " + the workers' Service"
    )
    print(f"\ncreate-to-pods, {what}, seen ADDED on a watch; medians (min-max) of the runs")
    print(
        f"{'arm':<17} {'flags':<32} {'runs':>4} {'seconds':>22} {'objects/s':>10} {'vs kubetrain':>12}"
        f" {'operator CPU':>13} {'server CPU':>11} {'load':>5}"
    )
    print(
        f"{'':<17} {'':<32} {'':>4} {'':>22} {'':>10} {'':>12} {'µs/object':>13} {'µs/object':>11}"
        f" {'1-min':>5}"
    )
    ours = results.runs.get(f"{work.kind}/{KUBETRAIN}", [])
    ours_s = med([s.seconds for s in ours]) if ours else float("nan")
    rows: list[tuple[str, str]] = [(a.name, a.rates()) for a in lineup]
    if f"{work.kind}/{RAW}" in results.runs:
        rows.append((RAW, f"plain aiohttp, {RAW_IN_FLIGHT} in flight"))
    for name, flags in rows:
        samples = results.runs.get(f"{work.kind}/{name}", [])
        if not samples:
            continue
        seconds = [s.seconds for s in samples]
        rate = med([s.objects / s.seconds for s in samples])
        ratio = med(seconds) / ours_s
        loads = med([s.load1 for s in samples])
        print(
            f"{name:<17} {flags:<32} {len(samples):>4} {span(seconds):>22} {rate:>10.0f} {ratio:>11.2f}x"
            f" {us_per_object(samples, 'op'):>13} {us_per_object(samples, 'srv'):>11} {loads:>5.2f}"
        )
    note = "raw: CPU is the client's; " if work.kind == "pytorch" else ""
    print(f"  ({note}objects = what the operator creates: {work.objects}; vs kubetrain = time / kubetrain's)")


def memory_table(lineup: dict[str, Arm], results: Results, rss_pods: int) -> None:
    print(f"\noperator RSS (VmRSS, {SETTLE_S:.0f} s after its caches synced; medians of the starts)")
    print(
        f"{'operator':<26} {'idle MB':>9} {f'{rss_pods:,} pods MB':>16} {'KiB per cached pod':>19}"
        f" {'sync s':>7}"
    )
    for operator, arm in lineup.items():
        idle = results.idle.get(operator, [])
        loaded = results.loaded.get(operator, [])
        if not idle:
            continue
        if loaded:
            per_pod = (med(loaded) - med(idle)) * 1024 / rss_pods
            sync = med(results.loaded_sync[operator])
            print(
                f"{version_of(arm):<26} {med(idle):>9.1f} {med(loaded):>16.1f} {per_pod:>19.2f} {sync:>7.2f}"
            )
        else:
            print(f"{version_of(arm):<26} {med(idle):>9.1f} {'n/a':>16} {'n/a':>19} {'n/a':>7}")


def final_line(n: int, results: Results) -> str:
    def seconds(name: str) -> float:
        return med([s.seconds for s in results.runs[f"pytorch/{name}"]])

    ours, default, equal, raw = (seconds(a) for a in (KUBETRAIN, "upstream-default", "upstream-equal", RAW))
    return (
        f"vs upstream N={n}: kubetrain {ours:.2f} s, "
        f"upstream-default {default:.2f} s ({default / ours:.1f} x), "
        f"upstream-equal {equal:.2f} s ({equal / ours:.1f} x), raw {raw:.2f} s (ratio {raw / ours:.2f})"
    )


def report(args: argparse.Namespace, lineups: dict[str, list[Arm]], results: Results, wall: float) -> None:
    print(f"\nvs upstream -- python {sys.version.split()[0]}, {os.cpu_count()} CPUs; {load()}")
    print(
        "arms (flags that decide the create rate; read from each binary's --help, kubetrain's RuntimeConfig):"
    )
    for lineup in lineups.values():
        for arm in lineup:
            print(f"  {arm.name:<17} {version_of(arm):<26} {arm.rates()}")
    for kind, lineup in lineups.items():
        work = Workload(kind, args.replicas if kind == "pytorch" else args.mpi_workers)
        create_table(work, lineup, results)
    operators: dict[str, Arm] = {}
    for lineup in lineups.values():
        for arm in lineup:
            if arm.name != "upstream-equal":
                operators.setdefault(arm.operator, arm)
    if args.rss_pods:
        memory_table(operators, results, args.rss_pods)
    print(f"\nwall time {wall:.0f} s; {load()}")
    print(final_line(args.replicas, results))


# ---- the run -------------------------------------------------------------------------------------


def estimate_s(args: argparse.Namespace, lineups: dict[str, list[Arm]]) -> float:
    """Upstream at its defaults is bound by its client rate limit: objects / QPS per run."""
    total = 0.0
    for kind, lineup in lineups.items():
        work = Workload(kind, args.replicas if kind == "pytorch" else args.mpi_workers)
        qps = float(lineup[0].setting("kube-api-qps") or 1)
        total += args.runs * work.objects / qps
    return total


async def bench(args: argparse.Namespace, kubeconfig: Path, log_dir: Path) -> None:
    started = time.monotonic()
    plane = await from_kubeconfig(str(kubeconfig), args.context, args.server_pids)
    lineups = {"pytorch": arms("pytorch")}
    if args.mpi_workers:
        lineups["mpi"] = arms("mpi")
    print(f"vs upstream: N = {args.replicas}, plane {plane.base}; {load()}", flush=True)
    print(
        f"upstream at its default client rate needs ~{estimate_s(args, lineups):.0f} s over its runs;"
        " operator logs in " + str(log_dir),
        flush=True,
    )
    peers.ensure_serving_certificate()
    # kubetrain's CRDs, MPIJob's v1 and v2beta1 in one, as manifests/ ships them
    await install_crds(plane, [p.read_text() for p in sorted(CRDS.glob("kubeflow.org_*.yaml"))])
    identity_ns = f"vs-upstream-identity-{os.getpid()}"
    async with plane.admin.session(2) as s:
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": identity_ns}}
        await request(s, "POST", f"{plane.base}/api/v1/namespaces", body)
    results = Results()
    try:
        await use_service_account(plane, identity_ns)
        raw = Child("--role", "raw", *plane.operator_args())
        try:
            await create_phase(
                plane, Workload("pytorch", args.replicas), lineups["pytorch"], raw, args, results, log_dir
            )
        finally:
            raw.stop()
        if "mpi" in lineups:
            await create_phase(
                plane, Workload("mpi", args.mpi_workers), lineups["mpi"], None, args, results, log_dir
            )
        for kind, lineup in lineups.items():
            for arm in lineup:
                if arm.name != "upstream-equal":
                    idle = [s.rss_mb for s in results.runs.get(f"{kind}/{arm.name}", []) if s.rss_mb]
                    results.idle.setdefault(arm.operator, []).extend(idle)
        if args.rss_pods:
            memory_lineup = [lineups["pytorch"][0], *([lineups["mpi"][0]] if "mpi" in lineups else [])]
            await memory_phase(plane, [*memory_lineup, lineups["pytorch"][2]], args, results, log_dir)
    finally:
        await drop_service_account(plane, identity_ns)
        await delete_namespace(plane, identity_ns)
    report(args, lineups, results, time.monotonic() - started)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--replicas", type=int, default=1000, help="PyTorchJob replicas (N)")
    parser.add_argument("--runs", type=int, default=3, help="runs of upstream at its defaults (minutes each)")
    parser.add_argument("--fast-runs", type=int, default=5, help="runs of every other arm")
    parser.add_argument("--mpi-workers", type=int, default=100, help="MPIJob workers (0: no MPI part)")
    parser.add_argument("--rss-pods", type=int, default=10_000, help="cached pods for RSS (0: not measured)")
    parser.add_argument("--rss-runs", type=int, default=2, help="starts of each operator on those pods")
    parser.add_argument("--kubeconfig", help="an existing plane (default: start one, without its scheduler)")
    parser.add_argument("--context")
    parser.add_argument("--server-pids", help="as operator_bench.py's (default: DIR/pids/ of the plane)")
    args = parser.parse_args()
    if args.replicas < 2:
        parser.error("--replicas must be at least 2 (a Master and a Worker)")
    log_dir = Path(os.environ.get("TMPDIR", "/tmp")) / f"vs-upstream-{os.getpid()}"
    log_dir.mkdir(parents=True, exist_ok=True)
    try:
        if args.kubeconfig:
            asyncio.run(bench(args, Path(args.kubeconfig), log_dir))
        else:
            with OwnPlane(log_dir / "plane") as kubeconfig:
                asyncio.run(bench(args, kubeconfig, log_dir))
    except pytest.skip.Exception as skipped:  # an upstream binary is not built
        raise SystemExit(f"vs_upstream: {skipped.msg}") from None


if __name__ == "__main__":
    main()
