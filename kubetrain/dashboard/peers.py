"""Which user a loopback TCP client is: the owner of its socket, as /proc/net/tcp tells it (Linux).

Loopback is shared by every user of the machine, and the dashboard asks no credential (it must
open from a printed URL). So it serves only connections whose other end belongs to the user who
started it: the kernel lists every TCP socket with its owner's uid, and the client's socket is the
one whose local address is the peer address and whose remote address is ours. Elsewhere (no
/proc/net/tcp) the owner is unknown and `owner` answers None.
"""

from __future__ import annotations

import ipaddress
import socket
from pathlib import Path

PROC_TABLES = {socket.AF_INET: Path("/proc/net/tcp"), socket.AF_INET6: Path("/proc/net/tcp6")}


def proc_address(host: str, port: int) -> str:
    """An address as /proc/net/tcp writes it: the IP's bytes as 32-bit words in host order, hex."""
    packed = ipaddress.ip_address(host).packed
    words = [packed[i : i + 4] for i in range(0, len(packed), 4)]
    return (
        "".join(int.from_bytes(w, "little").to_bytes(4, "big").hex().upper() for w in words) + f":{port:04X}"
    )


def owner(peer: tuple[str, int], ours: tuple[str, int], table: Path | None = None) -> int | None:
    """The uid owning the client's end of the connection `peer` -> `ours`; None when not listed."""
    family = socket.AF_INET6 if ":" in peer[0] else socket.AF_INET
    path = table or PROC_TABLES[family]
    local, remote = proc_address(*peer), proc_address(*ours)
    try:
        with open(path, encoding="ascii") as fh:
            next(fh, None)  # the header
            for line in fh:
                fields = line.split()
                if len(fields) > 7 and fields[1] == local and fields[2] == remote:
                    return int(fields[7])
    except (OSError, ValueError):
        return None
    return None


def proc_available() -> bool:
    return PROC_TABLES[socket.AF_INET].is_file()
