"""Whether a request's ``Host`` and ``Origin`` name this machine's loopback: the checks every local
listener of ours makes (the embedded API server's `access`, the dashboard's `guard`).

A server on 127.0.0.1 is reachable by every web page the user's browser opens: DNS rebinding
points a page's own hostname at 127.0.0.1 (its requests then carry ``Host: evil.example:PORT``),
and a page of another site sends its ``Origin``. Refusing both leaves loopback clients and the
server's own pages.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from urllib.parse import urlsplit

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def split_authority(authority: str) -> tuple[str, str] | None:
    """``host[:port]`` or ``[v6][:port]`` -> (lower-cased host without brackets, port or "");
    None when malformed."""
    authority = authority.strip().lower()
    if authority.startswith("["):
        host, closed, rest = authority[1:].partition("]")
        if not closed or (rest and not rest.startswith(":")):
            return None
        port = rest[1:]
    else:
        host, _, port = authority.partition(":")
    return (host, port) if port == "" or port.isdigit() else None


def hostname(authority: str) -> str:
    """The host of ``host[:port]`` ("" if malformed)."""
    parts = split_authority(authority)
    return parts[0] if parts else ""


def ip_address(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


class LoopbackNames:
    """127.0.0.1, localhost, ::1 and the `extra` names a server listens on, in any IP spelling."""

    def __init__(self, extra: Iterable[str] = ()) -> None:
        names = {h.lower() for h in (*LOOPBACK_NAMES, *extra)}
        self.names = frozenset(names)
        self.ips = frozenset(ip for ip in map(ip_address, names) if ip is not None)

    def loopback(self, host: str) -> bool:
        """Whether a Host/Origin hostname is one of these names."""
        return host in self.names or ip_address(host) in self.ips

    def host_allowed(self, host: str | None) -> bool:
        """A ``Host`` header naming loopback (with any port); no header at all (HTTP/1.0) too:
        no browser sends that."""
        return host is None or self.loopback(hostname(host))

    def origin_allowed(self, origin: str | None) -> bool:
        """No ``Origin`` (not a browser's cross-origin request), or an http(s) one on loopback."""
        if origin is None:
            return True
        parts = urlsplit(origin.strip())
        return parts.scheme in ("http", "https") and self.loopback(hostname(parts.netloc))
