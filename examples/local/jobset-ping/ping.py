"""A JobSet's pods talking by their DNS names: the leader serves, every worker pings it.

The leader (``<jobset>-leader-0-0``) listens on TCP and answers each ping with ``pong`` until it
has heard from ``--expect`` workers; each worker resolves ``<jobset>-leader-0-0.<subdomain>``
(the headless Service JobSet creates gives every pod that name) and pings it, retrying while the
leader is not up yet. Pure Python; every process exits 0 on success.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import time


def serve(port: int, expect: int, timeout: float) -> int:
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("0.0.0.0", port))
    srv.listen(64)
    srv.settimeout(timeout)
    print(f"leader {socket.gethostname()} listening on {port}, expecting {expect} workers", flush=True)
    heard: set[str] = set()
    while len(heard) < expect:
        conn, _ = srv.accept()
        with conn:
            name = conn.recv(256).decode().strip()
            conn.sendall(b"pong")
        heard.add(name)
        print(f"ping from {name} ({len(heard)}/{expect})", flush=True)
    print("all workers checked in", flush=True)
    return 0


def ping(leader: str, port: int, timeout: float) -> int:
    me = socket.gethostname()
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection((leader, port), timeout=2) as conn:
                conn.sendall(me.encode())
                reply = conn.recv(16)
            print(f"{me} -> {leader} ({socket.gethostbyname(leader)}): {reply.decode()}", flush=True)
            return 0 if reply == b"pong" else 1
        except OSError as exc:
            if time.monotonic() > deadline:
                print(f"{me}: cannot reach {leader}: {exc}", flush=True)
                return 1
            time.sleep(0.2)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("role", choices=["leader", "worker"])
    parser.add_argument("--port", type=int, default=5555)
    parser.add_argument("--expect", type=int, default=1, help="workers the leader waits for")
    parser.add_argument("--timeout", type=float, default=60.0)
    args = parser.parse_args()
    if args.role == "leader":
        return serve(args.port, args.expect, args.timeout)
    jobset, subdomain = os.environ["JOBSET_NAME"], os.environ.get("SUBDOMAIN") or os.environ["JOBSET_NAME"]
    return ping(f"{jobset}-leader-0-0.{subdomain}", args.port, args.timeout)


if __name__ == "__main__":
    sys.exit(main())
