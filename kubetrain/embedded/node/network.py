"""Pod networking for local processes: one loopback IP per pod, names from Services, no root.

Replicas must reach each other by the names the operator injects (``<job>-worker-0``,
``<job>-worker-0.<ns>.svc`` in TF_CONFIG, ``MASTER_ADDR=<job>-master-0``) on the ports it
injects (every TF worker declares 2222, every PyTorch master 23456), for several replicas and
several jobs at once, without root. The choice, after trying both designs for real:

**Chosen: one real loopback address per pod + a bind shim + nss_wrapper.**

* Each pod gets its own address from ``127.244.0.0/16`` (Linux routes all of 127/8 to ``lo``).
* `netshim` (a 100-line ``LD_PRELOAD`` library) turns a wildcard bind (``0.0.0.0``/``[::]``) into
  a bind to the pod's address, and gives connections between pods the caller's pod address as
  source. Two TF workers on ``0.0.0.0:2222`` coexist; two PyTorch jobs on ``23456`` coexist.
* Samba's ``nss_wrapper`` (Debian ``libnss-wrapper``) answers ``getaddrinfo``/``gethostbyname``
  and ``gethostname`` from a hosts file this module keeps up to date from Services and Pods: each
  Service with a selector resolves, as a headless Service does, to its selected running pods' IPs,
  under ``<svc>`` (same namespace), ``<svc>.<ns>``, ``<svc>.<ns>.svc``,
  ``<svc>.<ns>.svc.cluster.local``; a pod with ``subdomain`` also gets
  ``<hostname>.<subdomain>.<ns>.svc[.cluster.local]``; and the pod's own hostname resolves to
  its IP. One file per namespace, so that short names resolve in their own namespace only.
  Every name is written twice, as ``a.b.c.d`` and as ``::ffff:a.b.c.d``, because nss_wrapper does
  not implement ``AI_V4MAPPED`` and PyTorch's c10d asks for IPv6 first and retries forever.
  Files are replaced atomically; nss_wrapper notices the replaced file on the next lookup, so a
  pod that starts before its peers resolves them as soon as they get an IP.
* ``GRPC_DNS_RESOLVER=native`` is set (unless the pod sets it) because gRPC's default c-ares
  resolver reads ``/etc/hosts`` and DNS itself and never asks nss_wrapper.

Verified with real programs: two Python processes each binding ``0.0.0.0:2222`` and talking by
service name; two concurrent ``torch.distributed`` gloo jobs (3 and 2 ranks, both on
``MASTER_PORT=23456``, ``MASTER_ADDR=<job>-master-0``); two gRPC servers on ``[::]:2222`` calling
each other by name; a pod reaching a host service on 127.0.0.1 (the API server) and the internet.

**Rejected: socket_wrapper** (Debian ``libsocket-wrapper``). It emulates IPs by turning every
``AF_INET`` socket into a Unix socket, which isolates ports perfectly, but then a pod can reach
nothing that is not itself wrapped: the API server on 127.0.0.1 fails with EHOSTUNREACH, the
internet with ENETUNREACH (so ``pip install`` in a pod command, which the upstream SDK generates,
breaks), and it caps the network at 64 addresses.

Limits (documented for users): programs that bypass libc (static Go binaries, raw syscalls) or
read ``/etc/hosts`` themselves do not see the names; an explicit bind to ``127.0.0.1`` is shared
by all pods (pods share the host's localhost); Service ``port``->``targetPort`` translation and
cluster IPs are not emulated (a name resolves straight to pod IPs, as for headless Services);
ports below the unprivileged limit are shifted by `PORT_OFFSET` for non-root users. Linux only;
elsewhere use mode ``host`` (every pod at 127.0.0.1, names unresolved).
"""

from __future__ import annotations

import ctypes.util
import fcntl
import glob
import ipaddress
import os
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from ipaddress import IPv4Network
from pathlib import Path
from typing import Literal

from .netshim import build_shim
from .preload import ShimUnavailable

NetworkMode = Literal["isolated", "host"]

DEFAULT_POD_CIDR = "127.244.0.0/16"
_CIDR_SECOND_OCTETS = range(244, 63, -1)  # 127.244/16 downward: every agent on a machine gets its own
HOST_IP = "127.0.0.1"
CLUSTER_DOMAIN = "cluster.local"
PORT_OFFSET = 40000


