"""The bind/connect shim that gives every local pod its own IP address on the loopback network.

Linux routes the whole of 127.0.0.0/8 to the loopback interface, so every pod can have its own
address (127.244.x.y by default) without root. What breaks is the wildcard bind: a TF worker binds
``0.0.0.0:2222``, which on one host takes port 2222 on *every* loopback address, so the second
worker fails with EADDRINUSE. This tiny ``LD_PRELOAD`` library rewrites, per process:

* ``bind(0.0.0.0:p)`` -> ``bind(<pod IP>:p)``; a dual-stack ``bind([::]:p)`` -> ``[::ffff:<pod IP>]:p``;
* ``connect()`` to an address in the pod network from an unbound socket first binds the socket to
  the pod IP, so peers see the caller's pod IP (``getpeername``), as they would on a cluster;
* ports below the unprivileged limit on pod addresses are shifted by a fixed offset on both sides
  (``bind`` and ``connect``), so an sshd on port 22 works for a user without root;
* a TCP listener on a pod address gets ``SO_REUSEADDR`` as it starts listening, and a fixed-port
  bind that finds only TIME_WAIT connections on its port (``/proc/net/tcp``) is retried with it, so
  a rerun's server can take the port while the last run's connections on it are in TIME_WAIT
  (`PodCIDRLease` also rotates the addresses between planes). A port merely bound by a sibling
  still refuses a second bind, as on a node: ranks racing through a port range (OpenMPI's
  ``btl_tcp``) must lose at ``bind()``, not later at ``listen()``.

The C source (``netshim.c``, package data beside this module) is compiled once per version with
the system C compiler into a per-user cache (`preload`): that keeps the Python package pure (no
platform wheel) at the cost of needing ``cc`` on the machine. `build_shim` says clearly what is
missing when it cannot.
"""

from __future__ import annotations

from pathlib import Path

from .preload import compile_preload

LIBRARY_NAME = "libkubetrain_netshim.so"


def build_shim(cache_dir: Path | None = None) -> Path:
    """The compiled network shim (wildcard binds -> the pod IP)."""
    return compile_preload("netshim", LIBRARY_NAME, cache_dir)
