"""Pod logs as lines, streamed through the Kubernetes client's aiohttp session.

pods/log answers plain text that may stream forever (`follow`), so it is read as it arrives
(`KubeAPI.stream`, with the kubeconfig's credentials and TLS) and split into lines here.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp

from kubetrain.kube.client import KubeAPI, core_path, error_from

NO_TIMEOUT = aiohttp.ClientTimeout(total=None, sock_connect=30)


async def stream_pod_log(
    api: KubeAPI,
    namespace: str,
    pod: str,
    container: str | None,
    *,
    follow: bool = False,
    tail: int | None = None,
    timestamps: bool = False,
    previous: bool = False,
) -> AsyncIterator[str]:
    """Yield the log's lines without their newline; raises ApiError on a non-2xx answer (status 0
    when the server cannot be reached) and aiohttp's errors when the stream breaks."""
    query = {"follow": str(follow).lower(), "timestamps": str(timestamps).lower()}
    query["previous"] = str(previous).lower()
    if container:
        query["container"] = container
    if tail is not None:
        query["tailLines"] = str(tail)
    path = core_path("pods", namespace, pod, "log")
    resp = await api.stream("GET", path, query=query, timeout=NO_TIMEOUT, accept="*/*")
    try:
        if resp.status >= 300:
            raise error_from(resp.status, await resp.read(), None)
        pending = b""
        async for chunk in resp.content.iter_any():
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                yield line.decode("utf-8", "replace")
        if pending:
            yield pending.decode("utf-8", "replace")
    finally:
        resp.release()
