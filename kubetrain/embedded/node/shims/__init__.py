"""Small executables the node agent puts on every pod's PATH: ``ssh``, ``kubectl``, ``curl`` and helpers.

``curl`` serves only kubectl downloads from the Kubernetes release URLs (with the node's
``kubectl`` wrapper) and hands everything else to the real curl further down ``PATH`` (`client`).

``nslookup`` answers from the pod's own resolver (nss_wrapper's names of pods and services)
through ``getent``: images such as upstream's PyTorch init container (``until nslookup
<master>``) expect one, a real ``nslookup`` asks a DNS server that knows no pod names, and many
machines have none at all.

They are ``/bin/sh`` wrappers, written into the agent's own ``bin`` directory at start, that run
`client` with the agent's Python in isolated mode (``-I -S``: no site-packages, no user
``PYTHON*`` variables), so they work in any pod whatever its Python environment; the endpoint's
socket path is baked into them, so a program that scrubs its environment still reaches it.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

CLIENT = Path(__file__).with_name("client.py")

# wrapper name -> client tool
TOOLS = {
    "ssh": "ssh",
    "kubectl": "kubectl",
    "kubetrain-kubectl-delivery": "kubectl-delivery",
    "curl": "curl",
}
SSHD_PLACEHOLDER = "kubetrain-sshd"
NSLOOKUP = r"""
name=""
for arg in "$@"; do case "$arg" in -*) ;; *) [ -n "$name" ] || name="$arg" ;; esac; done
[ -n "$name" ] || { echo "usage: nslookup NAME" >&2; exit 1; }
addresses=$(getent ahosts "$name" | awk '{print $1}' | sort -u)
[ -n "$addresses" ] || { echo "** server can't find $name: NXDOMAIN" >&2; exit 1; }
printf 'Name:\t%s\n' "$name"
for a in $addresses; do printf 'Address: %s\n' "$a"; done"""


def install(bin_dir: Path, socket_path: Path, python: str = sys.executable) -> Path:
    """Write the wrappers into `bin_dir` (created) and return it."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    base = f"exec {shlex.quote(python)} -I -S {shlex.quote(str(CLIENT))}"
    scripts = {
        name: f'{base} --socket {shlex.quote(str(socket_path))} --bin {shlex.quote(str(bin_dir))} {tool} "$@"'
        for name, tool in TOOLS.items()
    }
    scripts[SSHD_PLACEHOLDER] = f"{base} sshd"
    scripts["nslookup"] = NSLOOKUP
    for name, line in scripts.items():
        path = bin_dir / name
        tmp = path.with_name(f".{name}.tmp")
        tmp.write_text(f"#!/bin/sh\n{line}\n")
        tmp.chmod(0o755)
        tmp.replace(path)
    return bin_dir
