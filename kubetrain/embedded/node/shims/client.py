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
  namespace defaults to the calling pod's, as in-cluster kubectl does). This is what MPIJob v1's
  ``kubexec.sh`` calls.
* ``kubectl get RESOURCE [NAME...] [-n NS] [-o json|name|jsonpath=TEMPLATE]``: in a pod with
  in-cluster credentials (``KUBERNETES_SERVICE_HOST``/``_PORT`` or the local node's
  ``KUBETRAIN_API_SERVICE``, the service-account ``token`` and ``ca.crt``), asks the API server
  as in-cluster kubectl does, with its token (so RBAC applies) and kubectl's messages for errors
  (``Error from server (Forbidden): ...``). Without
  ``-o`` it prints the server's table. A jsonpath subset: ``{.a.b}``, ``{.a[0]}``, ``{.a[*].b}``
  and literal text; missing keys print nothing (kubectl's ``--allow-missing-template-keys``).
  Other subcommands, and ``get`` outside such a pod, go to a real ``kubectl`` when one exists.
* ``curl``: for the Kubernetes release URLs of kubectl (``storage.googleapis.com/kubernetes-release``
  and ``dl.k8s.io``: ``stable.txt``, ``.../bin/<os>/<arch>/kubectl[.sha256]``) answers with the
  API server's version and this node's ``kubectl`` wrapper, so init containers that download
  kubectl (chainer-operator's) get one that works in the pod; every other invocation is handed to
  the real ``curl`` further down ``PATH``.
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
import hashlib
import http.client
import json
import os
import re
import shutil
import signal
import socket
import ssl
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
    if argv and argv[0] == "get" and InCluster.available():
        kubectl_get(InCluster.load(), argv[1:])
    if not argv or argv[0] != "exec":
        real = _real_tool("kubectl", own_bin)
        if real is None:
            _fail(
                "kubetrain's local kubectl implements `kubectl exec`, and `kubectl get` in pods with "
                "in-cluster credentials (no other kubectl on PATH)",
                1,
            )
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


# -- in-cluster API access: kubectl get -------------------------------------------------------------

SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


def pod_path(path: str) -> str:
    """The local file behind a path of the pod's mounts (``KUBETRAIN_PATH_MAP``), else `path`."""
    try:
        mounts = json.loads(os.environ.get("KUBETRAIN_PATH_MAP") or "{}")
    except ValueError:
        mounts = {}
    best = ""
    for mount in mounts:
        m = mount.rstrip("/") or "/"
        if (path == m or path.startswith(m + "/")) and len(m) > len(best):
            best = m
    return mounts[best] + path[len(best) :] if best else path


class ApiFailure(Exception):
    """An answer of the API server other than 2xx: its code and Status (or text)."""

    def __init__(self, code: int, status: JsonDict) -> None:
        super().__init__(status.get("message", ""))
        self.code = code
        self.status = status


class InCluster:
    """The API server as an in-cluster client sees it (client-go's ``InClusterConfig``)."""

    def __init__(self, host: str, port: int, token: str | None, ca_file: str | None) -> None:
        self.host, self.port, self.token, self.ca_file = host, port, token, ca_file

    @staticmethod
    def address() -> tuple[str, int] | None:
        """The API server's host and port: the kubelet's KUBERNETES_SERVICE_HOST/PORT, else the
        local node's KUBETRAIN_API_SERVICE (``host:port``)."""
        host, port = os.environ.get("KUBERNETES_SERVICE_HOST"), os.environ.get("KUBERNETES_SERVICE_PORT")
        if not (host and port):
            host, _, port = (os.environ.get("KUBETRAIN_API_SERVICE") or "").rpartition(":")
            host = host.strip("[]")
        return (host, int(port)) if host and port and port.isdigit() else None

    @classmethod
    def available(cls) -> bool:
        return cls.address() is not None

    @classmethod
    def load(cls) -> InCluster:
        token: str | None = None
        with contextlib.suppress(OSError), open(pod_path(f"{SA_DIR}/token")) as handle:
            token = handle.read().strip() or None
        ca_path = pod_path(f"{SA_DIR}/ca.crt")
        ca = ca_path if os.path.exists(ca_path) else None
        host, port = cls.address() or ("", 443)
        return cls(host, port, token, ca)

    @property
    def server(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    @property
    def namespace(self) -> str:
        try:
            with open(pod_path(f"{SA_DIR}/namespace")) as handle:
                return handle.read().strip() or _caller_namespace()
        except OSError:
            return _caller_namespace()

    def get(self, path: str, accept: str = "application/json", auth: bool = True) -> JsonDict:
        context = (
            ssl.create_default_context(cafile=self.ca_file) if self.ca_file else ssl.create_default_context()
        )
        conn = http.client.HTTPSConnection(self.host, self.port, context=context, timeout=30)
        headers = {"Accept": accept, "User-Agent": "kubectl/kubetrain-local"}
        if auth and self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        try:
            conn.request("GET", path, headers=headers)
            resp = conn.getresponse()
            raw = resp.read()
        finally:
            conn.close()
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = {"message": raw.decode(errors="replace").strip()}
        if not 200 <= resp.status < 300:
            raise ApiFailure(resp.status, body if isinstance(body, dict) else {"message": str(body)})
        return dict(body)


# kubectl's names for the built-in resources: (path prefix, plural, namespaced, kind)
_BUILTIN: list[tuple[tuple[str, ...], str, str, bool, str]] = [
    (("pods", "pod", "po"), "/api/v1", "pods", True, "Pod"),
    (("services", "service", "svc"), "/api/v1", "services", True, "Service"),
    (("configmaps", "configmap", "cm"), "/api/v1", "configmaps", True, "ConfigMap"),
    (("secrets", "secret"), "/api/v1", "secrets", True, "Secret"),
    (("serviceaccounts", "serviceaccount", "sa"), "/api/v1", "serviceaccounts", True, "ServiceAccount"),
    (("endpoints", "ep"), "/api/v1", "endpoints", True, "Endpoints"),
    (("events", "event", "ev"), "/api/v1", "events", True, "Event"),
    (
        ("persistentvolumeclaims", "persistentvolumeclaim", "pvc"),
        "/api/v1",
        "persistentvolumeclaims",
        True,
        "PersistentVolumeClaim",
    ),
    (("namespaces", "namespace", "ns"), "/api/v1", "namespaces", False, "Namespace"),
    (("nodes", "node", "no"), "/api/v1", "nodes", False, "Node"),
    (("statefulsets", "statefulset", "sts"), "/apis/apps/v1", "statefulsets", True, "StatefulSet"),
    (("deployments", "deployment", "deploy"), "/apis/apps/v1", "deployments", True, "Deployment"),
    (("replicasets", "replicaset", "rs"), "/apis/apps/v1", "replicasets", True, "ReplicaSet"),
    (("daemonsets", "daemonset", "ds"), "/apis/apps/v1", "daemonsets", True, "DaemonSet"),
    (("jobs", "job"), "/apis/batch/v1", "jobs", True, "Job"),
    (("cronjobs", "cronjob", "cj"), "/apis/batch/v1", "cronjobs", True, "CronJob"),
    (("roles", "role"), "/apis/rbac.authorization.k8s.io/v1", "roles", True, "Role"),
    (
        ("rolebindings", "rolebinding"),
        "/apis/rbac.authorization.k8s.io/v1",
        "rolebindings",
        True,
        "RoleBinding",
    ),
]


def resolve_resource(api: InCluster | None, name: str) -> tuple[str, str, bool, str, str]:
    """(path prefix, plural, namespaced, kind, group) of a resource as kubectl names it
    (``statefulsets``, ``sts``, ``statefulsets.apps``, a custom resource through discovery)."""
    base, _, group = name.lower().partition(".")
    for names, prefix, plural, namespaced, kind in _BUILTIN:
        pgroup = prefix.split("/")[2] if prefix.startswith("/apis/") else ""
        if base in names and (not group or group == pgroup):
            return prefix, plural, namespaced, kind, pgroup
    if api is not None:
        groups = api.get("/apis").get("groups") or []
        for g in groups:
            if group and g.get("name") != group:
                continue
            gv = (g.get("preferredVersion") or {}).get("groupVersion")
            if not gv:
                continue
            try:
                resources = api.get(f"/apis/{gv}").get("resources") or []
            except ApiFailure:
                continue
            for r in resources:
                if "/" in r.get("name", ""):
                    continue
                if base in (r.get("name"), r.get("singularName"), *(r.get("shortNames") or [])):
                    return f"/apis/{gv}", r["name"], bool(r.get("namespaced")), r.get("kind", ""), g["name"]
    raise LookupError(f'error: the server doesn\'t have a resource type "{name}"')


_SEGMENT = re.compile(r"\.((?:\\.|[^.\[\]\\])+)|\[(\*|-?\d+)\]")


def jsonpath_values(expr: str, data: Any) -> list[Any]:
    """The values one ``{...}`` expression selects (``.a.b``, ``.a[0]``, ``.a[*].b``; ``\\.``
    escapes a dot in a key). Raises ValueError on what this subset does not implement."""
    expr = expr.strip()
    if expr in ("", "$", "@", "."):
        return [data]
    if expr.startswith("$"):
        expr = expr[1:]
    pos, values = 0, [data]
    while pos < len(expr):
        m = _SEGMENT.match(expr, pos)
        if not m:
            raise ValueError(
                f"unsupported jsonpath expression {{{expr}}} (kubetrain's local kubectl "
                "implements {.a.b}, {.a[0]} and {.a[*].b})"
            )
        key, index = m.group(1), m.group(2)
        nxt: list[Any] = []
        for v in values:
            if key is not None:
                k = key.replace("\\.", ".")
                if k == "*" and isinstance(v, dict):
                    nxt.extend(v.values())
                elif isinstance(v, dict) and k in v:
                    nxt.append(v[k])
            elif isinstance(v, list):
                if index == "*":
                    nxt.extend(v)
                elif -len(v) <= int(index) < len(v):
                    nxt.append(v[int(index)])
        values, pos = nxt, m.end()
    return values


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def jsonpath(template: str, data: Any) -> str:
    """kubectl's ``-o jsonpath=TEMPLATE`` for the supported subset (see `jsonpath_values`)."""
    out, pos = [], 0
    while pos < len(template):
        start = template.find("{", pos)
        if start < 0:
            out.append(template[pos:])
            break
        out.append(template[pos:start])
        end = template.find("}", start)
        if end < 0:
            raise ValueError(f"unclosed action in jsonpath template {template!r}")
        inner = template[start + 1 : end].strip()
        if inner.startswith('"') and inner.endswith('"') and len(inner) >= 2:
            out.append(json.loads(inner))
        elif inner.split(" ", 1)[0] in ("range", "end", "if", "else"):
            raise ValueError(
                f"unsupported jsonpath action {{{inner}}} (no range/end in kubetrain's local kubectl)"
            )
        else:
            out.append(" ".join(_text(v) for v in jsonpath_values(inner, data)))
        pos = end + 1
    return "".join(out)


def parse_kubectl_get(argv: list[str]) -> tuple[str, list[str], str | None, str]:
    """(resource, names, namespace, output) of ``kubectl get`` args; raises ValueError."""
    words: list[str] = []
    namespace: str | None = None
    output = ""
    i = 0
    while i < len(argv):
        arg = argv[i]
        key, eq, inline = arg.partition("=")
        if key in ("-n", "--namespace", "-o", "--output"):
            if eq:
                value = inline
            elif i + 1 < len(argv):
                value, i = argv[i + 1], i + 1
            else:
                raise ValueError(f"error: flag needs an argument: {key}")
            if key in ("-n", "--namespace"):
                namespace = value
            else:
                output = value
        elif arg.startswith("-n") and len(arg) > 2:
            namespace = arg[2:]
        elif arg.startswith("-o") and len(arg) > 2:
            output = arg[2:]
        elif arg.startswith("-"):
            raise ValueError(f"error: kubetrain's local kubectl get does not implement the flag {arg}")
        else:
            words.append(arg)
        i += 1
    if not words:
        raise ValueError("error: you must specify the type of resource to get")
    if "/" in words[0]:
        resource, names = words[0].split("/", 1)[0], [w.split("/", 1)[1] for w in words]
    else:
        resource, names = words[0], words[1:]
    return resource, names, namespace, output


def _api_error(api: InCluster, err: BaseException) -> NoReturn:
    if isinstance(err, ApiFailure):
        if err.code == 401:
            _fail("error: You must be logged in to the server (Unauthorized)", 1)
        reason = err.status.get("reason") or "InternalError"
        _fail(f"Error from server ({reason}): {err.status.get('message', '')}", 1)
    if isinstance(err, (ConnectionError, OSError)):
        _fail(
            f"The connection to the server {api.server} was refused - "
            "did you specify the right host or port?",
            1,
        )
    _fail(str(err), 1)


def _done() -> NoReturn:
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def kubectl_get(api: InCluster, argv: list[str]) -> NoReturn:
    try:
        resource, names, namespace, output = parse_kubectl_get(argv)
        fmt, _, template = output.partition("=")
        if fmt not in ("", "json", "name", "jsonpath", "wide"):
            raise ValueError(
                f"error: kubetrain's local kubectl get does not implement -o {fmt} "
                "(json, name, jsonpath=... and the default table)"
            )
        if fmt == "jsonpath" and template[:1] == template[-1:] and template[:1] in ("'", '"'):
            template = template[1:-1]
    except ValueError as err:
        _fail(str(err), 1)
    try:
        prefix, plural, namespaced, kind, group = resolve_resource(api, resource)
        ns = namespace or api.namespace
        base = f"{prefix}/namespaces/{ns}/{plural}" if namespaced else f"{prefix}/{plural}"
        if fmt in ("", "wide"):
            table = api.get(
                base if not names else f"{base}/{names[0]}",
                accept="application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
            )
            rows = list(table.get("rows") or [])
            for extra in names[1:]:
                rows += (
                    api.get(f"{base}/{extra}", accept="application/json;as=Table;v=v1;g=meta.k8s.io").get(
                        "rows"
                    )
                    or []
                )
            columns = [
                c for c in table.get("columnDefinitions") or [] if fmt == "wide" or not c.get("priority")
            ]
            if not rows:
                print(
                    f"No resources found in {ns} namespace." if namespaced else "No resources found",
                    file=sys.stderr,
                )
                _done()
            cells = [[c["name"].upper() for c in columns]]
            index = [i for i, c in enumerate(table.get("columnDefinitions") or []) if c in columns]
            cells += [[_text(r["cells"][i]) for i in index] for r in rows]
            widths = [max(len(row[i]) for row in cells) for i in range(len(columns))]
            for row in cells:
                print("   ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip())
            _done()
        objects = [api.get(f"{base}/{n}") for n in names] if names else None
        if objects is None:
            listed = api.get(base)
            items = [
                {"apiVersion": prefix.split("/", 2)[-1], "kind": kind, **o} for o in listed.get("items") or []
            ]
            data: Any = {
                "apiVersion": "v1",
                "items": items,
                "kind": "List",
                "metadata": {"resourceVersion": ""},
            }
        elif len(objects) == 1:
            data = objects[0]
        else:
            data = {"apiVersion": "v1", "items": objects, "kind": "List", "metadata": {"resourceVersion": ""}}
        if fmt == "json":
            print(json.dumps(data, indent=4))
        elif fmt == "name":
            qualified = f"{kind.lower()}.{group}" if group else kind.lower()
            for obj in data.get("items", [data]) if objects is None or len(objects) > 1 else [data]:
                print(f"{qualified}/{(obj.get('metadata') or {}).get('name')}")
        else:
            sys.stdout.write(jsonpath(template, data))
            sys.stdout.flush()
    except ValueError as err:
        _fail(f"error: error executing jsonpath {template!r}: {err}", 1)
    except LookupError as err:
        _fail(str(err), 1)
    except (ApiFailure, OSError) as err:
        _api_error(api, err)
    _done()


# -- curl: kubectl downloads --------------------------------------------------------------------------

_RELEASE = r"https?://(?:storage\.googleapis\.com/kubernetes-release|(?:cdn\.)?dl\.k8s\.io)(?:/release)?"
_STABLE = re.compile(_RELEASE + r"/(?:stable|latest)(?:-\d+(?:\.\d+)?)?\.txt")
_KUBECTL = re.compile(_RELEASE + r"/v\d+\.\d+\.\d+[^/]*/bin/[a-z]+/[a-z0-9]+/kubectl(\.sha256)?")
FALLBACK_VERSION = "v1.31.0"
_CURL_VALUE_OPTS = set("AbcCdDeEFHKmoQrTuUwxXyYz")  # short options of curl that take a value


def parse_curl(argv: list[str]) -> tuple[list[str], list[str | None], bool, bool] | None:
    """(urls, output file per url or None for stdout, silent, fail) of a curl command line that
    only downloads (``-L``, ``-O``, ``-o F``, ``-s``, ``-S``, ``-f``, ``--retry N``...); None when
    it does anything else (the real curl then runs it)."""
    urls: list[str] = []
    outputs: list[str | None] = []
    pending_out: list[str | None] = []
    silent = fail = False
    i = 0
    long_flags = {
        "--location": "",
        "--silent": "s",
        "--show-error": "",
        "--fail": "f",
        "--remote-name": "O",
        "--insecure": "",
        "--compressed": "",
        "--progress-bar": "",
    }
    long_values = {
        "--output": "o",
        "--retry": "",
        "--retry-delay": "",
        "--max-time": "",
        "--connect-timeout": "",
    }
    while i < len(argv):
        arg = argv[i]
        if arg.startswith("--"):
            key, eq, inline = arg.partition("=")
            if key in long_flags:
                letter = long_flags[key]
            elif key in long_values:
                value = inline if eq else (argv[i + 1] if i + 1 < len(argv) else "")
                if not eq:
                    i += 1
                if long_values[key] == "o":
                    pending_out.append(value)
                i += 1
                continue
            else:
                return None
            silent |= letter == "s"
            fail |= letter == "f"
            if letter == "O":
                pending_out.append(None)
        elif arg.startswith("-") and len(arg) > 1:
            j = 1
            while j < len(arg):
                letter = arg[j]
                if letter in _CURL_VALUE_OPTS:
                    value = arg[j + 1 :] or (argv[i + 1] if i + 1 < len(argv) else "")
                    if not arg[j + 1 :]:
                        i += 1
                    if letter != "o" and letter != "m":
                        return None
                    if letter == "o":
                        pending_out.append(value)
                    break
                if letter not in "LsSfO#k":
                    return None
                silent |= letter == "s"
                fail |= letter == "f"
                if letter == "O":
                    pending_out.append(None)
                j += 1
        else:
            urls.append(arg)
        i += 1
    for n, url in enumerate(urls):
        spec = pending_out[n] if n < len(pending_out) else ""
        if spec is None:  # -O: the file name of the URL
            outputs.append(url.rstrip("/").rsplit("/", 1)[-1])
        else:
            outputs.append(spec or None)
    return (urls, outputs, silent, fail) if urls else None


def _cluster_version() -> str:
    if InCluster.available():
        with contextlib.suppress(Exception):
            version = str(InCluster.load().get("/version", auth=False).get("gitVersion") or "")
            if re.fullmatch(r"v\d+\.\d+\.\d+.*", version):
                return version.split("+", 1)[0]
    return FALLBACK_VERSION


def curl(socket_path: str, own_bin: str, argv: list[str]) -> NoReturn:
    parsed = parse_curl(argv)
    if parsed is not None and all(_STABLE.fullmatch(u) or _KUBECTL.fullmatch(u) for u in parsed[0]):
        urls, outputs, _silent, _fail_flag = parsed
        with open(os.path.join(own_bin, "kubectl"), "rb") as handle:
            wrapper = handle.read()
        for url, output in zip(urls, outputs, strict=True):
            match = _KUBECTL.fullmatch(url)
            if match is None:
                body = _cluster_version().encode()
            elif match.group(1):
                body = hashlib.sha256(wrapper).hexdigest().encode()
            else:
                body = wrapper
            if output is None or output == "-":
                _write(1, body)
            else:
                with open(output, "wb") as handle:
                    handle.write(body)
                if match is not None and not match.group(1):
                    os.chmod(output, 0o755)
        os._exit(0)
    real = _real_tool("curl", own_bin)
    if real is None:
        _fail("curl: (2) no curl on PATH besides kubetrain's (which only serves kubectl downloads)", 2)
    os.execv(real, [real, *argv])


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


TOOLS = {"ssh": ssh, "kubectl": kubectl, "kubectl-delivery": kubectl_delivery, "curl": curl}


def main(argv: list[str]) -> NoReturn:
    """``client.py --socket PATH --bin DIR TOOL ARGS...``."""
    if len(argv) >= 1 and argv[0] == "sshd":
        sshd_placeholder()
    if len(argv) < 5 or argv[0] != "--socket" or argv[2] != "--bin" or argv[4] not in TOOLS:
        _fail("usage: client.py --socket PATH --bin DIR {ssh,kubectl,kubectl-delivery,curl} ARGS...", 2)
    socket_path, own_bin, tool, rest = argv[1], argv[3], argv[4], argv[5:]
    try:
        TOOLS[tool](socket_path, own_bin, rest)
    except OSError as err:
        _fail(f"{tool}: cannot reach the kubetrain node agent at {socket_path}: {err}", 255)


if __name__ == "__main__":
    main(sys.argv[1:])
