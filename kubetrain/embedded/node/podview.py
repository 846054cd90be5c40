"""The pod-view shim: what a pod process sees of its interfaces and of mount paths it executes.

Two gaps of the local node show up as soon as MPI runs across pods (found with real OpenMPI 4.1):

* **Interfaces.** mpirun and the MPI ranks advertise the addresses of the machine's interfaces
  (``SIOCGIFCONF``/``getifaddrs``), not the address they bound, and every pod's listeners are on its
  own loopback IP (`netshim`). So orted dialled ``tcp://<eth0 address>:port`` and found nothing.
  This library shows a pod what a pod on a cluster has: ``lo`` (127.0.0.1, unchanged) and
  ``eth0`` with the pod IP and the pod network's mask (``getifaddrs``, ``SIOCGIFCONF`` and the
  ``SIOCGIF*`` requests on ``eth0``). ``eth0`` is the machine's first running non-loopback
  interface with an IPv4 address (not a ``docker*`` bridge when another exists), renamed, with one
  IPv4 address; the machine's other interfaces are hidden; on a machine with no other interface
  an ``eth0`` is made up (flags up/running, index 9999, MTU 1500). With the node agent's default
  ``OMPI_MCA_{oob,btl}_tcp_if_include=<pod CIDR>`` (see `exec.mpi_env`) OpenMPI then uses exactly
  the pod addresses, and so it does with an operator's ``btl_tcp_if_exclude=lo,docker0``
  (chainer-operator's), which keeps ``eth0``. Verified with OpenMPI 4.1 on a machine with
  ``eth0``, in network namespaces with only ``lo`` and with ``docker0`` + ``ens9``.
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