class PodCIDRLease:
    """A /16 of 127/8 held (by an flock) for one agent's lifetime.

    Two local planes on one machine (two `kubetrain run`s, parallel tests) must never hand out the
    same pod IP: their pods bind the same fixed ports (every TF worker: 2222). Each agent claims a
    free 127.N.0.0/16 (127.244 downward to 127.64); the lock dies with the process, so a crashed
    agent never leaks its range. Claims rotate: the search starts after the range the last claim
    took (kept in `LAST_CLAIM_FILE`), so a `kubetrain run` right after another does not reuse its
    addresses, whose ports may still be in TIME_WAIT (``Address already in use`` for a server on a
    fixed port, e.g. XGBoost's tracker).
    """

    LAST_CLAIM_FILE = "kubetrain-podnet-last"

    def __init__(self, cidr: str, handle: int | None) -> None:
        self.cidr = cidr
        self._handle = handle

    @classmethod
    def claim(cls, lock_dir: Path | None = None) -> PodCIDRLease:
        directory = lock_dir or Path(tempfile.gettempdir())
        octets = list(_CIDR_SECOND_OCTETS)
        after = cls._last_claimed(directory)
        start = octets.index(after) + 1 if after in octets else 0
        for octet in octets[start:] + octets[:start]:
            cidr = f"127.{octet}.0.0/16"
            try:
                handle = os.open(
                    directory / f"kubetrain-podnet-127.{octet}.lock", os.O_RDWR | os.O_CREAT, 0o666
                )
            except OSError:
                continue  # another user's lock file we cannot open: treat the range as taken
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(handle)
                continue
            cls._remember(directory, octet)
            return cls(cidr, handle)
        raise NetworkUnavailable(
            "every local pod address range (127.64-244.0.0/16) is in use by other agents"
        )

    @classmethod
    def _last_claimed(cls, directory: Path) -> int | None:
        try:
            return int((directory / cls.LAST_CLAIM_FILE).read_text().strip())
        except (OSError, ValueError):
            return None

    @classmethod
    def _remember(cls, directory: Path, octet: int) -> None:
        """Best effort (another user's file, a full disk): rotation only makes reuse rarer."""
        tmp = directory / f"{cls.LAST_CLAIM_FILE}.{os.getpid()}"
        try:
            tmp.write_text(f"{octet}\n")
            os.replace(tmp, directory / cls.LAST_CLAIM_FILE)
        except OSError:
            tmp.unlink(missing_ok=True)

    def release(self) -> None:
        if self._handle is not None:
            os.close(self._handle)
            self._handle = None


class NetworkUnavailable(RuntimeError):
    """Isolated pod networking cannot work on this machine; the message says what to install."""


def find_nss_wrapper() -> str | None:
    """The nss_wrapper library: ``$KUBETRAIN_NSS_WRAPPER``, the linker's cache, or common dirs."""
    explicit = os.environ.get("KUBETRAIN_NSS_WRAPPER")
    if explicit:
        return explicit if os.path.exists(explicit) else None
    found = ctypes.util.find_library("nss_wrapper")
    if found and os.path.isabs(found):
        return found
    for pattern in (
        "/usr/lib/*/libnss_wrapper.so*",
        "/usr/lib/libnss_wrapper.so*",
        "/usr/lib64/libnss_wrapper.so*",
        "/usr/local/lib/libnss_wrapper.so*",
    ):
        hits = sorted(glob.glob(pattern))
        if hits:
            return hits[0]
    return found


def unprivileged_port_start() -> int:
    """The lowest port a non-root process may bind (1024 unless the sysctl lowered it)."""
    if os.geteuid() == 0:
        return 0
    try:
        return int(Path("/proc/sys/net/ipv4/ip_unprivileged_port_start").read_text().strip())
    except (OSError, ValueError):
        return 1024


@dataclass(frozen=True)
class PodEndpoint:
    """What the hosts file needs to know about a local pod that has an address."""

    namespace: str
    name: str
    ip: str
    hostname: str
    subdomain: str
    labels: Mapping[str, str]


@dataclass(frozen=True)
class ServiceEntry:
    """A Service with a selector: its name resolves to the IPs of the pods it selects."""

    namespace: str
    name: str
    selector: Mapping[str, str]


