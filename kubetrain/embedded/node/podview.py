"""The pod-view shim: what a pod process sees of its interfaces and of mount paths it executes.

Two gaps of the local node show up as soon as MPI runs across pods (found with real OpenMPI 4.1):

* **Interfaces.** mpirun and the MPI ranks advertise the addresses of the machine's interfaces
  (``SIOCGIFCONF``/``getifaddrs``), not the address they bound, and every pod's listeners are on its
  own loopback IP (`netshim`). So orted dialled ``tcp://<eth0 address>:port`` and found nothing.
  This library reports, in a pod, every non-loopback IPv4 interface with the pod IP and the pod
  network's mask, as a pod on a cluster sees its ``eth0``. With the node agent's default
  ``OMPI_MCA_{oob,btl}_tcp_if_include=<pod CIDR>`` (see `exec.mpi_env`) OpenMPI then uses exactly
  the pod addresses. Loopback (``lo``, 127.0.0.1) is reported unchanged.
* **A wildcard bind spelled AF_UNSPEC.** OpenMPI's TCP BTL binds outgoing sockets to an
  all-zero ``AF_UNSPEC`` address, which Linux takes as ``0.0.0.0`` on an AF_INET socket; the bind
  shim only rewrites ``AF_INET`` wildcards, so the connection left from 127.0.0.1 and the peer
  dropped it ("unexpected IP address"). Here it is passed on as ``AF_INET 0.0.0.0``, so the
  network shim (which must come *after* this library in ``LD_PRELOAD``) puts it on the pod IP.
* **Executing a mount path.** Mount paths are rewritten in a container's command, args and env
  (`paths`), not inside file contents: MPIJob v1's ``kubexec.sh`` (a ConfigMap file) runs
  ``/opt/kube/kubectl``, which exists only in the pod's sandbox. ``execve``/``execv``/``execvp``/
  ``execvpe``/``posix_spawn`` of a path that does not exist on the machine but lies under a mount
  of ``KUBETRAIN_PATH_MAP`` run the sandbox file instead (a path that exists is never changed).

The interface and bind parts apply only when ``KUBETRAIN_POD_IP`` is set (isolated network mode).
Built like `netshim`, from ``podview.c`` (package data), once per version into the per-user cache.
"""

from __future__ import annotations

from pathlib import Path

from .preload import compile_preload

LIBRARY_NAME = "libkubetrain_podview.so"


def build_podview(cache_dir: Path | None = None) -> Path:
    """The compiled pod-view library (interfaces report the pod IP, exec of mounted paths)."""
    return compile_preload("podview", LIBRARY_NAME, cache_dir)
