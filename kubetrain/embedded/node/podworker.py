"""One pod on the local node, from bound to deleted, the way a kubelet runs it.

The worker gives the pod an IP and a sandbox directory, materialises its volumes, runs the init
containers in order, then the containers, each supervised under the pod's ``restartPolicy``
(with ``restartCount``, ``lastState`` and a short capped back-off), and reports every change
through pods/status. On ``deletionTimestamp`` it sends SIGTERM, SIGKILL after the grace period,
reports the final states and confirms the deletion with ``gracePeriodSeconds=0``; that last
delete is what lets the API server forget the pod, exactly as with a real kubelet.

Containers are local processes; the container image is not run (see `images`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shutil
import time
import uuid
from pathlib import Path
from typing import Any

from kubetrain.kube.annotations import WORKDIR as WORKDIR_ANNOTATION
from kubetrain.kube.client import core_path
from kubetrain.kube.errors import ApiError
from kubetrain.kube.events import core_event, object_reference

from .context import NodeContext
from .envresolve import kubernetes_service_env, resolve_env
from .errors import ContainerConfigError, MountError, StartError
from .expand import expand
from .gpus import ADMISSION_REASON, DevicesUnavailable, PodDevices, allocated_status
from .logs import ContainerLogs, LogFile
from .mpiout import drop_inherited_unbuffered
from .network import PodEndpoint
from .paths import PathMap
from .process import ContainerProcess
from .recovery import POD_LOST_MESSAGE, carry_over, completed, ran_before, start_time
from .security import EVENT_REASON as SECURITY_EVENT_REASON
from .security import Identity, unenforced, verify_run_as_non_root
from .status import ContainerStatus, PodState, Terminated, pod_status
from .volumes import VolumeBuilder, container_mounts
from .workdir import PodWorkdir, pod_directory

log = logging.getLogger(__name__)

JsonDict = dict[str, Any]

_SCRUBBED_ENV = (
    "NSS_WRAPPER_HOSTS",
    "NSS_WRAPPER_HOSTNAME",
    "KUBETRAIN_POD_IP",
    "KUBETRAIN_POD_CIDR",
    "KUBETRAIN_PORT_OFFSET",
    "KUBETRAIN_PORT_OFFSET_BELOW",
    "KUBETRAIN_SANDBOX",
    "KUBETRAIN_PATH_MAP",
    "KUBETRAIN_API_SERVICE",
)


class Backoff:
    """Restart delay: base, doubled per quick failure, capped; reset after a long enough run."""

    def __init__(self, base: float, cap: float, reset_after: float) -> None:
        self.base, self.cap, self.reset_after = base, cap, reset_after
        self._next = base

    def next(self, ran_for: float) -> float:
        if ran_for >= self.reset_after:
            self._next = self.base
        delay = self._next
        self._next = min(self._next * 2, self.cap)
        return delay


class PodWorker:
    """The pod's kubelet; also the `target.ExecTarget` that exec and the kubelet API reach."""

    def __init__(self, pod: JsonDict, ctx: NodeContext) -> None:
        self.pod = pod
        self.ctx = ctx
        meta = pod.get("metadata") or {}
        self.uid: str = meta.get("uid", "")
        self.namespace: str = meta.get("namespace") or "default"
        self.name: str = meta.get("name", "")
        spec = pod.get("spec") or {}
        self.restart_policy: str = spec.get("restartPolicy") or "Always"
        self.dir = ctx.root / "pods" / f"{self.namespace}_{self.name}_{self.uid[:8]}"
        pods_dir = ctx.config.pods_dir or ctx.root / "workdirs"
        self.workdir = PodWorkdir(pod_directory(pods_dir, self.namespace, self.name, self.uid))
        """The pod's own working directory, a view of its job directory (see `workdir`)."""
        self.state = PodState(host_ip=ctx.host_ip)
        first_wait = "PodInitializing" if spec.get("initContainers") else "ContainerCreating"
        self.inits = [
            ContainerStatus(c.get("name", ""), c.get("image", ""), "PodInitializing")
            for c in spec.get("initContainers") or []
        ]
        self.containers = [
            ContainerStatus(c.get("name", ""), c.get("image", ""), first_wait)
            for c in spec.get("containers") or []
        ]
        self.recovered = ran_before(pod)
        """A previous node process ran this pod: its statuses carry over (see `recovery`)."""
        self.lost = self.recovered and carry_over(pod, self.inits, self.containers)
        if self.recovered:
            self.state.start_time = start_time(pod, self.state.start_time)
        self.identity = Identity.current()
        self.logs: dict[str, ContainerLogs] = {}
        self.procs: dict[str, ContainerProcess] = {}
        self.devices = PodDevices()
        self.init_failed = False
        self.deleting = False
        self._volumes: dict[str, Path] = {}
        self._dirty = asyncio.Event()
        self._last_status: JsonDict | None = None
        self._gone = False
        self._tasks: list[asyncio.Task[Any]] = []
        self._events: set[asyncio.Task[None]] = set()
        self._main: asyncio.Task[None] | None = None
        self._stopping: asyncio.Task[None] | None = None

    # -- identity ---------------------------------------------------------------------------------

    @property
    def hostname(self) -> str:
        return (self.pod.get("spec") or {}).get("hostname") or self.name

    @property
    def pod_ip(self) -> str:
        return self.state.pod_ip

    def _endpoint(self) -> PodEndpoint:
        meta, spec = self.pod.get("metadata") or {}, self.pod.get("spec") or {}
        return PodEndpoint(
            self.namespace,
            self.name,
            self.state.pod_ip,
            self.hostname,
            spec.get("subdomain") or "",
            dict(meta.get("labels") or {}),
        )

    @property
    def finished(self) -> bool:
        return self._main is not None and self._main.done()

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> None:
        self._main = asyncio.create_task(self._run(), name=f"pod {self.namespace}/{self.name}")
        self._tasks.append(asyncio.create_task(self._status_writer()))
        deadline = (self.pod.get("spec") or {}).get("activeDeadlineSeconds")
        if deadline is not None:
            self._tasks.append(asyncio.create_task(self._deadline(float(deadline))))
        if self.recovered and not self.lost:
            self.event("Normal", "SandboxChanged", "Pod sandbox changed, it will be killed and re-created.")
        self._mark()

    def update(self, pod: JsonDict) -> None:
        """A newer version from the watch: labels may move Service names, deletion starts the end."""
        old_labels = (self.pod.get("metadata") or {}).get("labels")
        self.pod = pod
        if (
            old_labels != (pod.get("metadata") or {}).get("labels")
            and self.state.pod_ip
            and not self.finished
        ):
            self.ctx.network.set_pod(self._endpoint())
        if (pod.get("metadata") or {}).get("deletionTimestamp") and not self.deleting:
            self.deleting = True
            self._stopping = asyncio.create_task(self._delete())

    async def _run(self) -> None:
        if self.lost:  # restartPolicy Never, and its containers died with the previous node process
            self.state.forced_phase, self.state.message = "Failed", POD_LOST_MESSAGE
            self._mark()
            return
        if not await self._admit_devices():
            return
        try:
            ignored = unenforced(self.pod, self.identity)
            if ignored and not self.recovered:  # a recovered pod was warned about by the last node
                self.event("Warning", SECURITY_EVENT_REASON, "; ".join(ignored))
            self.state.pod_ip = self.ctx.network.assign()
            self.ctx.network.set_pod(self._endpoint())
            self._mark()
            await self._prepare_volumes()
            self.state.sandbox_ready = True
            spec = self.pod.get("spec") or {}
            for cspec, st in zip(spec.get("initContainers") or [], self.inits, strict=False):
                if not await self._supervise(cspec, st, init=True):
                    self.init_failed = True
                    return
            self.state.initialized = True
            todo = [
                (c, st)
                for c, st in zip(spec.get("containers") or [], self.containers, strict=False)
                if not completed(st, self.restart_policy)
            ]
            for _, st in todo:
                st.set_waiting("ContainerCreating")
            self._mark()
            await asyncio.gather(*(self._supervise(c, st, init=False) for c, st in todo))
        finally:
            self.ctx.network.remove_pod(self.namespace, self.name)
            if not any(proc.running for proc in self.procs.values()):
                self.ctx.gpus.release(self.uid)  # else when kill_all has stopped them
            self._mark()

    async def _admit_devices(self) -> bool:
        """Take the pod's GPUs before anything runs; False (the pod Failed) when they are not free."""
        try:
            self.devices = await self.ctx.gpus.admit(self.uid, self.pod.get("spec") or {})
        except DevicesUnavailable as err:
            self.state.forced_phase, self.state.reason, self.state.message = (
                "Failed",
                ADMISSION_REASON,
                str(err),
            )
            self.event("Warning", ADMISSION_REASON, str(err))
            self._mark()
            return False
        for st in [*self.inits, *self.containers]:
            st.allocated = allocated_status(self.devices, st.name)
        return True

    async def _prepare_volumes(self) -> None:
        builder = VolumeBuilder(
            self.pod,
            self.dir,
            self.ctx.source,
            pod_ip=self.state.pod_ip,
            host_ip=self.ctx.host_ip,
            allocatable=self.ctx.allocatable,
            claims_dir=self.ctx.root / "claims",
        )
        reported = ""
        while True:
            try:
                self._volumes = await builder.build()
                return
            except MountError as err:
                if str(err) != reported:
                    reported = str(err)
                    self.event("Warning", "FailedMount", reported)
            await asyncio.sleep(self.ctx.config.retry_interval)

    async def _supervise(self, cspec: JsonDict, st: ContainerStatus, init: bool) -> bool:
        """Run one container under the restart policy; True when it ended successfully for good."""
        cfg = self.ctx.config
        backoff = Backoff(cfg.backoff_base, cfg.backoff_cap, cfg.backoff_reset)
        while True:
            started = time.time()
            term = await self._run_instance(cspec, st)
            if term is None:  # configuration not resolvable yet: wait and try again, as the kubelet does
                await asyncio.sleep(cfg.retry_interval)
                continue
            st.set_terminated(term)
            self._mark()
            ok = term.exit_code == 0
            if init:
                if ok:
                    return True
                if self.restart_policy == "Never":
                    return False
            elif self.restart_policy == "Never" or (self.restart_policy == "OnFailure" and ok):
                return ok
            if term.reason == "StartError":
                # The kubelet's reason cache: a failed start that will be retried shows as waiting
                # RunContainerError (the runtime's message) until the next sync backs it off.
                st.set_waiting("RunContainerError", term.message)
                await self.flush()
            delay = backoff.next(time.time() - started)
            st.set_waiting(
                "CrashLoopBackOff",
                f"back-off {delay:g}s restarting failed container={st.name} "
                f"pod={self.name}_{self.namespace}({self.uid})",
            )
            self._mark()
            self.event(
                "Warning",
                "BackOff",
                "Back-off restarting failed container "
                f"{st.name} in pod {self.name}_{self.namespace}({self.uid})",
            )
            await asyncio.sleep(delay)
            st.restart_count += 1

    async def _run_instance(self, cspec: JsonDict, st: ContainerStatus) -> Terminated | None:
        """Start and wait for one instance; None when its env cannot be resolved yet."""
        now = time.time()
        try:
            verify_run_as_non_root(self.pod, cspec, self.identity)
            argv, env, cwd = await self._process_spec(cspec)
        except ContainerConfigError as err:
            if (st.waiting_reason, st.waiting_message) != ("CreateContainerConfigError", str(err)):
                self.event("Warning", "Failed", f"Error: {err}")  # once per message, not per retry
            st.set_waiting("CreateContainerConfigError", str(err))
            self._mark()
            return None
        except (StartError, MountError) as err:
            self.event("Warning", "Failed", f"Error: {err}")
            return Terminated(128, "StartError", now, now, str(err))
        logs = self.logs.setdefault(st.name, ContainerLogs())
        logfile = LogFile(
            self.dir / "logs" / st.name / f"{st.restart_count}.log", policy=self.ctx.config.log_policy
        )
        try:
            proc = await ContainerProcess.start(argv, env, cwd, logfile)
        except StartError as err:
            self.event("Warning", "Failed", f"Error: {err}")
            return Terminated(128, "StartError", now, now, str(err))
        logs.add(logfile)
        self.procs[st.name] = proc
        container_id = f"kubetrain://{uuid.uuid4().hex}"
        st.set_running(proc.started_at, container_id)
        self._mark()
        self.event("Normal", "Started", f"Started container {st.name}")
        code = await proc.wait()
        return Terminated(
            code,
            "Completed" if code == 0 else "Error",
            proc.started_at,
            proc.finished_at or time.time(),
            container_id=container_id,
        )

    async def _process_spec(
        self, cspec: JsonDict, command: list[str] | None = None
    ) -> tuple[list[str], dict[str, str], str]:
        """argv, full environment and working directory of a container instance (or of `command`
        exec'd into it)."""
        cfg = self.ctx.config
        image = cspec.get("image", "")
        local = cfg.image_map.lookup(image)
        raw_env = await resolve_env(
            self.pod,
            cspec,
            self.ctx.source,
            pod_ip=self.state.pod_ip,
            host_ip=self.ctx.host_ip,
            allocatable=self.ctx.allocatable,
        )
        mounts = container_mounts(cspec, self._volumes, raw_env)
        paths = PathMap(mounts)
        pod_env = {k: paths.translate(v) for k, v in raw_env.items()}
        env: dict[str, str] = (
            dict(os.environ)
            if cfg.inherit_env
            else {k: os.environ[k] for k in ("HOME", "LANG", "USER", "TMPDIR") if k in os.environ}
        )
        for key in _SCRUBBED_ENV:
            env.pop(key, None)
        env.update(local.env)
        env["PATH"] = os.pathsep.join([*local.path, env.get("PATH") or os.defpath])
        env["HOSTNAME"] = self.hostname
        if cfg.api_service:
            env["KUBETRAIN_API_SERVICE"] = cfg.api_service
        if cfg.api_service and cfg.kubernetes_service_variables:
            # not the variables of a cluster this process may itself run in
            for key in [k for k in env if k.startswith(("KUBERNETES_SERVICE_", "KUBERNETES_PORT"))]:
                del env[key]
            env.update(kubernetes_service_env(cfg.api_service))
        env.update(pod_env)
        env.update(self.ctx.network.pod_env(self.namespace, self.hostname, self.state.pod_ip, env))
        env.update(self.ctx.gpus.container_env(self.devices, str(cspec.get("name", ""))))
        if self.ctx.env_provider is not None:
            env.update(self.ctx.env_provider.pod_env(self.namespace, self.name, env))
        env["KUBETRAIN_SANDBOX"] = str(self.dir)
        env["KUBETRAIN_PATH_MAP"] = json.dumps(dict(mounts))
        argv = [expand(paths.translate(a), pod_env) for a in local.argv(cspec, image)]
        drop_inherited_unbuffered(env, command or argv, {*pod_env, *local.env})
        return argv, env, self._working_dir(cspec, paths, local.working_dir)

    async def exec_environment(self, cspec: JsonDict, command: list[str]) -> tuple[dict[str, str], str]:
        """Env and working dir of `command` exec'd into container `cspec` (see `exec`).

        The same as the container's own process gets (but `mpiout`); the container's command is
        irrelevant here, so a container that has none (its image's entrypoint) can be exec'd into.
        """
        _, env, cwd = await self._process_spec({**cspec, "command": ["/bin/sh"], "args": []}, command)
        return env, cwd

    def _working_dir(self, cspec: JsonDict, paths: PathMap, mapped: str | None) -> str:
        wd = cspec.get("workingDir")
        if not wd:
            source = mapped or self._job_directory() or str(self.ctx.config.working_dir)
            if not os.path.isdir(source):
                return source  # the start fails naming it
            try:
                return self.workdir.view(os.path.abspath(source))
            except OSError as err:  # an unreadable job directory: run in it, as before
                log.warning("pod %s/%s runs in %s itself: %s", self.namespace, self.name, source, err)
                return source
        local = paths.lookup(wd)
        if local is not None:
            return local
        if os.path.isdir(wd):
            return str(wd)
        fallback = self.dir / "rootfs" / str(wd).lstrip("/")  # the image would have had it; make it
        fallback.mkdir(parents=True, exist_ok=True)
        return str(fallback)

    def _job_directory(self) -> str | None:
        """The pod's `kubetrain.io/workdir` (its job file's directory), when that is a directory here."""
        annotations = (self.pod.get("metadata") or {}).get("annotations") or {}
        directory = annotations.get(WORKDIR_ANNOTATION) if isinstance(annotations, dict) else None
        return directory if isinstance(directory, str) and os.path.isdir(directory) else None

    async def _deadline(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, self.state.start_time + seconds - time.time()))
        if self.finished or self.deleting:
            return
        message = "Pod was active on the node longer than the specified deadline"
        self.event("Normal", "DeadlineExceeded", message)
        await self.kill_all(self.grace_period())
        # Failed only once every container shows terminated: a status written during the kill
        # must never pair phase Failed with a running container.
        self.state.forced_phase = "Failed"
        self.state.reason = "DeadlineExceeded"
        self.state.message = message
        self._mark()

    # -- stopping --------------------------------------------------------------------------------

    def grace_period(self) -> float:
        meta, spec = self.pod.get("metadata") or {}, self.pod.get("spec") or {}
        grace = meta.get("deletionGracePeriodSeconds")
        if grace is None:
            grace = spec.get("terminationGracePeriodSeconds", 30)
        return float(grace)

    async def kill_all(self, grace: float) -> None:
        """Stop supervising, SIGTERM every running container, SIGKILL after `grace`; record exits."""
        self.ctx.gpus.stopping(self.uid)
        if self._main is not None and not self._main.done():
            self._main.cancel()
            await asyncio.gather(self._main, return_exceptions=True)
        running = [(name, p) for name, p in self.procs.items() if p.running]
        if running:
            for name, _ in running:
                self.event("Normal", "Killing", f"Stopping container {name}")
            codes = await asyncio.gather(*(p.terminate(grace) for _, p in running))
            by_name = {c.name: c for c in [*self.inits, *self.containers]}
            for (name, proc), code in zip(running, codes, strict=True):
                st = by_name[name]
                st.set_terminated(
                    Terminated(
                        code,
                        "Completed" if code == 0 else "Error",
                        proc.started_at,
                        proc.finished_at or time.time(),
                        container_id=st.container_id,
                    )
                )
        for st in self.containers:
            if st.state_name == "waiting" and st.last_terminated is not None:
                st.set_terminated(st.last_terminated)
        self.ctx.gpus.release(self.uid)  # its processes are gone: another pod may have its devices
        self._mark()

    async def _delete(self) -> None:
        await self.kill_all(self.grace_period())
        if self.state.forced_phase == "":
            failed = any(c.terminated is None or c.terminated.exit_code != 0 for c in self.containers)
            self.state.forced_phase = "Failed" if failed or self.init_failed else "Succeeded"
        await self.flush()
        body = {
            "apiVersion": "v1",
            "kind": "DeleteOptions",
            "gracePeriodSeconds": 0,
            "preconditions": {"uid": self.uid},
        }
        with contextlib.suppress(ApiError):
            await self.ctx.api.delete(core_path("pods", self.namespace, self.name), body)

    async def stop(self, grace: float) -> None:
        """Agent shutdown: kill everything (no API writes: the server may be going away too)."""
        self._gone = True
        await self.kill_all(grace)
        if self._stopping is not None:
            self._stopping.cancel()
            await asyncio.gather(self._stopping, return_exceptions=True)
        for task in [*self._tasks, *self._events]:
            task.cancel()
        await asyncio.gather(*self._tasks, *self._events, return_exceptions=True)
        self.workdir.prune()  # its processes are gone: keep only what they wrote

    async def removed(self) -> None:
        """The pod is gone from the API: stop everything and drop the sandbox."""
        self._gone = True
        await self.stop(self.grace_period() if not self.deleting else 0.0)
        if self._stopping is not None:
            await asyncio.gather(self._stopping, return_exceptions=True)
        if self.state.pod_ip:
            self.ctx.network.release(self.state.pod_ip)
        self.ctx.gpus.release(self.uid)
        shutil.rmtree(self.dir, ignore_errors=True)

    # -- status ------------------------------------------------------------------------------------

    def _mark(self) -> None:
        self._dirty.set()

    def render_status(self) -> JsonDict:
        return pod_status(
            self.state, self.restart_policy, self.inits, self.containers, self.init_failed, pod=self.pod
        )

    async def flush(self) -> None:
        """Write the current status now (used before confirming a deletion)."""
        await self._write_status()

    async def _status_writer(self) -> None:
        while not self._gone:
            await self._dirty.wait()
            self._dirty.clear()
            if not await self._write_status():
                await asyncio.sleep(self.ctx.config.retry_interval)
                self._dirty.set()

    async def _write_status(self) -> bool:
        if self._gone:
            return True
        status = self.render_status()
        if status == self._last_status:
            return True
        try:
            await self.ctx.api.merge_patch(
                core_path("pods", self.namespace, self.name, "status"), {"status": status}
            )
        except ApiError as err:
            if err.status == 404:
                self._gone = True
                return True
            log.warning("status of pod %s/%s: %s", self.namespace, self.name, err)
            return False
        except Exception as err:
            log.debug("status of pod %s/%s: %r", self.namespace, self.name, err)
            return False
        self._last_status = status
        return True

    def event(self, kind: str, reason: str, message: str) -> None:
        """Record a kubelet event on the pod, in the background (best effort: events are advisory)."""
        involved = object_reference(
            "v1", "Pod", {"namespace": self.namespace, "name": self.name, "uid": self.uid}
        )
        node = self.ctx.config.node_name
        body = core_event(involved, kind, reason, message, "kubelet", time.time(), host=node)
        task = asyncio.create_task(self._post_event(body))
        self._events.add(task)
        task.add_done_callback(self._events.discard)

    async def _post_event(self, body: JsonDict) -> None:
        with contextlib.suppress(Exception):
            await self.ctx.api.create(core_path("events", self.namespace), body)
