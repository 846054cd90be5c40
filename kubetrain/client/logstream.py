"""Pod logs as lines, over kubernetes_asyncio's pods/log call with the raw response.

The transport's `request` decodes JSON and has no streaming mode, and pods/log answers plain
text that may stream forever (`follow`), so this uses kubernetes_asyncio's public
`read_namespaced_pod_log(..., _preload_content=False)`: it gives us the aiohttp response with
the kubeconfig's auth and TLS applied, and we split the bytes into lines ourselves.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any, cast

import aiohttp
from kubernetes_asyncio.client import ApiClient, Configuration, CoreV1Api

from kubetrain.kube.errors import ApiError

NO_TIMEOUT = aiohttp.ClientTimeout(total=None, sock_connect=30)


async def stream_pod_log(
    configuration: Configuration,
    namespace: str,
    pod: str,
    container: str | None,
    *,
    follow: bool = False,
    tail: int | None = None,
    timestamps: bool = False,
    previous: bool = False,
) -> AsyncIterator[str]:
    """Yield the log's lines without their newline; raises ApiError on a non-2xx answer."""
    kwargs: dict[str, Any] = {
        "follow": follow,
        "timestamps": timestamps,
        "previous": previous,
        "_preload_content": False,
        "_request_timeout": NO_TIMEOUT,
    }
    if container:
        kwargs["container"] = container
    if tail is not None:
        kwargs["tail_lines"] = tail
    async with ApiClient(configuration) as api:
        # With _preload_content=False the generated method returns the raw aiohttp response.
        resp = cast(
            aiohttp.ClientResponse, await CoreV1Api(api).read_namespaced_pod_log(pod, namespace, **kwargs)
        )
        try:
            if resp.status >= 300:
                raw = await resp.read()
                raise ApiError.from_status(resp.status, _decode(raw))
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


def _decode(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace")
