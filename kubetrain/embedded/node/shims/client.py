"""The client side of the node agent's exec endpoint: ``ssh``, ``kubectl exec`` and friends for pods.

This file runs as a standalone script (``python -I -S client.py --socket S --bin B <tool> ...``)
inside pods, whose Python environment may not have kubetrain installed: it must only use the
standard library and must start fast (mpirun starts one ``ssh`` per worker). The agent writes
small ``/bin/sh`` wrappers named after each tool into its ``bin`` directory (see `install`).

Tools:

* ``ssh [options] [user@]host [command...]``: when `host` names a local pod (its hostname, pod
  name, ``<hostname>.<subdomain>.<ns>.svc[.<domain>]`` or pod IP), runs the command, joined by
  spaces as ssh does, under ``/bin/sh -c`` inside that pod's first container; any other host is
  handed to the real ``ssh`` further down ``PATH``. This is what mpirun's rsh launcher calls.
* ``kubectl exec [-i] [-t] [-n NS] [-c C] POD -- cmd...``: runs argv in the pod's container (the
  namespace defaults to the calling pod's, as in-cluster kubectl does); other subcommands go to
  a real ``kubectl`` when one exists. This is what MPIJob v1's ``kubexec.sh`` calls.
* ``kubectl-delivery HOSTFILE``: stands in for the ``kubeflow/kubectl-delivery`` init container:
  copies the ``kubectl`` wrapper into ``$TARGET_DIR`` and waits until every host of the hostfile
  is a running local pod, so the launcher starts only once ``kubectl exec`` can reach workers.
* ``sshd``: the idle placeholder that replaces ``/usr/sbin/sshd -De`` in worker pods: nothing
  needs a real sshd, since ``ssh`` reaches pods through the agent. Exits 0 on SIGTERM.

Wire format (shared with `kubetrain.embedded.node.exec`): frames of ``channel (1 byte) + length
(4 bytes, big endian) + payload``, with the channel numbers of Kubernetes' exec streaming protocol
(0 stdin, 1 stdout, 2 stderr, 3 status) so that a pods/exec bridge can relay them unchanged; plus
255 for the JSON request (first frame from the client) and 5 for "started" (the command runs).
An empty stdin frame means end of input. The status is a ``metav1.Status``-shaped JSON object.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import struct
import sys
import threading
import time
from typing import Any, NoReturn

STDIN, STDOUT, STDERR, STATUS, STARTED, REQUEST = 0, 1, 2, 3, 5, 255
_HEADER = struct.Struct(">BI")

# ssh options that take an argument (OpenSSH 9); every other option letter is a flag.
_SSH_ARG_OPTS = set("BbcDEeFIiJLlmOoPpQRSWw")

JsonDict = dict[str, Any]


def encode(channel: int, payload: bytes) -> bytes:
    return _HEADER.pack(channel, len(payload)) + payload


def _read_exact(sock: socket.socket, n: int) -> bytes | None:
    chunks: list[bytes] = []
    while n:
        chunk = sock.recv(min(n, 1 << 16))
        if not chunk:
            return None
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def read_frame(sock: socket.socket) -> tuple[int, bytes] | None:
    """The next frame, or None when the agent closed the connection."""
    header = _read_exact(sock, _HEADER.size)
    if header is None:
        return None
    channel, length = _HEADER.unpack(header)
    payload = _read_exact(sock, length) if length else b""
    return None if payload is None else (channel, payload)


def exit_code(status: JsonDict) -> int:
    """The remote exit code a Status carries (0 for Success, the ExitCode cause, else 1)."""
    if status.get("status") == "Success":
        return 0
    for cause in (status.get("details") or {}).get("causes") or []:
        if cause.get("reason") == "ExitCode":
            try:
                return int(cause.get("message", "1"))
            except ValueError:
                return 1
    return 1


class Session:
    """One request to the agent: `call` for a one-shot answer, `run` to stream a command."""

    def __init__(self, socket_path: str) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(socket_path)

    def send(self, channel: int, payload: bytes) -> None:
        self.sock.sendall(encode(channel, payload))

    def call(self, request: JsonDict) -> JsonDict:
        """Send a request whose only answer is a status (``probe``)."""
        self.send(REQUEST, json.dumps(request).encode())
        while True:
            frame = read_frame(self.sock)
            if frame is None:
                return {"status": "Failure", "message": "the node agent closed the connection"}
            if frame[0] == STATUS:
                return dict(json.loads(frame[1]))

    def run(self, request: JsonDict, stdin: bool = True) -> JsonDict:
        """Send an exec request, relay stdin/stdout/stderr until the command ends; its status."""
        self.send(REQUEST, json.dumps(request).encode())
        while True:
            frame = read_frame(self.sock)
            if frame is None:
                return {"status": "Failure", "message": "the node agent closed the connection"}
            channel, payload = frame
            if channel == STARTED:
                if stdin:
                    threading.Thread(target=self._pump_stdin, daemon=True).start()
                else:
                    with contextlib.suppress(OSError):  # the command may be over already
                        self.send(STDIN, b"")
            elif channel == STDOUT:
                _write(1, payload)
            elif channel == STDERR:
                _write(2, payload)
            elif channel == STATUS:
                return dict(json.loads(payload))

    def _pump_stdin(self) -> None:
        try:
            while True:
                data = os.read(0, 1 << 16)
                self.send(STDIN, data)
                if not data:
                    return
        except OSError:  # stdin closed or invalid, or the session is over
            with contextlib.suppress(OSError):
                self.send(STDIN, b"")


def _write(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _fail(message: str, code: int) -> NoReturn:
    sys.stderr.write(message.rstrip("\n") + "\n")
    sys.stderr.flush()
    os._exit(code)


def _real_tool(name: str, own_bin: str) -> str | None:
    """The first `name` on PATH that is not one of our wrappers (for hosts/verbs we do not handle)."""
    own = os.path.realpath(own_bin)
    for entry in (os.environ.get("PATH") or os.defpath).split(os.pathsep):
        if not entry or os.path.realpath(entry) == own:
            continue
        candidate = os.path.join(entry, name)
        if os.access(candidate, os.X_OK) and not os.path.isdir(candidate):
            return candidate
    return None


def _caller_namespace() -> str:
    return os.environ.get("KUBETRAIN_POD_NAMESPACE") or "default"


# -- ssh ------------------------------------------------------------------------------------------


def parse_ssh(argv: list[str]) -> tuple[str, list[str], bool, int]:
    """(host, remote command words, stdin wanted, ConnectionAttempts) from ssh's command line.

    Raises ValueError on a command line ssh would reject.
    """
    i, use_stdin, attempts = 0, True, 1
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            i += 1
            break
        if not arg.startswith("-") or arg == "-":
            break
        j = 1
        while j < len(arg):
            letter = arg[j]
            if letter in _SSH_ARG_OPTS:
                value = arg[j + 1 :]
                if not value:
                    i += 1
                    if i >= len(argv):
                        raise ValueError(f"option requires an argument -- {letter}")
                    value = argv[i]
                key, _, number = value.partition("=")
                if letter == "o" and key.strip().lower() == "connectionattempts" and number.isdigit():
                    attempts = max(1, int(number))
                break
            if letter == "n":
                use_stdin = False
            j += 1
        i += 1
    if i >= len(argv):
        raise ValueError("usage: ssh [options] destination [command [argument ...]]")
    destination = argv[i]
    if destination.startswith("ssh://"):
        destination = destination[len("ssh://") :]
    host = destination.rsplit("@", 1)[-1]
    if host.startswith("[") and "]" in host:
        host = host[1 : host.index("]")]
    elif host.count(":") == 1:
        host = host.split(":", 1)[0]
    return host, argv[i + 1 :], use_stdin, attempts


def ssh(socket_path: str, own_bin: str, argv: list[str]) -> NoReturn:
    try:
        host, words, use_stdin, attempts = parse_ssh(argv)
    except ValueError as err:
        _fail(str(err), 255)
    command = ["/bin/sh", "-c", " ".join(words)] if words else ["/bin/sh"]
    request = {"op": "exec", "host": host, "namespace": _caller_namespace(), "command": command}
    for attempt in range(attempts):  # like ssh -o ConnectionAttempts=N: a pod may not run yet
        if attempt:
            time.sleep(1.0)
        status = Session(socket_path).run(request, stdin=use_stdin)
        if status.get("reason") not in ("NotFound", "BadRequest", "HostNotLocal"):
            break
    if status.get("reason") == "HostNotLocal":
        real = _real_tool("ssh", own_bin)
        if real is None:
            _fail(f"ssh: Could not resolve hostname {host}: Name or service not known", 255)
        os.execv(real, [real, *argv])
    if status.get("reason") in ("NotFound", "BadRequest", "InternalError"):
        _fail(f"ssh: connect to host {host}: {status.get('message', '')}", 255)
    os._exit(exit_code(status))


# -- kubectl ----------------------------------------------------------------------------------------


def parse_kubectl_exec(argv: list[str]) -> tuple[str | None, str, str | None, list[str], bool]:
    """(namespace, pod, container, command, stdin) from ``kubectl exec`` args; raises ValueError."""
    namespace: str | None = None
    container: str | None = None
    use_stdin = False
    pod: str | None = None
    i = 0
    valued = {"-n": "namespace", "--namespace": "namespace", "-c": "container", "--container": "container"}
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            i += 1
            break
        key, _, inline = arg.partition("=")
        if key in valued:
            value = inline if inline or "=" in arg else (argv[i + 1] if i + 1 < len(argv) else None)
            if value is None:
                raise ValueError(f"error: flag needs an argument: {key}")
            if not inline and "=" not in arg:
                i += 1
            if valued[key] == "namespace":
                namespace = value
            else:
                container = value
        elif arg in ("-i", "--stdin", "-it", "-ti"):
            use_stdin = True
        elif arg.startswith("-"):
            pass  # -t/--tty, -q/--quiet, --request-timeout=...: nothing to do locally
        elif pod is None:
            pod = arg
        else:
            break  # old form without `--`: the command starts here
        i += 1
    if pod is None:
        raise ValueError("error: expected 'exec POD_NAME COMMAND [ARG1] [ARG2] ... [ARGN]'.")
    if pod.startswith(("pod/", "pods/")):
        pod = pod.split("/", 1)[1]
    command = argv[i:]
    if not command:
        raise ValueError("error: you must specify at least one command for the container")
    return namespace, pod, container, command, use_stdin


def kubectl(socket_path: str, own_bin: str, argv: list[str]) -> NoReturn:
    if not argv or argv[0] != "exec":
        real = _real_tool("kubectl", own_bin)
        if real is None:
            _fail("kubetrain's local kubectl only implements `kubectl exec` (no other kubectl on PATH)", 1)
        os.execv(real, [real, *argv])
    try:
        namespace, pod, container, command, use_stdin = parse_kubectl_exec(argv[1:])
    except ValueError as err:
        _fail(str(err), 1)
    request = {
        "op": "exec",
        "namespace": namespace or _caller_namespace(),
        "pod": pod,
        "container": container,
        "command": command,
    }
    status = Session(socket_path).run(request, stdin=use_stdin)
    if status.get("status") != "Success" and status.get("reason") != "NonZeroExitCode":
        _fail(f"Error from server ({status.get('reason') or 'InternalError'}): {status.get('message')}", 1)
    os._exit(exit_code(status))


# -- kubectl-delivery and the sshd placeholder ------------------------------------------------------------


def hostfile_hosts(text: str) -> list[str]:
    """Host names of an OpenMPI (``host slots=n``) or Intel/MPICH (``host:n``) hostfile."""
    hosts: list[str] = []
    for line in text.splitlines():
        words = line.split("#", 1)[0].split()
        if words:
            host = words[0].split(":", 1)[0]
            if host not in hosts:
                hosts.append(host)
    return hosts


def kubectl_delivery(socket_path: str, own_bin: str, argv: list[str]) -> NoReturn:
    target = os.environ.get("TARGET_DIR") or "/opt/kube"
    os.makedirs(target, exist_ok=True)
    shutil.copy2(os.path.join(own_bin, "kubectl"), os.path.join(target, "kubectl"))
    print(f"kubectl delivered to {target}", flush=True)
    me = {os.environ.get("KUBETRAIN_POD_NAME"), os.environ.get("HOSTNAME")}
    for path in argv:
        try:
            with open(path) as handle:
                hosts = [h for h in hostfile_hosts(handle.read()) if h.split(".", 1)[0] not in me]
        except FileNotFoundError:
            continue
        for host in hosts:
            while True:
                status = Session(socket_path).call(
                    {"op": "probe", "host": host, "namespace": _caller_namespace()}
                )
                if status.get("status") == "Success":
                    print(f"{host} is running", flush=True)
                    break
                time.sleep(0.2)
    os._exit(0)


def sshd_placeholder() -> NoReturn:
    print(
        "kubetrain: sshd is not run on the local node; ssh from other pods reaches this pod "
        "through the node agent's exec endpoint",
        flush=True,
    )
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    signal.signal(signal.SIGINT, lambda *_: os._exit(0))
    while True:
        signal.pause()


TOOLS = {"ssh": ssh, "kubectl": kubectl, "kubectl-delivery": kubectl_delivery}


def main(argv: list[str]) -> NoReturn:
    """``client.py --socket PATH --bin DIR TOOL ARGS...``."""
    if len(argv) >= 1 and argv[0] == "sshd":
        sshd_placeholder()
    if len(argv) < 5 or argv[0] != "--socket" or argv[2] != "--bin" or argv[4] not in TOOLS:
        _fail("usage: client.py --socket PATH --bin DIR {ssh,kubectl,kubectl-delivery} ARGS...", 2)
    socket_path, own_bin, tool, rest = argv[1], argv[3], argv[4], argv[5:]
    try:
        TOOLS[tool](socket_path, own_bin, rest)
    except OSError as err:
        _fail(f"{tool}: cannot reach the kubetrain node agent at {socket_path}: {err}", 255)


if __name__ == "__main__":
    main(sys.argv[1:])
