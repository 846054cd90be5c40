"""Node agent settings, with defaults chosen for a developer laptop and fast tests."""

from __future__ import annotations

import os
import shutil
import socket
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

from kubetrain.kube.quantity import quantity_value

from .gpus import GPU_RESOURCE, discover_gpus
from .images import ImageMap
from .logs import LogPolicy
from .network import NetworkMode


def _memory_bytes() -> int:
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 8 * 2**30


def _ephemeral_storage_bytes() -> int:
    """The kubelet's nodefs capacity: the size of the filesystem pods write to (here, the root's)."""
    try:
        return int(shutil.disk_usage("/").total)
    except OSError:
        return 100 * 2**30


def _hostname_address() -> str:
    """The Node's ``Hostname`` address: this machine's name when it resolves to loopback (where the
    kubelet API listens), else ``localhost``; kube-apiserver dials it first by default
    (``--kubelet-preferred-address-types`` starts with Hostname)."""
    name = socket.gethostname().lower()
    try:
        addresses = {str(info[4][0]) for info in socket.getaddrinfo(name, None, socket.AF_INET)}
    except OSError:
        return "localhost"
    return name if addresses and all(a.startswith("127.") for a in addresses) else "localhost"


@dataclass
class KubeletAPIConfig:
    """Where and how the kubelet API (`kubeletapi`) is served.

    ``port`` 0 picks a free one (the Node advertises whichever it got). Callers must present a
    client certificate signed by ``client_ca_file`` (kube-apiserver's
    ``--kubelet-client-certificate``); ``authorization_mode`` ``Webhook`` then asks the API
    server (SubjectAccessReview on nodes/proxy) as the kubelet does, ``AlwaysAllow`` does not.
    Without ``tls_cert_file`` a self-signed serving certificate is made at start (kube-apiserver
    does not verify it unless given ``--kubelet-certificate-authority``).
    """

    port: int = 10250
    address: str = "127.0.0.1"
    client_ca_file: Path | None = None
    client_ca_pem: str | None = None
    """Used when there is no ``client_ca_file`` (`kubetrain node` passes its kubeconfig's CA)."""
    tls_cert_file: Path | None = None
    tls_private_key_file: Path | None = None
    authorization_mode: str = "Webhook"


