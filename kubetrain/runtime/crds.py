"""Install or update our CustomResourceDefinitions and wait until the API server serves them."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from kubetrain.kube.errors import ApiError
from kubetrain.runtime.transport import KubeClient

log = logging.getLogger(__name__)

JsonDict = dict[str, Any]
CRD_API = "apiextensions.k8s.io/v1"


def is_established(crd: JsonDict) -> bool:
    return any(
        c.get("type") == "Established" and c.get("status") == "True"
        for c in (crd.get("status") or {}).get("conditions") or ()
    )


async def apply_crd(client: KubeClient, manifest: JsonDict) -> JsonDict:
    """Create the CRD, or replace the existing one keeping its resourceVersion (retry on 409)."""
    name = manifest["metadata"]["name"]
    try:
        return await client.create(manifest)
    except ApiError as err:
        if not err.conflict:
            raise
    for _ in range(5):
        current = await client.get(CRD_API, "CustomResourceDefinition", None, name)
        body = {
            **manifest,
            "metadata": {**manifest["metadata"], "resourceVersion": current["metadata"]["resourceVersion"]},
        }
        try:
            return await client.replace(body)
        except ApiError as err:
            if not err.conflict:
                raise
    raise ApiError(409, "Conflict", f"CRD {name} kept changing while we updated it")


async def install_crds(client: KubeClient, manifests: list[JsonDict], timeout: float = 60.0) -> None:
    """Apply every CRD, register its kinds with the client, and wait for Established."""
    for manifest in manifests:
        await apply_crd(client, manifest)
        client.registry.register_crd(manifest)
    deadline = time.monotonic() + timeout
    pending = {m["metadata"]["name"] for m in manifests}
    while pending:
        for name in sorted(pending):
            crd = await client.get(CRD_API, "CustomResourceDefinition", None, name)
            if is_established(crd):
                pending.discard(name)
        if pending:
            if time.monotonic() > deadline:
                raise TimeoutError(f"CRDs not established after {timeout}s: {sorted(pending)}")
            await asyncio.sleep(0.1)
    log.info("CRDs established: %s", ", ".join(m["metadata"]["name"] for m in manifests))
