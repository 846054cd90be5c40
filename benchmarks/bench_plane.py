"""The API server operator_bench.py measures: how to reach it, who it is, and whose CPU is its CPU.

Two shapes: the embedded server the benchmark starts in its own process (reached through the
kubeconfig it writes: its token and CA), or any server a kubeconfig names (a real kube-apiserver,
`kubetrain up`, a remote cluster). Against a real server the server's CPU is read from /proc of
kube-apiserver and etcd when they run on this machine: the pids come from `DIR/pids/` when the
kubeconfig is `scripts/k8s-control-plane`'s `DIR/kubeconfig` (`DIR/env` sits next to it) or from
`--server-pids`; otherwise the server's CPU is not reported.

The measured creates (the raw client's and the operator's) can run as a ServiceAccount rather than
the kubeconfig's user: an admin in `system:masters` is classified into API Priority and Fairness'
`exempt` level, which never queues, so only a ServiceAccount sees the limits an operator deployed
from `manifests/` meets (flow schema `service-accounts`, priority level `workload-low`).
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import signal
import ssl
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import yaml

JsonDict = dict[str, Any]
PLANE_SERVER = ("kube-apiserver", "etcd")
PLANE_OTHERS = ("kube-controller-manager", "kube-scheduler")
APF_WAIT = "apiserver_flowcontrol_request_wait_duration_seconds"
APF_REJECTED = "apiserver_flowcontrol_rejected_requests_total"
APF_SEATS = "apiserver_flowcontrol_nominal_limit_seats"


def proc_cpu_s(pid: int) -> float:
    """User + system CPU seconds process `pid` has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def proc_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def proc_name(pid: int) -> str:
    return Path(f"/proc/{pid}/comm").read_text().strip()


class ChildProcess:
    """A child process of a benchmark script (`script`, set by a subclass) that prints one JSON line
    when it is ready and answers each JSON line it is sent with one."""

    script: Path
    root = Path(__file__).resolve().parent.parent

    def __init__(self, *args: str, pythonpath: str | None = None) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(self.script), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=self.root,
            env={**os.environ, "PYTHONPATH": pythonpath or str(self.root)},
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"child {args} exited with {self.proc.wait()}")
        self.info: JsonDict = json.loads(line)
        self.final: JsonDict = {}

    async def ask(self, message: JsonDict) -> JsonDict:
        """Send one JSON line and wait for the child's one-line answer (off the event loop)."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()
        line = await asyncio.to_thread(self.proc.stdout.readline)
        if not line:
            raise RuntimeError(f"child {self.proc.args!r} exited with {self.proc.wait()}")
        return dict(json.loads(line))

    def rss_mb(self) -> float:
        return proc_rss_mb(self.proc.pid)

    def cpu_s(self) -> float:
        return proc_cpu_s(self.proc.pid)

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            out, _ = self.proc.communicate(timeout=15)
            lines = [ln for ln in out.splitlines() if ln.startswith("{")]
            self.final = json.loads(lines[-1]) if lines else {}
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@dataclass
class Identity:
    """Who a request is: TLS settings (a client certificate is an identity) and auth headers."""

    ssl: ssl.SSLContext | None = None
    headers: dict[str, str] = field(default_factory=dict)
    name: str = "unauthenticated"

    def session(self, limit: int = 256) -> aiohttp.ClientSession:
        connector = aiohttp.TCPConnector(limit=limit, ssl=self.ssl if self.ssl is not None else True)
        return aiohttp.ClientSession(connector=connector, headers=self.headers)


@dataclass
class Plane:
    """An API server and the identities the benchmark uses against it."""

    base: str
    admin: Identity
    description: str
    kubeconfig: str | None = None
    context: str | None = None
    server_pids: dict[str, int] = field(default_factory=dict)
    other_pids: dict[str, int] = field(default_factory=dict)
    worker: Identity | None = None
    """The identity of the measured creates: the raw client and the operator (None: `admin`)."""
    worker_kubeconfig: str | None = None

    @property
    def creates(self) -> Identity:
        return self.worker or self.admin

    def server_cpu_s(self) -> float | None:
        """CPU seconds of the server's processes (API server + etcd), None when not on this machine."""
        if not self.server_pids:
            return None
        return sum(proc_cpu_s(p) for p in self.server_pids.values())

    def other_cpu_s(self) -> float | None:
        if not self.other_pids:
            return None
        return sum(proc_cpu_s(p) for p in self.other_pids.values())

    def operator_args(self) -> list[str]:
        """How the operator child reaches the server, as the worker identity."""
        if self.worker_kubeconfig:
            return ["--kubeconfig", self.worker_kubeconfig]
        assert self.kubeconfig is not None
        return ["--kubeconfig", self.kubeconfig, *(["--context", self.context] if self.context else [])]


