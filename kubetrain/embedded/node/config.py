"""Node agent settings, with defaults chosen for a developer laptop and fast tests."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from .images import ImageMap
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
    cpu: int = field(default_factory=lambda: os.cpu_count() or 1)
    memory_bytes: int = field(default_factory=_memory_bytes)
    ephemeral_storage_bytes: int = field(default_factory=_ephemeral_storage_bytes)
    """Reported as ``ephemeral-storage``; pods that request some (MPIJob v1's kubectl-delivery
    init container asks for 5Gi) are unschedulable on a node that reports none."""
    max_pods: int = 110
    labels: dict[str, str] = field(default_factory=dict)
    network: NetworkMode = "isolated"
    pod_cidr: str | None = None
    """None claims a free 127.N.0.0/16 for this agent (see PodCIDRLease); host mode ignores it."""
    cluster_domain: str = "cluster.local"
    image_map: ImageMap = field(default_factory=ImageMap.load)
    working_dir: Path = field(default_factory=Path.cwd)
    inherit_env: bool = True
    backoff_base: float = 1.0
    backoff_cap: float = 10.0
    backoff_reset: float = 60.0
    retry_interval: float = 1.0
    heartbeat_interval: float = 10.0
    lease_duration_seconds: int = 40
    shutdown_grace: float = 5.0
