"""The node agent's exec endpoint: run a command inside a local pod, as ``kubectl exec`` does.

MPI launchers reach their workers by running a command "on" each worker: mpi-operator v2beta1
through ``ssh <host> orted ...`` (OpenMPI's rsh launcher), v1 through ``kubexec.sh``, which runs
``kubectl exec <pod> -- /bin/sh -c "orted ..."``. On the local node every pod is a group of local
processes, so "on a worker" means: a process started by the agent with the worker container's
environment (its env, working directory, volumes and mount-path map, its pod IP through the
network shim, its name resolution and hostname through nss_wrapper), stdin/stdout/stderr relayed
to the caller and the exit code returned. That is this endpoint.

**Why a Unix socket owned by the agent** (rather than a loopback HTTP port with a token): only
processes of the agent's user can connect (the socket lives in a private 0700 directory), no port
is taken, and the pods' own processes are the only clients. Its path is baked into the ``ssh``
and ``kubectl`` wrappers (`shims`) that the agent puts first on every pod's ``PATH``; the wire
format reuses the channel numbers of Kubernetes' exec streaming protocol, so a ``pods/exec``
subresource on the embedded API server could later bridge to it unchanged.

**Who may exec where.** Every pod of the node may exec into every other (RBAC's ``pods/exec`` is
not enforced): on one machine all pods run as the same user anyway and could signal or trace each
other. A short name (pod name, hostname) resolves in the caller's namespace, as cluster DNS does.

**What each caller gets** (see `ExecService.pod_env`, applied to every container):

* ``PATH`` starts with the agent's ``bin``: ``ssh`` (to local pods; other hosts go to the real
  ssh), ``kubectl`` (``exec``; other verbs go to a real kubectl if one is installed),
  ``kubetrain-kubectl-delivery`` (the ``kubeflow/kubectl-delivery`` init container, see `images`)
  and ``kubetrain-sshd`` (idle stand-in for ``/usr/sbin/sshd -De`` in v2beta1 workers).
* the pod-view shim (`podview`) first in ``LD_PRELOAD``: interfaces report the pod IP, exec of a
  mount path inside scripts works (``/opt/kube/kubectl`` in ``kubexec.sh``).
* OpenMPI defaults a pod can override: ``OMPI_MCA_oob_tcp_if_include`` and
  ``OMPI_MCA_btl_tcp_if_include`` = the pod CIDR (the pod addresses are in 127/8, which the TCP
  BTL excludes by default), and, only when the agent itself runs as root (CI containers),
  ``OMPI_ALLOW_RUN_AS_ROOT=1`` + ``OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1``: processes run as the
  agent's user, and a root agent is an explicit choice of whoever started it.

**Lifetimes.** An exec'd command runs in its own session (process group). It is killed (SIGTERM,
then SIGKILL) when the caller disconnects (as sshd hangs up a dropped session), when its target
container stops (its processes would die with the container on a cluster), and when the agent
stops; when the command exits, whatever it left in its group is killed, as a container runtime
tears down an exec. A process that starts its own session escapes this (as in `process`).

Not supported: TTYs (``-t`` is accepted and ignored), port forwarding, interactive ssh logins
without a command (``/bin/sh`` reads the commands from stdin instead).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shutil
import signal
import tempfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from .errors import ContainerConfigError, MountError, StartError
from .network import PodNetwork
from .paths import PathMap
from .podview import build_podview
from .preload import ShimUnavailable
from .shims import client as wire
from .shims import install as install_shims
from .target import ExecTarget

log = logging.getLogger(__name__)

JsonDict = dict[str, Any]

DEFAULT_CONTAINER_ANNOTATION = "kubectl.kubernetes.io/default-container"
KILL_GRACE = 2.0
DRAIN_TIMEOUT = 2.0


def success() -> JsonDict:
    return {"kind": "Status", "apiVersion": "v1", "status": "Success"}


def failure(reason: str, message: str, code: int) -> JsonDict:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "reason": reason,
        "message": message,
        "code": code,
    }


def exited(code: int, command: list[str]) -> JsonDict:
    """The Status the kubelet returns for a command that ended with a non-zero exit code."""
    status = failure(
        "NonZeroExitCode",
        f"command terminated with non-zero exit code: error executing command {command}, exit code {code}",
        500,
    )
    status["details"] = {"causes": [{"reason": "ExitCode", "message": str(code)}]}
    return status


def mpi_env(base: Mapping[str, str], network: PodNetwork, running_as_root: bool) -> dict[str, str]:
    """OpenMPI defaults for a pod whose final env is `base` (a value the pod sets wins)."""
    env: dict[str, str] = {}
    if network.mode == "isolated":
        for part in ("oob", "btl"):
            include, exclude = f"OMPI_MCA_{part}_tcp_if_include", f"OMPI_MCA_{part}_tcp_if_exclude"
            if include not in base and exclude not in base:  # the two are mutually exclusive
                env[include] = network.pod_cidr
    if running_as_root:
        for key in ("OMPI_ALLOW_RUN_AS_ROOT", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"):
            if key not in base:
                env[key] = "1"
    return env


def _killpg(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def _read_frame(reader: asyncio.StreamReader) -> tuple[int, bytes] | None:
    try:
        header = await reader.readexactly(5)
        channel, length = int(header[0]), int.from_bytes(header[1:], "big")
        return channel, (await reader.readexactly(length) if length else b"")
    except (asyncio.IncompleteReadError, ConnectionError):
        return None


class _Channel:
    """Frames to one client; a lock keeps concurrent writers' frames whole."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self.writer = writer
        self.lock = asyncio.Lock()
        self.broken = False

    async def send(self, channel: int, payload: bytes) -> None:
        if self.broken:
            return
        async with self.lock:
            try:
                self.writer.write(wire.encode(channel, payload))
                await self.writer.drain()
            except (ConnectionError, RuntimeError):
                self.broken = True

    async def status(self, status: JsonDict) -> None:
        await self.send(wire.STATUS, json.dumps(status).encode())


