"""`Client`: the blocking face of `AsyncClient`, for scripts, notebooks and the CLI.

It owns a private event loop on a daemon thread and runs every call there, so it works the same
from plain scripts and from code that already runs an event loop (Jupyter), where
`asyncio.run` would refuse to start.
"""

from __future__ import annotations

import asyncio
import os
import threading
import weakref
from collections.abc import AsyncIterator, Coroutine, Iterator, Sequence
from concurrent.futures import Future
from types import TracebackType
from typing import Any, TypeVar

from kubetrain.client import jobstate
from kubetrain.client.aio import FOREGROUND, AsyncClient
from kubetrain.client.source import JobSource

T = TypeVar("T")
JsonDict = dict[str, Any]
JsonList = list[JsonDict]


class _LoopThread:
    """An event loop running forever on a daemon thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="kubetrain-client", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        future: Future[T] = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result()
        except KeyboardInterrupt:
            future.cancel()
            raise

    def stop(self) -> None:
        if self._thread.is_alive():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(5)
        if not self.loop.is_running():
            self.loop.close()


class Client:
    """Job verbs against a Kubernetes API server (a real cluster or `kubetrain up`).

    >>> client = kubetrain.Client()                       # $KUBECONFIG / ~/.kube/config
    >>> job = client.create("examples/pytorch/pytorchjob-master-worker.yaml")
    >>> client.wait("pytorchjob", job["metadata"]["name"], timeout=600)

    Kinds are accepted in any case, plural or singular (`tfjob`, `TFJobs`, `pytorchjob`).
    `url=` (with the server's `token=` and `ca_file=`) skips the kubeconfig, for an in-process plane.
    Errors are `kubetrain.client.KubetrainError` subclasses with a message meant for users.
    """

    def __init__(
        self,
        kubeconfig: str | os.PathLike[str] | None = None,
        context: str | None = None,
        namespace: str | None = None,
        *,
        url: str | None = None,
        token: str | None = None,
        ca_file: str | None = None,
    ) -> None:
        self._loop = _LoopThread()
        try:
            if url is not None:
                self._aio = self._loop.run(_for_url(url, namespace or "default", token, ca_file))
            else:
                self._aio = self._loop.run(AsyncClient.connect(kubeconfig, context, namespace))
        except BaseException:
            self._loop.stop()
            raise
        # A script that never calls close() must not end with "Unclosed client session" noise.
        self._finalizer = weakref.finalize(self, _shutdown, self._loop, self._aio)

    @property
    def namespace(self) -> str:
        return self._aio.namespace

    def close(self) -> None:
        self._finalizer()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- verbs -------------------------------------------------------------------------------

    def create(self, job: JobSource, namespace: str | None = None) -> JsonDict:
        return self._loop.run(self._aio.create(job, namespace))

    def apply(
        self, job: JobSource, namespace: str | None = None, *, force_conflicts: bool = False
    ) -> tuple[JsonDict, str]:
        return self._loop.run(self._aio.apply(job, namespace, force_conflicts=force_conflicts))

    def get(self, kind: str, name: str) -> JsonDict:
        return self._loop.run(self._aio.get(kind, name))

    def list(
        self, kind: str | None = None, *, all_namespaces: bool = False, selector: str | None = None
    ) -> JsonList:
        return self._loop.run(self._aio.list(kind, all_namespaces=all_namespaces, selector=selector))

    def delete(self, kind: str, name: str, propagation: str = FOREGROUND) -> JsonDict:
        return self._loop.run(self._aio.delete(kind, name, propagation))

    def wait_deleted(self, kind: str, name: str, timeout: float | None = None) -> None:
        self._loop.run(self._aio.wait_deleted(kind, name, timeout))

    def wait(
        self,
        kind: str,
        name: str,
        for_: Sequence[str] = jobstate.FINISHED,
        timeout: float | None = None,
        *,
        fail_when_stuck: bool = True,
    ) -> JsonDict:
        """Block until a condition of `for_`; raises `JobStuck` when the job cannot get there."""
        return self._loop.run(self._aio.wait(kind, name, for_, timeout, fail_when_stuck=fail_when_stuck))

    def pods(self, kind: str, name: str) -> JsonList:
        return self._loop.run(self._aio.pods(kind, name))

    def get_pod(self, name: str) -> JsonDict:
        return self._loop.run(self._aio.get_pod(name))

    def logs(
        self,
        pod: str,
        container: str | None = None,
        follow: bool = False,
        tail: int | None = None,
        timestamps: bool = False,
        previous: bool = False,
    ) -> Iterator[str]:
        """Lines of the pod's log; with `follow`, a blocking iterator until the container ends."""
        return self._iterate(
            self._aio.logs(pod, container, follow=follow, tail=tail, timestamps=timestamps, previous=previous)
        )

    def events(self, kind: str, name: str) -> JsonList:
        return self._loop.run(self._aio.events(kind, name))

    def describe(self, kind: str, name: str) -> str:
        return self._loop.run(self._aio.describe(kind, name))

    def _iterate(self, agen: AsyncIterator[str]) -> Iterator[str]:
        async def next_item() -> tuple[bool, str]:
            try:
                return True, await agen.__anext__()
            except StopAsyncIteration:
                return False, ""

        try:
            while True:
                more, item = self._loop.run(next_item())
                if not more:
                    return
                yield item
        finally:
            aclose = getattr(agen, "aclose", None)
            if aclose is not None and self._loop.loop.is_running():
                self._loop.run(aclose())


def _shutdown(loop: _LoopThread, aio: AsyncClient) -> None:
    if loop.loop.is_running():
        loop.run(aio.close())
    loop.stop()


async def _for_url(url: str, namespace: str, token: str | None, ca_file: str | None) -> AsyncClient:
    # Built on the loop thread: the transport's aiohttp session binds to the running loop.
    return AsyncClient.for_url(url, namespace, token, ca_file)