class EndpointIndex:
    """The pods with an address, indexed by namespace and label, so a Service finds the pods it
    selects in O(selector) rather than by a scan of every pod: a 10,000-replica job has 10,000
    Services and, on one node, ~110 running pods."""

    def __init__(self) -> None:
        self.pods: dict[tuple[str, str], PodEndpoint] = {}
        self._by_label: dict[tuple[str, str, str], set[tuple[str, str]]] = {}
        self._subdomains: dict[tuple[str, str], int] = {}

    def put(self, pod: PodEndpoint) -> None:
        self.remove(pod.namespace, pod.name)
        key = (pod.namespace, pod.name)
        self.pods[key] = pod
        for label, value in pod.labels.items():
            self._by_label.setdefault((pod.namespace, label, value), set()).add(key)
        if pod.subdomain:
            sub = (pod.namespace, pod.subdomain)
            self._subdomains[sub] = self._subdomains.get(sub, 0) + 1

    def remove(self, namespace: str, name: str) -> PodEndpoint | None:
        pod = self.pods.pop((namespace, name), None)
        if pod is None:
            return None
        for label, value in pod.labels.items():
            bucket = self._by_label.get((namespace, label, value))
            if bucket is not None:
                bucket.discard((namespace, name))
                if not bucket:
                    del self._by_label[(namespace, label, value)]
        if pod.subdomain:
            sub = (namespace, pod.subdomain)
            self._subdomains[sub] -= 1
            if not self._subdomains[sub]:
                del self._subdomains[sub]
        return pod

    def selected(self, svc: ServiceEntry) -> list[PodEndpoint]:
        """The pods `svc` selects (none for an empty selector, as for a headless Service)."""
        if not svc.selector:
            return []
        buckets = []
        for label, value in svc.selector.items():
            bucket = self._by_label.get((svc.namespace, label, value))
            if not bucket:
                return []
            buckets.append(bucket)
        keys = set.intersection(*buckets) if len(buckets) > 1 else buckets[0]
        return [self.pods[key] for key in keys]

    def touches(self, svc: ServiceEntry) -> bool:
        """Whether `svc` names any pod here: it selects one, or is some pod's subdomain."""
        return (svc.namespace, svc.name) in self._subdomains or bool(self.selected(svc))


def render_hosts(
    namespace: str,
    pods: Iterable[PodEndpoint],
    services: Iterable[ServiceEntry],
    domain: str = CLUSTER_DOMAIN,
) -> str:
    """The hosts file seen by pods of `namespace` (pure: the same input gives the same text)."""
    index = EndpointIndex()
    for pod in pods:
        index.put(pod)
    return _render(namespace, index, {(s.namespace, s.name): s for s in services}, domain)


def _render(
    namespace: str,
    index: EndpointIndex,
    services: Mapping[tuple[str, str], ServiceEntry],
    domain: str,
) -> str:
    """`render_hosts` over an index: O(services x selector + pods), not O(services x pods)."""
    by_pod: dict[tuple[str, str], list[ServiceEntry]] = {}
    for svc in services.values():
        for pod in index.selected(svc):
            by_pod.setdefault((pod.namespace, pod.name), []).append(svc)
    lines = [f"{HOST_IP} localhost", "::1 localhost ip6-localhost ip6-loopback"]
    names_by_ip: dict[str, list[str]] = {}
    for key in sorted(index.pods):
        pod = index.pods[key]
        names: list[str] = []
        if pod.subdomain and (pod.namespace, pod.subdomain) in services:
            fq = f"{pod.hostname}.{pod.subdomain}.{pod.namespace}.svc"
            names += [f"{fq}.{domain}", fq, f"{pod.hostname}.{pod.subdomain}.{pod.namespace}"]
            if pod.namespace == namespace:
                names.append(f"{pod.hostname}.{pod.subdomain}")
        if pod.namespace == namespace:
            names.append(pod.hostname)
        for svc in sorted(by_pod.get(key, ()), key=lambda s: (s.namespace, s.name)):
            base = f"{svc.name}.{svc.namespace}"
            names += [f"{base}.svc.{domain}", f"{base}.svc", base]
            if svc.namespace == namespace:
                names.append(svc.name)
        if names:
            bucket = names_by_ip.setdefault(pod.ip, [])
            bucket.extend(n for n in dict.fromkeys(names) if n not in bucket)
    for ip, names in names_by_ip.items():
        lines.append(f"{ip} {' '.join(names)}")
    for ip, names in names_by_ip.items():
        lines.append(f"::ffff:{ip} {' '.join(names)}")
    return "\n".join(lines) + "\n"


class IPAllocator:
    """Hands out pod addresses round-robin, so a freed address is not reused soon after."""

    def __init__(self, cidr: str = DEFAULT_POD_CIDR) -> None:
        net = ipaddress.ip_network(cidr)
        if not isinstance(net, ipaddress.IPv4Network) or not net.subnet_of(IPv4Network("127.0.0.0/8")):
            raise ValueError(f"pod CIDR {cidr} must be an IPv4 range inside 127.0.0.0/8")
        self.cidr = cidr
        self._first = int(net.network_address) + 2  # .0 is the network, .1 is kept for the node
        self._size = max(0, net.num_addresses - 3)
        self._next = 0
        self._in_use: set[str] = set()

    def allocate(self) -> str:
        for _ in range(self._size):
            ip = str(ipaddress.IPv4Address(self._first + self._next % self._size))
            self._next += 1
            if ip not in self._in_use and ip != HOST_IP:
                self._in_use.add(ip)
                return ip
        raise NetworkUnavailable(f"no free pod IP left in {self.cidr}")

    def release(self, ip: str) -> None:
        self._in_use.discard(ip)