@dataclass
class NodeConfig:
    """How the local node presents itself and runs pods.

    ``root_dir`` holds pod sandboxes (volumes, logs) and hosts files; when None a temporary
    directory is made and removed at stop. Restart back-off is short and capped (the kubelet's
    10 s doubling to 5 min is too slow for a laptop loop) and resets after a container ran for
    ``backoff_reset`` seconds.
    """

    node_name: str = field(default_factory=lambda: os.environ.get("KUBETRAIN_NODE_NAME", "kubetrain-local"))
    root_dir: Path | None = None
    cpu: Fraction | int = field(default_factory=lambda: os.cpu_count() or 1)
    """The CPUs the node declares (`kubetrain run/up --node-cpu`: the machine's by default)."""
    memory_bytes: int = field(default_factory=_memory_bytes)
    overcommit: Fraction | float = 1
    """Scales the declared cpu and memory (`--node-overcommit`), so that YAML written for bigger
    nodes is scheduled on a laptop; processes then share the real CPUs."""
    gpus: tuple[str, ...] | None = None
    """Device ids advertised as ``nvidia.com/gpu`` (see `gpus`); None discovers the machine's."""
    ephemeral_storage_bytes: int = field(default_factory=_ephemeral_storage_bytes)
    """Reported as ``ephemeral-storage``; pods that request some (MPIJob v1's kubectl-delivery
    init container asks for 5Gi) are unschedulable on a node that reports none."""
    max_pods: int = 110
    hostname_address: str = field(default_factory=_hostname_address)
    labels: dict[str, str] = field(default_factory=dict)
    network: NetworkMode = "isolated"
    pod_cidr: str | None = None
    """None claims a free 127.N.0.0/16 for this agent (see PodCIDRLease); host mode ignores it."""
    cluster_domain: str = "cluster.local"
    image_map: ImageMap = field(default_factory=ImageMap.load)
    working_dir: Path = field(default_factory=Path.cwd)
    pods_dir: Path | None = None
    """Where each pod's own working directory lives (`workdir`): ``kubetrain run``/``up`` use
    ``<data dir>/pods``; None: ``<root>/workdirs``, which a temporary node root takes with it."""
    inherit_env: bool = True
    backoff_base: float = 1.0
    backoff_cap: float = 10.0
    backoff_reset: float = 60.0
    retry_interval: float = 1.0
    heartbeat_interval: float = 10.0
    """How often the Lease is renewed (the kubelet's renew interval, a quarter of its duration)."""
    status_report_interval: float = 60.0
    """How often the Node's conditions are re-posted when nothing changed (the Lease is the
    liveness signal; kubelet's nodeStatusReportFrequency is 5 min)."""
    lease_duration_seconds: int = 40
    shutdown_grace: float = 5.0
    container_log_max_size: int = field(
        default_factory=lambda: _env_quantity("KUBETRAIN_CONTAINER_LOG_MAX_SIZE", "10Mi")
    )
    """Rotate a container's log file when it would pass this size (kubelet's containerLogMaxSize)."""
    container_log_max_files: int = field(
        default_factory=lambda: _env_int("KUBETRAIN_CONTAINER_LOG_MAX_FILES", "5")
    )
    """Log files kept per container instance, the current one included (containerLogMaxFiles)."""
    kubelet_api: KubeletAPIConfig | None = None
    """None: no kubelet API (the embedded plane reads logs through `log_provider` instead)."""
    api_service: str | None = None
    """``host:port`` where pods reach the API server over TLS (the ``kubernetes`` Service of a
    cluster), given to every container as ``KUBETRAIN_API_SERVICE``: the node's ``kubectl`` and
    ``curl`` find the server there; None sets nothing."""
    kubernetes_service_variables: bool = False
    """Also set the kubelet's ``KUBERNETES_SERVICE_HOST``/``_PORT`` and ``KUBERNETES_PORT*`` to
    `api_service` (see `envresolve.kubernetes_service_env`). Off by default: programs that detect
    Kubernetes by ``KUBERNETES_SERVICE_HOST`` then read the token at the literal path
    ``/var/run/secrets/kubernetes.io/serviceaccount/token``, which a local pod's mounts do not
    provide (mount paths are rewritten in command, args and env, and for exec only), and fail: JAX's
    ``jax.distributed.initialize`` stops with "Service token file does not exist"."""

    @property
    def log_policy(self) -> LogPolicy:
        return LogPolicy(self.container_log_max_size, self.container_log_max_files)

    def gpu_devices(self) -> tuple[str, ...]:
        """The GPU inventory, discovered once (on first use) when not configured."""
        if self.gpus is None:
            self.gpus = discover_gpus()
        return self.gpus

    def allocatable(self) -> dict[str, Fraction]:
        """What the node offers the scheduler: declared size x overcommit, and its GPUs."""
        factor = Fraction(self.overcommit)
        if factor <= 0:
            raise ValueError(f"node overcommit must be above 0, got {self.overcommit}")
        out = {
            "cpu": Fraction(self.cpu) * factor,
            "memory": Fraction(int(self.memory_bytes * factor)),
            "ephemeral-storage": Fraction(self.ephemeral_storage_bytes),
        }
        if self.gpu_devices():
            out[GPU_RESOURCE] = Fraction(len(self.gpu_devices()))
        return out


def _env_quantity(name: str, default: str) -> int:
    """A byte size from the environment (``10Mi``), as `kubetrain up`/`run` take it."""
    text = os.environ.get(name, default)
    try:
        return int(quantity_value(text))
    except ValueError:
        raise ValueError(f"{name}={text!r} is not a size: use e.g. 10Mi") from None


def _env_int(name: str, default: str) -> int:
    text = os.environ.get(name, default)
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{name}={text!r} is not a whole number") from None
