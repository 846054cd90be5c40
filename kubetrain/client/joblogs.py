"""Follow the logs of every pod of a job, including pods and containers recreated after restarts.

Level-triggered on pod status: each container *instance* (identified by its containerID, else its
start time, else its restart count) is streamed exactly once. When a container crashed and was
restarted before we saw it run, its output is fetched with `previous=true`, so fast crash loops
still show why they crashed.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kubetrain.client.errors import ApiFailure, KubetrainError, NotFound
from kubetrain.client.jobstate import replica_label
from kubetrain.kube.tasks import cancel_and_wait

if TYPE_CHECKING:  # aiohttp and kubernetes_asyncio load only when a command connects
    from kubetrain.client.aio import AsyncClient

JsonDict = dict[str, Any]
Emit = Callable[["Stream", str], None]
START_RETRIES = 20
START_RETRY_DELAY = 0.1


@dataclass(frozen=True)
class Stream:
    """One container instance's log: which pod, container and replica it belongs to."""

    pod: str
    uid: str
    container: str
    replica: str
    init: bool
    instance: str
    sole: bool = False
    """The pod has this one app container: it is the main one whatever its name."""


def streams_to_start(pod: JsonDict, job_name: str) -> list[tuple[Stream, bool]]:
    """`(stream, previous)` for every container instance the pod status shows as started.

    `previous` is True for an instance that already ended and was replaced (lastState).
    """
    meta, status = pod.get("metadata") or {}, pod.get("status") or {}
    replica = replica_label(pod, job_name)
    pod_name, uid = str(meta.get("name", "")), str(meta.get("uid", ""))
    sole = len((pod.get("spec") or {}).get("containers") or ()) <= 1
    out: list[tuple[Stream, bool]] = []
    for init, key in ((True, "initContainerStatuses"), (False, "containerStatuses")):
        for cs in status.get(key) or ():
            name = str(cs.get("name", ""))
            last = (cs.get("lastState") or {}).get("terminated")
            if last:
                ident = str(last.get("containerID") or last.get("startedAt") or "previous")
                out.append((Stream(pod_name, uid, name, replica, init, ident, sole and not init), True))
            state = cs.get("state") or {}
            current = state.get("running") or state.get("terminated")
            if current:
                ident = str(
                    current.get("containerID")
                    or cs.get("containerID")
                    or current.get("startedAt")
                    or f"restart-{cs.get('restartCount', 0)}"
                )
                out.append((Stream(pod_name, uid, name, replica, init, ident, sole and not init), False))
    return out


class JobLogFollower:
    """Streams every container instance of a job's pods to `emit(stream, line)`.

    `run()` watches pods until cancelled; `drain(timeout)` lets running streams finish (they end
    when their container ends) and then cancels the rest.
    """

    def __init__(
        self,
        client: AsyncClient,
        job_name: str,
        emit: Emit,
        *,
        replica: str | None = None,
        timestamps: bool = False,
        include_init: bool = True,
        tail: int | None = None,
        kind: str | None = None,
    ) -> None:
        self.client = client
        self.job_name = job_name
        self.kind = kind
        self.emit = emit
        self.replica = replica.lower() if replica else None
        self.timestamps = timestamps
        self.include_init = include_init
        self.tail = tail
        """Only the last N lines of the instances that already ran when we started (kubectl's
        `logs -f --tail N`); instances started later are new output, streamed whole."""
        self._seen: set[tuple[str, str, str]] = set()
        self._tasks: dict[asyncio.Task[None], Stream] = {}
        self._running: set[tuple[str, str]] = set()
        """(pod uid, container) whose latest status says running: their streams may never end."""
        self.errors: list[str] = []
        self.listed = asyncio.Event()
        """Set once the pods that existed at start have been considered."""

    async def run(self) -> None:
        try:
            async for etype, pod in self.client.watch_pods(self.job_name, self.listed.set, kind=self.kind):
                if etype != "DELETED":
                    self.consider(pod)
        finally:
            await self.cancel()

    def consider(self, pod: JsonDict) -> None:
        self._track_running(pod)
        for stream, previous in streams_to_start(pod, self.job_name):
            if self.replica and stream.replica != self.replica:
                continue
            if stream.init and not self.include_init:
                continue
            key = (stream.uid, stream.container, stream.instance)
            if key in self._seen:
                continue
            self._seen.add(key)
            tail = None if self.listed.is_set() else self.tail
            task = asyncio.create_task(
                self._stream(stream, previous, tail), name=f"logs {stream.pod}/{stream.container}"
            )
            self._tasks[task] = stream
            task.add_done_callback(self._forget)

    def _forget(self, task: asyncio.Task[None]) -> None:
        self._tasks.pop(task, None)

    def _track_running(self, pod: JsonDict) -> None:
        uid = str((pod.get("metadata") or {}).get("uid", ""))
        status = pod.get("status") or {}
        for cs in [*(status.get("initContainerStatuses") or ()), *(status.get("containerStatuses") or ())]:
            key = (uid, str(cs.get("name", "")))
            if (cs.get("state") or {}).get("running"):
                self._running.add(key)
            else:
                self._running.discard(key)

    async def _stream(self, stream: Stream, previous: bool, tail: int | None) -> None:
        for _ in range(START_RETRIES):
            try:
                async for line in self.client.logs(
                    stream.pod,
                    stream.container,
                    follow=not previous,
                    tail=tail,
                    timestamps=self.timestamps,
                    previous=previous,
                ):
                    self.emit(stream, line)
                return
            except NotFound:
                return  # the pod is gone (cleaned up): nothing more to read
            except ApiFailure as err:
                if err.status != 400:  # 400: the container is not started yet / no logs yet
                    self.errors.append(f"{stream.pod}/{stream.container}: {err}")
                    return
            except KubetrainError as err:
                self.errors.append(f"{stream.pod}/{stream.container}: {err}")
                return
            await asyncio.sleep(START_RETRY_DELAY)

    async def drain(self, timeout: float) -> None:
        """Let the streams of ended containers deliver their last lines (up to `timeout`), then
        cancel everything: streams of still-running containers would never end on their own."""
        if not self.listed.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.listed.wait(), timeout)
        finishing = {t for t, s in self._tasks.items() if (s.uid, s.container) not in self._running}
        if finishing:
            await asyncio.wait(finishing, timeout=timeout)
        await self.cancel()

    async def cancel(self) -> None:
        await cancel_and_wait(set(self._tasks))