async def from_kubeconfig(path: str, context: str | None, server_pids: str | None) -> Plane:
    """A Plane for the server `path` names, authenticated as its user."""
    from kubernetes_asyncio import config as k8s_config
    from kubernetes_asyncio.client import ApiClient, Configuration

    from kubetrain.kube.client import ssl_context

    cfg = Configuration()
    await k8s_config.load_kube_config(
        config_file=path, context=context, client_configuration=cfg, persist_config=False
    )
    base = str(cfg.host).rstrip("/")
    headers: dict[str, str] = {}
    async with ApiClient(cfg) as api:
        await api.update_params_for_auth(headers, [], ["BearerToken"])
    context_ssl = ssl_context(cfg) if base.startswith("https") else None
    admin = Identity(context_ssl, headers, "kubeconfig user")
    pids, others = _local_pids(Path(path), server_pids)
    plane = Plane(base, admin, f"API server at {base} (kubeconfig {path})", path, context, pids, others)
    plane.worker = Identity(_ca_only(cfg) if context_ssl is not None else None, {}, "")
    return plane


def _ca_only(cfg: Any) -> ssl.SSLContext:
    """TLS that trusts the server as the kubeconfig does, without its client certificate."""
    context = ssl.create_default_context(cafile=cfg.ssl_ca_cert)
    if not cfg.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


def _local_pids(kubeconfig: Path, flag: str | None) -> tuple[dict[str, int], dict[str, int]]:
    """(server pids, other control-plane pids) on this machine, from --server-pids or DIR/pids/."""
    if flag:
        pids = [int(p) for p in flag.split(",") if p.strip()]
        return {f"{proc_name(p)}[{p}]": p for p in pids}, {}
    directory = kubeconfig.resolve().parent
    if not (directory / "env").is_file() or not (directory / "pids").is_dir():
        return {}, {}

    def alive(names: tuple[str, ...]) -> dict[str, int]:
        found = {}
        for name in names:
            pid_file = directory / "pids" / name
            if pid_file.is_file():
                pid = int(pid_file.read_text().strip())
                if Path(f"/proc/{pid}").exists():
                    found[name] = pid
        return found

    return alive(PLANE_SERVER), alive(PLANE_OTHERS)


async def request(
    s: aiohttp.ClientSession, method: str, url: str, body: JsonDict | None = None, ok: tuple[int, ...] = ()
) -> JsonDict:
    """One JSON call; raises on a status >= 300 not in `ok`."""
    kwargs: dict[str, Any] = {"json": body} if body is not None else {}
    async with s.request(method, url, **kwargs) as r:
        if r.status >= 300 and r.status not in ok:
            raise RuntimeError(f"{method} {url}: {r.status} {await r.text()}")
        return dict(await r.json(content_type=None) or {}) if r.status < 300 else {"status": r.status}


async def use_service_account(plane: Plane, namespace: str, name: str = "kubetrain-bench") -> None:
    """Make a ServiceAccount bound to cluster-admin the worker identity; write a kubeconfig for it.

    Bound to cluster-admin rather than the operator's ClusterRole so that the raw client (pods and
    services) and the operator share one identity and one APF flow.
    """
    base = plane.base
    async with plane.admin.session() as s:
        await request(
            s,
            "POST",
            f"{base}/api/v1/namespaces/{namespace}/serviceaccounts",
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}},
        )
        binding = {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": f"{namespace}-{name}"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "cluster-admin",
            },
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}],
        }
        await request(s, "POST", f"{base}/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", binding)
        token_request = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": 7200},
        }
        reply = await request(
            s, "POST", f"{base}/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token", token_request
        )
    token = reply["status"]["token"]
    worker_ssl = plane.worker.ssl if plane.worker else None
    plane.worker = Identity(
        worker_ssl, {"Authorization": f"Bearer {token}"}, f"system:serviceaccount:{namespace}:{name}"
    )
    plane.worker_kubeconfig = _write_token_kubeconfig(plane, token)