class PodNetwork:
    """Owns pod addresses, the per-namespace hosts files, and the env that puts a pod on the network."""

    def __init__(
        self,
        state_dir: Path,
        mode: NetworkMode = "isolated",
        pod_cidr: str = DEFAULT_POD_CIDR,
        cluster_domain: str = CLUSTER_DOMAIN,
        shim_cache: Path | None = None,
    ) -> None:
        self.mode: NetworkMode = mode
        self.pod_cidr = pod_cidr
        self.cluster_domain = cluster_domain
        self.dir = state_dir
        self.allocator = IPAllocator(pod_cidr)
        self._endpoints = EndpointIndex()
        self._services: dict[tuple[str, str], ServiceEntry] = {}
        self._written: dict[str, str] = {}
        self._preload: list[str] = []
        self._port_below = 0
        if mode == "isolated":
            nss = find_nss_wrapper()
            if not nss:
                raise NetworkUnavailable(
                    "kubetrain's local pod network needs nss_wrapper (Debian/Ubuntu: apt-get install "
                    "libnss-wrapper; Fedora: dnf install nss_wrapper), "
                    "or start the node with network mode 'host'"
                )
            try:
                shim = build_shim(shim_cache)
            except ShimUnavailable as err:
                raise NetworkUnavailable(str(err)) from err
            self._preload = [str(shim), nss]
            self._port_below = unprivileged_port_start()
        self.dir.mkdir(parents=True, exist_ok=True)

    # -- addresses --------------------------------------------------------------------------

    def assign(self) -> str:
        return HOST_IP if self.mode == "host" else self.allocator.allocate()

    def release(self, ip: str) -> None:
        if self.mode == "isolated":
            self.allocator.release(ip)

    # -- names ------------------------------------------------------------------------------

    def hosts_path(self, namespace: str) -> Path:
        return self.dir / f"hosts.{namespace}"

    def set_pod(self, pod: PodEndpoint) -> None:
        self._endpoints.put(pod)
        self._sync()

    def remove_pod(self, namespace: str, name: str) -> None:
        if self._endpoints.remove(namespace, name) is not None:
            self._sync()

    def set_service(self, svc: ServiceEntry) -> None:
        """Store `svc`; the files change only when it (or the version it replaces) names a pod
        here, so a big job's Services cost no rewrite while their pods wait to run."""
        old = self._services.get((svc.namespace, svc.name))
        if old == svc:
            return
        self._services[(svc.namespace, svc.name)] = svc
        if self._endpoints.touches(svc) or (old is not None and self._endpoints.touches(old)):
            self._sync()

    def remove_service(self, namespace: str, name: str) -> None:
        old = self._services.pop((namespace, name), None)
        if old is not None and self._endpoints.touches(old):
            self._sync()

    def ensure_namespace(self, namespace: str) -> None:
        """Write the namespace's file before a pod points nss_wrapper at it."""
        if namespace not in self._written:
            self._write(namespace)

    def _sync(self) -> None:
        namespaces = set(self._written) | {ns for ns, _ in self._endpoints.pods}
        for ns in namespaces:
            self._write(ns)

    def _write(self, namespace: str) -> None:
        if self.mode != "isolated":
            return
        text = _render(namespace, self._endpoints, self._services, self.cluster_domain)
        if self._written.get(namespace) == text:
            return
        path = self.hosts_path(namespace)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text)
        os.replace(tmp, path)  # nss_wrapper reopens a replaced file on its next lookup
        self._written[namespace] = text

    # -- process environment --------------------------------------------------------------------

    def pod_env(self, namespace: str, hostname: str, ip: str, base: Mapping[str, str]) -> dict[str, str]:
        """Variables to lay over the container's final env `base` to put it on the pod network.

        A user's own ``LD_PRELOAD`` is kept (after ours) and a pod's own ``GRPC_DNS_RESOLVER`` wins.
        """
        env: dict[str, str] = {}
        if self.mode != "isolated":
            return env
        self.ensure_namespace(namespace)
        preload = [p for p in (base.get("LD_PRELOAD") or "").split(":") if p]
        env.update(
            {
                "LD_PRELOAD": ":".join([*self._preload, *(p for p in preload if p not in self._preload)]),
                "NSS_WRAPPER_HOSTS": str(self.hosts_path(namespace)),
                "NSS_WRAPPER_HOSTNAME": hostname,
                "KUBETRAIN_POD_IP": ip,
                "KUBETRAIN_POD_CIDR": self.pod_cidr,
            }
        )
        if self._port_below > 0:
            env["KUBETRAIN_PORT_OFFSET"] = str(PORT_OFFSET)
            env["KUBETRAIN_PORT_OFFSET_BELOW"] = str(self._port_below)
        if "GRPC_DNS_RESOLVER" not in base:
            env["GRPC_DNS_RESOLVER"] = "native"
        return env
