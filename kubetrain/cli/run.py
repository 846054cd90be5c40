"""`kubetrain run FILE`: train on this machine with the same YAML that runs on a cluster.

Validates first (exit 2 before anything heavy starts), then starts the plane in-process, submits
the job, streams every replica's logs with a `worker-1 | ` prefix and shows the live status.
Exit 0 when the job Succeeded, 1 when it Failed or timed out, 2 for invalid input, 130/143 after
SIGINT/SIGTERM -- which delete the job and stop the node, so no pod process survives us.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
from collections.abc import Awaitable
from pathlib import Path

from kubetrain.api.kinds import KindInfo
from kubetrain.cli.commands import HELP
from kubetrain.cli.common import SubParsers, err, out, positive_float, run_async
from kubetrain.cli.dashboard import (
    add_dashboard_port,
    open_in_browser,
    serving_line,
    start_for_plane,
    stop_for_plane,
    valid_port,
)
from kubetrain.cli.datadir import PODS_DIR, STATE_FILE, DataDirLock, default_data_dir
from kubetrain.cli.history import add_history_bounds, history_store
from kubetrain.cli.narrate import QUIET_AFTER, PodNarrator
from kubetrain.cli.nodesize import add_node_size_options, node_size
from kubetrain.cli.plane import LocalPlane
from kubetrain.cli.prefixer import Prefixer, container_label
from kubetrain.cli.serve import (
    DEFAULT_KUBECONFIG,
    add_data_dir_option,
    add_gang_scheduler_option,
    add_network_option,
    serve_until_interrupted,
)
from kubetrain.cli.signals import Interrupts, first_of
from kubetrain.cli.status import StatusView
from kubetrain.client import jobstate
from kubetrain.client.aio import AsyncClient
from kubetrain.client.errors import KubetrainError, NotFound
from kubetrain.client.joblogs import JobLogFollower, Stream
from kubetrain.client.kinds import resolve_kind
from kubetrain.client.source import STDIN, LoadedJob, load_run
from kubetrain.embedded.node.workdir import kept_directories
from kubetrain.history.store import HISTORY_FILE
from kubetrain.kube.errors import ApiError

EXIT_SUCCEEDED, EXIT_FAILED = 0, 1
LOG_DRAIN_SECONDS = 5.0
DELETE_WAIT_SECONDS = 35.0


def register(sub: SubParsers) -> None:
    run = sub.add_parser(
        "run",
        help=HELP["run"],
        description="Start a local plane in this process, submit FILE, stream the logs of every replica "
        "and exit 0 if the job Succeeded, 1 if it Failed, 2 if FILE is invalid. Pods run "
        "as local processes in FILE's directory (container images are not run).",
    )
    run.add_argument(
        "file", metavar="FILE", help="a job YAML/JSON (TFJob, PyTorchJob, XGBoostJob, ...); - reads stdin"
    )
    run.add_argument(
        "-n", "--namespace", default="default", help="namespace to run the job in (default: default)"
    )
    run.add_argument(
        "--timeout",
        type=positive_float,
        default=None,
        help="fail (exit 1) and delete the job if it has not finished after S seconds",
    )
    run.add_argument(
        "--keep",
        action="store_true",
        help="after the job finished, keep the plane running (with a kubeconfig written) "
        "for `kubetrain get/describe/logs` until Ctrl-C",
    )
    run.add_argument(
        "--kubeconfig-out",
        metavar="PATH",
        default=DEFAULT_KUBECONFIG,
        help=f"with --keep: where to write the kubeconfig (default: {DEFAULT_KUBECONFIG})",
    )
    run.add_argument("--no-status", action="store_true", help="no live status line, only the logs")
    run.add_argument(
        "--quiet-after",
        type=float,
        default=QUIET_AFTER,
        metavar="S",
        help=f"after S seconds without output or progress, say which replicas run and why the others "
        f"do not (default {QUIET_AFTER:g}; 0: never)",
    )
    add_data_dir_option(
        run,
        "keep the plane's state in DIR, as `kubetrain up --data-dir DIR` does (default: in memory, "
        "gone when run exits)",
    )
    add_history_bounds(run)
    add_network_option(run)
    add_node_size_options(run)
    add_gang_scheduler_option(run)
    dashboard = run.add_argument_group("web dashboard (loopback only)")
    dashboard.add_argument(
        "--dashboard",
        action="store_true",
        help="serve the web dashboard while the job runs, print its page's URL and open it in a browser "
        "when there is a display (it stops when run exits; --keep keeps it)",
    )
    add_dashboard_port(dashboard)
    run.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    if args.dashboard and not valid_port(args.dashboard_port):
        return 2
    loaded = load_run(args.file)  # invalid input: exit 2 before starting anything
    for warning in loaded.warnings:
        err.print(f"Warning: {warning}", style="yellow", markup=False)
    info = resolve_kind(loaded.kind)
    if args.data_dir is None:
        return run_async(JobRun(args, loaded, info).main())
    data_dir = Path(args.data_dir).expanduser().resolve()
    with DataDirLock(data_dir):
        return run_async(JobRun(args, loaded, info, data_dir / STATE_FILE).main())


class JobRun:
    """One `kubetrain run` session: plane, job, logs, status, and the exit code."""

    def __init__(
        self, args: argparse.Namespace, loaded: LoadedJob, info: KindInfo, state: Path | None = None
    ) -> None:
        self.args = args
        self.state = state
        self.loaded = loaded
        self.info = info
        self.name = loaded.name
        self.namespace = (loaded.raw.get("metadata") or {}).get("namespace") or args.namespace
        self.prefixer = Prefixer(_expected_labels(loaded, info))
        self.finished = asyncio.Event()
        self.deleting = False
        """True once we delete the job ourselves (Ctrl-C, --timeout): its disappearance is expected."""
        self.job: dict | None = None
        self.interrupts: Interrupts | None = None
        self.narrator: PodNarrator | None = None

    def emit(self, stream: Stream, line: str) -> None:
        label = container_label(stream.replica, stream.container, self.info.default_container, stream.init)
        if self.narrator is not None:
            self.narrator.activity()
        try:
            out.print(self.prefixer.text(label, line), markup=False, highlight=False)
        except BrokenPipeError:
            if self.interrupts is not None:
                self.interrupts.stdout_closed()

    async def main(self) -> int:
        # The job's files are beside its YAML; for a job read from stdin, in the current directory.
        working_dir = Path.cwd() if self.args.file == STDIN else Path(self.args.file).resolve().parent
        data_dir = self.state.parent if self.state else default_data_dir()
        pods_dir = data_dir / PODS_DIR
        history = history_store(data_dir / HISTORY_FILE, self.args)
        plane = LocalPlane(
            working_dir=working_dir,
            network=self.args.network,
            state_file=self.state,
            node_size=node_size(self.args),
            gang_scheduler_name=self.args.gang_scheduler_name,
            history=history,
            pods_dir=pods_dir,
        )
        dashboard = None
        async with Interrupts() as interrupts:
            self.interrupts = interrupts
            try:
                err.print(
                    f"starting the local plane (each pod runs in its own view of {working_dir}) ...",
                    style="dim",
                    markup=False,
                )
                await _interruptible(plane.start(), interrupts)
                if interrupts.first.is_set():
                    return interrupts.exit_code
                await plane.ensure_namespace(self.namespace)
                if self.args.dashboard:
                    dashboard = await start_for_plane(
                        plane, history.path if history else None, self.args.dashboard_port
                    )
                    url = dashboard.job_url(self.namespace, self.info.kind, self.name)
                    err.print(serving_line(dashboard, self.args.dashboard_port, url), markup=False)
                    open_in_browser(url)
                client = plane.client(self.namespace)
                try:
                    return await self._session(plane, client, interrupts)
                finally:
                    await client.close()
            finally:
                err.print("stopping the local plane ...", style="dim", markup=False)
                await stop_for_plane(dashboard)
                await plane.stop()
                self._name_outputs(pods_dir)

    def _name_outputs(self, pods_dir: Path) -> None:
        """Say where the pods' own working directories were kept (they hold what the pods wrote)."""
        pods = self.narrator.seen if self.narrator is not None else {}
        for pod, paths in sorted(kept_directories(pods_dir, self.namespace, pods).items()):
            for path in paths:
                err.print(f"{pod} wrote its files in {path}", style="dim", markup=False)

    async def _session(self, plane: LocalPlane, client: AsyncClient, interrupts: Interrupts) -> int:
        for companion in self.loaded.companions:  # what the job reads (its runtime) exists first
            try:
                await client.kube.create(companion, namespace=self.namespace)
            except ApiError as exc:
                if not exc.already_exists:  # kept from an earlier run of a --data-dir plane
                    raise
        await client.create(self.loaded.raw, self.namespace)
        follower = JobLogFollower(client, self.name, self.emit, kind=self.info.kind)
        # On a terminal the status line lives on stdout's console: what is said goes above it.
        status_console = out if out.is_terminal else err

        def say(line: str, alarming: bool) -> None:
            status_console.print(line, style="red" if alarming else "yellow", markup=False, highlight=False)

        replicas = sum(jobstate.desired_replicas(self.loaded.raw, self.info).values())
        self.narrator = PodNarrator(
            client, self.name, say, self.args.quiet_after, replicas or None, kind=self.info.kind
        )
        view = StatusView(status_console, self.info, self.name, live=False if self.args.no_status else None)
        tasks = [
            asyncio.create_task(follower.run(), name="follow logs"),
            asyncio.create_task(self._watch(client, view), name="watch job"),
            asyncio.create_task(self.narrator.run(), name="say why"),
            asyncio.create_task(self.narrator.watch_quiet(), name="notice quiet"),
        ]
        try:
            with view:
                hit = await first_of(
                    self.finished, interrupts.first, self.narrator.fatal, timeout=self.args.timeout
                )
            if hit is self.finished:
                await follower.drain(LOG_DRAIN_SECONDS)
                code = self._report()
                if self.args.keep and not interrupts.first.is_set():
                    await serve_until_interrupted(plane, self.args.kubeconfig_out, self.namespace, interrupts)
                return code
            if hit is None:
                err.print(
                    f"{self.info.singular}/{self.name}: not finished after {self.args.timeout:g}s; "
                    "deleting it",
                    style="bold red",
                    markup=False,
                )
            elif hit is self.narrator.fatal:
                err.print(
                    f"{self.info.singular}/{self.name} cannot run, and waiting will not help: deleting it",
                    style="bold red",
                    markup=False,
                )
            else:
                cause = "stdout was closed" if interrupts.signum == signal.SIGPIPE else "interrupted"
                err.print(
                    f"{cause}: deleting {self.info.singular}/{self.name} and stopping its pods "
                    "(Ctrl-C to hurry)",
                    style="yellow",
                    markup=False,
                )
            await follower.cancel()
            await self._delete(client, interrupts)
            return interrupts.exit_code if hit is interrupts.first else EXIT_FAILED
        finally:
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError, KubetrainError):
                    await task
            for problem in follower.errors:
                err.print(f"log stream problem: {problem}", style="dim", markup=False)

    async def _watch(self, client: AsyncClient, view: StatusView) -> None:
        try:
            async for job in client.watch_job(self.info.kind, self.name):
                if self.narrator is not None and (self.job or {}).get("status") != job.get("status"):
                    self.narrator.activity()
                self.job = job
                view.update(job)
                if jobstate.reached(job, jobstate.FINISHED):
                    self.finished.set()
                    return
        except NotFound:
            if not self.deleting:
                err.print(
                    f"{self.info.singular}/{self.name} was deleted by someone else", style="red", markup=False
                )
                self.finished.set()

    def _report(self) -> int:
        job = self.job or {}
        if jobstate.reached(job, ("Succeeded",)):
            err.print(f"{self.info.singular}/{self.name} Succeeded", style="bold green", markup=False)
            return EXIT_SUCCEEDED
        message = jobstate.failure_message(job) or "the job was deleted before it finished"
        err.print(f"{self.info.singular}/{self.name} Failed: {message}", style="bold red", markup=False)
        return EXIT_FAILED

    async def _delete(self, client: AsyncClient, interrupts: Interrupts) -> None:
        """Foreground delete: the job goes once its pods went, i.e. once the node killed them."""
        self.deleting = True
        try:
            await client.delete(self.info.kind, self.name)
            await _interruptible(
                client.wait_deleted(self.info.kind, self.name, DELETE_WAIT_SECONDS), interrupts, hurry=True
            )
        except KubetrainError as exc:
            err.print(
                f"could not delete the job cleanly ({exc}); stopping the node kills its processes",
                style="yellow",
                markup=False,
            )


async def _interruptible(coro: Awaitable[object], interrupts: Interrupts, hurry: bool = False) -> None:
    """Await `coro` unless a signal (the second one when `hurry`) comes first, then cancel it."""
    task = asyncio.ensure_future(coro)
    stop = asyncio.ensure_future((interrupts.second if hurry else interrupts.first).wait())
    try:
        await asyncio.wait({task, stop}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stop.cancel()
    if task.done():
        task.result()
        return
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


def _expected_labels(loaded: LoadedJob, info: KindInfo) -> list[str]:
    """`master-0`, `worker-0`, `worker-1`... from the spec, so prefixes align from the first line."""
    labels = []
    for rtype, replicas in jobstate.desired_replicas(loaded.raw, info).items():
        labels += [f"{rtype.lower()}-{i}" for i in range(replicas)]
    return labels