async def drop_service_account(plane: Plane, namespace: str, name: str = "kubetrain-bench") -> None:
    async with plane.admin.session() as s:
        url = f"{plane.base}/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{namespace}-{name}"
        await request(s, "DELETE", url, ok=(404,))
    if plane.worker_kubeconfig:
        Path(plane.worker_kubeconfig).unlink(missing_ok=True)


def _write_token_kubeconfig(plane: Plane, token: str) -> str:
    """A kubeconfig for the ServiceAccount: the admin kubeconfig's cluster, the token as user."""
    raw = yaml.safe_load(Path(plane.kubeconfig or "").read_text())
    context_name = plane.context or raw.get("current-context")
    ctx = next(c["context"] for c in raw["contexts"] if c["name"] == context_name)
    cluster = next(c["cluster"] for c in raw["clusters"] if c["name"] == ctx["cluster"])
    cluster = dict(cluster)
    if "certificate-authority" in cluster:  # a relative path would break in the temp directory
        ca = Path(cluster.pop("certificate-authority"))
        ca = ca if ca.is_absolute() else Path(plane.kubeconfig or "").parent / ca
        cluster["certificate-authority-data"] = base64.b64encode(ca.read_bytes()).decode()
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "bench", "cluster": cluster}],
        "users": [{"name": "bench", "user": {"token": token}}],
        "contexts": [{"name": "bench", "context": {"cluster": "bench", "user": "bench"}}],
        "current-context": "bench",
    }
    fd, path = tempfile.mkstemp(prefix="kubetrain-bench-", suffix=".kubeconfig")
    with os.fdopen(fd, "w") as f:
        yaml.safe_dump(config, f)
    return path


# ---- API Priority and Fairness --------------------------------------------------------------------

ApfSnapshot = dict[tuple[str, str], float]


async def apf_snapshot(plane: Plane) -> ApfSnapshot | None:
    """APF counters by (figure, priority level) from the server's /metrics; None if it has none."""
    from prometheus_client.parser import text_string_to_metric_families

    async with plane.admin.session(4) as s, s.get(f"{plane.base}/metrics") as r:
        if r.status != 200:
            return None
        text = await r.text()
    if APF_WAIT not in text:
        return None
    out: ApfSnapshot = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            level = sample.labels.get("priority_level", "")
            if sample.name == f"{APF_WAIT}_count":
                key = ("executed" if sample.labels.get("execute") == "true" else "not executed", level)
            elif sample.name == f"{APF_WAIT}_sum":
                key = ("wait_s", level)
            elif sample.name == APF_REJECTED:
                key = ("rejected", level)
            elif sample.name == APF_SEATS:
                key = ("seats", level)
            else:
                continue
            out[key] = out.get(key, 0.0) + sample.value
    return out


def apf_delta(before: ApfSnapshot | None, after: ApfSnapshot | None) -> list[str]:
    """One line per priority level that saw requests between the snapshots."""
    if before is None or after is None:
        return []
    levels = sorted({lvl for (what, lvl) in after if what == "executed"})
    lines = []
    for level in levels:
        d = {
            w: after.get((w, level), 0.0) - before.get((w, level), 0.0)
            for w in ("executed", "wait_s", "rejected")
        }
        if d["executed"] <= 0 and d["rejected"] <= 0:
            continue
        mean_ms = 1000 * d["wait_s"] / d["executed"] if d["executed"] else 0.0
        seats = after.get(("seats", level), 0.0)
        lines.append(
            f"{level:<16} {d['executed']:>8.0f} requests, mean queue wait {mean_ms:6.2f} ms, "
            f"rejected {d['rejected']:.0f} (nominal seats {seats:.0f})"
        )
    return lines