class ExecService:
    """``await service.start()`` opens the endpoint; `pod_env` puts pods in reach of it."""

    def __init__(
        self,
        bin_dir: Path,
        network: PodNetwork,
        workers: Callable[[], Iterable[ExecTarget]],
        cluster_domain: str = "cluster.local",
    ) -> None:
        self.bin_dir = bin_dir
        self.network = network
        self.workers = workers
        self.cluster_domain = cluster_domain
        self.running_as_root = os.geteuid() == 0
        self.dir: Path | None = None
        self.socket_path = Path()
        self.podview: str | None = None
        self._server: asyncio.AbstractServer | None = None
        self._sessions: dict[int, asyncio.subprocess.Process] = {}
        self._handlers: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        # A short private directory: a Unix socket path must fit in 108 bytes, the agent's root
        # may not, and 0700 keeps other users out.
        self.dir = Path(tempfile.mkdtemp(prefix="kubetrain-exec-"))
        self.socket_path = self.dir / "exec.sock"
        install_shims(self.bin_dir, self.socket_path)
        try:
            self.podview = str(build_podview())
        except ShimUnavailable as err:
            log.warning("pod-view shim unavailable (MPI across pods will not work): %s", err)
        self._server = await asyncio.start_unix_server(self._accept, path=str(self.socket_path))
        os.chmod(self.socket_path, 0o600)

    async def stop(self) -> None:
        """Close the endpoint and kill every exec'd command."""
        if self._server is not None:
            self._server.close()
        for proc in list(self._sessions.values()):
            _killpg(proc.pid, signal.SIGKILL)
        for task in list(self._handlers):
            task.cancel()
        await asyncio.gather(*self._handlers, return_exceptions=True)
        if self._server is not None:
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
            self._server = None
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def pids(self) -> list[int]:
        """Process ids of the exec'd commands still running."""
        return [pid for pid, proc in self._sessions.items() if proc.returncode is None]

    # -- what pods get ------------------------------------------------------------------------------

    def pod_env(self, namespace: str, name: str, base: Mapping[str, str]) -> dict[str, str]:
        """Variables to lay over a container's final env `base` (see the module docstring)."""
        env = {
            "KUBETRAIN_POD_NAMESPACE": namespace,
            "KUBETRAIN_POD_NAME": name,
            "PATH": os.pathsep.join([str(self.bin_dir), base.get("PATH") or os.defpath]),
        }
        if self.podview:
            rest = [p for p in (base.get("LD_PRELOAD") or "").split(":") if p and p != self.podview]
            env["LD_PRELOAD"] = ":".join([self.podview, *rest])
        env.update(mpi_env(base, self.network, self.running_as_root))
        return env

    # -- finding the target ---------------------------------------------------------------------------

    def _live(self) -> list[ExecTarget]:
        return [w for w in self.workers() if w.pod_ip and not w.finished]

    def _names(self, worker: ExecTarget, namespace: str) -> set[str]:
        """The names of `worker` that resolve for a caller in `namespace` (as in `network`)."""
        host, ns = worker.hostname.lower(), worker.namespace
        sub = str((worker.pod.get("spec") or {}).get("subdomain") or "").lower()
        names: set[str] = set()
        if sub:
            fq = f"{host}.{sub}.{ns}.svc"
            names |= {f"{fq}.{self.cluster_domain}", fq, f"{host}.{sub}.{ns}"}
        if ns == namespace:
            names |= {host, worker.name.lower()}
            if sub:
                names.add(f"{host}.{sub}")
        if self.network.mode == "isolated":
            names.add(worker.pod_ip)
        return names

    def _by_host(self, host: str, namespace: str) -> ExecTarget | None:
        wanted = host.lower().rstrip(".")
        for worker in self._live():
            if wanted in self._names(worker, namespace):
                return worker
        return None

    def _by_name(self, name: str, namespace: str) -> ExecTarget | None:
        for worker in self.workers():
            if worker.name == name and worker.namespace == namespace and not worker.finished:
                return worker
        return None

    def _target(self, req: JsonDict) -> tuple[ExecTarget | None, JsonDict | None]:
        namespace = str(req.get("namespace") or "default")
        if req.get("pod"):
            pod = str(req["pod"])
            worker = self._by_name(pod, namespace)
            return worker, None if worker else failure("NotFound", f'pods "{pod}" not found', 404)
        host = str(req.get("host") or "")
        worker = self._by_host(host, namespace)
        if worker is not None:
            return worker, None
        cluster_name = host.endswith(".svc") or host.endswith(f".svc.{self.cluster_domain}")
        if cluster_name:
            return None, failure("NotFound", f"no running local pod is named {host}", 404)
        return None, failure("HostNotLocal", f"{host} is not a pod of this node", 404)

    def _container(self, worker: ExecTarget, wanted: str | None) -> tuple[JsonDict | None, JsonDict | None]:
        """The container spec to exec in (default: the annotated default, else the first)."""
        spec, meta = worker.pod.get("spec") or {}, worker.pod.get("metadata") or {}
        containers: list[JsonDict] = spec.get("containers") or []
        name = wanted or (meta.get("annotations") or {}).get(DEFAULT_CONTAINER_ANNOTATION)
        chosen = next((c for c in containers if c.get("name") == name), None) if name else None
        if chosen is None and not wanted and containers:
            chosen = containers[0]
        if chosen is None:
            return None, failure("BadRequest", f"container {wanted} is not valid for pod {worker.name}", 400)
        proc = worker.procs.get(chosen.get("name", ""))
        if proc is None or not proc.running or worker.deleting:
            return None, failure(
                "BadRequest",
                f'unable to upgrade connection: container not found ("{chosen.get("name", "")}")',
                400,
            )
        return chosen, None

    # -- serving ---------------------------------------------------------------------------------------

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._handlers.add(task)
        channel = _Channel(writer)
        try:
            frame = await asyncio.wait_for(_read_frame(reader), timeout=30.0)
            if frame is None or frame[0] != wire.REQUEST:
                return
            req = json.loads(frame[1])
            op = req.get("op")
            if op == "probe":
                await channel.status(self._probe(req))
            elif op == "exec":
                await channel.status(await self._exec(req, reader, channel))
            else:
                await channel.status(failure("BadRequest", f"unknown operation {op!r}", 400))
        except (TimeoutError, ValueError) as err:
            await channel.status(failure("BadRequest", f"malformed request: {err}", 400))
        finally:
            if task is not None:
                self._handlers.discard(task)
            with contextlib.suppress(Exception):
                writer.close()

    def _probe(self, req: JsonDict) -> JsonDict:
        """Success when the target pod exists locally and all its containers run."""
        worker, error = self._target(req)
        if worker is None:
            return error or failure("NotFound", "not found", 404)
        names = [c.get("name", "") for c in (worker.pod.get("spec") or {}).get("containers") or []]
        if all(worker.procs.get(n) is not None and worker.procs[n].running for n in names):
            return success()
        return failure("BadRequest", f"pod {worker.name} is not running yet", 400)

    async def _exec(self, req: JsonDict, reader: asyncio.StreamReader, channel: _Channel) -> JsonDict:
        worker, error = self._target(req)
        if worker is None:
            return error or failure("NotFound", "not found", 404)
        cspec, error = self._container(worker, req.get("container"))
        if cspec is None:
            return error or failure("BadRequest", "no container", 400)
        command = [str(a) for a in req.get("command") or []]
        if not command:
            return failure("BadRequest", "you must specify at least one command for the container", 400)
        try:
            env, cwd = await worker.exec_environment(cspec, command)
        except (ContainerConfigError, MountError, StartError) as err:
            return failure("InternalError", str(err), 500)
        paths = PathMap(json.loads(env.get("KUBETRAIN_PATH_MAP") or "{}").items())
        argv = [paths.translate(a) for a in command]
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                env=env,
                cwd=cwd,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as err:
            code = 127 if isinstance(err, FileNotFoundError) else 126
            await channel.send(wire.STARTED, b"")
            message = f'exec failed: unable to start container process: exec: "{command[0]}": {err.strerror}'
            await channel.send(wire.STDERR, message.encode() + b"\n")
            return exited(code, command)
        self._sessions[proc.pid] = proc
        try:
            await channel.send(wire.STARTED, b"")
            return await self._relay(proc, reader, channel, worker, str(cspec.get("name", "")), command)
        finally:
            self._sessions.pop(proc.pid, None)
            _killpg(proc.pid, signal.SIGKILL)  # the command is over: so is what it left behind

    async def _relay(
        self,
        proc: asyncio.subprocess.Process,
        reader: asyncio.StreamReader,
        channel: _Channel,
        worker: ExecTarget,
        container: str,
        command: list[str],
    ) -> JsonDict:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        outputs = [
            asyncio.create_task(self._pump_out(proc.stdout, wire.STDOUT, channel)),
            asyncio.create_task(self._pump_out(proc.stderr, wire.STDERR, channel)),
        ]
        client_gone = asyncio.create_task(self._pump_in(reader, proc.stdin))
        exited_task = asyncio.create_task(proc.wait())
        watchers: set[asyncio.Task[Any]] = {client_gone, exited_task}
        target = worker.procs.get(container)
        if target is not None:
            watchers.add(asyncio.create_task(target.wait()))
        try:
            await asyncio.wait(watchers, return_when=asyncio.FIRST_COMPLETED)
            if not exited_task.done():  # caller gone or container stopped: hang up on the command
                _killpg(proc.pid, signal.SIGTERM)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(exited_task), KILL_GRACE)
                _killpg(proc.pid, signal.SIGKILL)
            code = await exited_task
            await asyncio.wait(outputs, timeout=DRAIN_TIMEOUT)
        finally:
            for task in [*outputs, *watchers]:
                task.cancel()
            await asyncio.gather(*outputs, *watchers, return_exceptions=True)
        code = 128 - code if code < 0 else code
        return success() if code == 0 else exited(code, command)

    @staticmethod
    async def _pump_out(stream: asyncio.StreamReader, number: int, channel: _Channel) -> None:
        while True:
            data = await stream.read(1 << 16)
            if not data:
                return
            await channel.send(number, data)

    @staticmethod
    async def _pump_in(reader: asyncio.StreamReader, stdin: asyncio.StreamWriter) -> None:
        """Relay stdin frames; returns when the caller disconnects (an empty frame is only EOF)."""
        while True:
            frame = await _read_frame(reader)
            if frame is None:
                return
            channel, data = frame
            if channel != wire.STDIN:
                continue
            try:
                if data:
                    stdin.write(data)
                    await stdin.drain()
                else:
                    stdin.close()
            except (ConnectionError, RuntimeError):
                pass  # the command closed its stdin: discard, as a pipe would
