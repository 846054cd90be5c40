"""Small job builders and waits shared by the operator-process tier and the cluster tier.

Every kind gets a one-pod job on the replica type that decides its outcome, running a Python
command: on the embedded node the command runs in this environment, on a real node in `IMAGE`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Awaitable, Callable
from typing import Any

from kubetrain.kinds.registry import REPLICA_SPEC_KINDS as KINDS
from kubetrain.kube.errors import ApiError
from kubetrain.runtime.transport import KubeClient

JsonDict = dict[str, Any]

IMAGE = os.environ.get("KUBETRAIN_E2E_IMAGE", "python:3.11-slim")
DECIDING_REPLICA = {
    "TFJob": "Worker",
    "PyTorchJob": "Master",
    "XGBoostJob": "Master",
    "PaddleJob": "Master",
    "JAXJob": "Worker",
    "MXJob": "Worker",
}
"""One replica type per kind whose single pod decides success or failure."""


def job(
    kind: str,
    name: str,
    namespace: str,
    script: str = "print('ok')",
    *,
    replicas: int = 1,
    restart_policy: str = "Never",
    rtype: str | None = None,
    run_policy: JsonDict | None = None,
    volumes: bool = False,
) -> JsonDict:
    """A job of `replicas` pods of `rtype` running `python -c script`."""
    info = KINDS[kind]
    container: JsonDict = {
        "name": info.default_container,
        "image": IMAGE,
        "command": ["python", "-c", script],
    }
    pod_spec: JsonDict = {"containers": [container]}
    if volumes:
        container["volumeMounts"] = [{"name": "scratch", "mountPath": "/scratch"}]
        pod_spec["volumes"] = [{"name": "scratch", "emptyDir": {}}]
    spec: JsonDict = {
        info.replica_specs_field: {
            rtype or DECIDING_REPLICA[kind]: {
                "replicas": replicas,
                "restartPolicy": restart_policy,
                "template": {"spec": pod_spec},
            }
        }
    }
    # Always a runPolicy: the upstream SDK's models refuse jobs without one (its list_jobs fails).
    spec["runPolicy"] = {"suspend": False, **(run_policy or {})}
    return {
        "apiVersion": info.api_version,
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def conditions(obj: JsonDict | None) -> dict[str, str]:
    """Condition type -> status of a job."""
    return {c["type"]: c["status"] for c in ((obj or {}).get("status") or {}).get("conditions") or ()}


async def wait_for(
    check: Callable[[], Awaitable[Any]], timeout: float, what: str, interval: float = 0.1
) -> Any:
    """Poll `check` until it returns something truthy; its last value explains a timeout."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        last = await check()
        if last:
            return last
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not after {timeout}s (last: {last!r})")
        await asyncio.sleep(interval)


async def get_or_none(
    kube: KubeClient, api_version: str, kind: str, namespace: str, name: str
) -> JsonDict | None:
    try:
        return await kube.get(api_version, kind, namespace, name)
    except ApiError as err:
        if err.not_found:
            return None
        raise


async def wait_condition(kube: KubeClient, obj: JsonDict, ctype: str, timeout: float = 60.0) -> JsonDict:
    meta = obj["metadata"]

    async def check() -> JsonDict | None:
        current = await get_or_none(kube, obj["apiVersion"], obj["kind"], meta["namespace"], meta["name"])
        return current if conditions(current).get(ctype) == "True" else None

    result: JsonDict = await wait_for(check, timeout, f"{obj['kind']} {meta['name']} {ctype}")
    return result


async def pods_of(kube: KubeClient, namespace: str, job_name: str) -> list[JsonDict]:
    pods, _ = await kube.list(
        "v1", "Pod", namespace, label_selector=f"training.kubeflow.org/job-name={job_name}"
    )
    return pods


class PodAddedLog:
    """Every pod ADDED event of a namespace, from a watch started before the action under test."""

    def __init__(self, kube: KubeClient, namespace: str) -> None:
        self.kube = kube
        self.namespace = namespace
        self.added: list[str] = []
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        _, rv = await self.kube.list("v1", "Pod", self.namespace)
        self._task = asyncio.create_task(self._run(rv))

    async def _run(self, rv: str) -> None:
        while True:
            try:
                async for event in self.kube.watch(
                    "v1", "Pod", self.namespace, resource_version=rv, timeout_seconds=300
                ):
                    obj = event.get("object") or {}
                    rv = (obj.get("metadata") or {}).get("resourceVersion") or rv
                    if event.get("type") == "ADDED":
                        self.added.append(obj["metadata"]["name"])
            except ApiError:
                await asyncio.sleep(0.2)

    def duplicates(self) -> list[str]:
        return sorted({n for n in self.added if self.added.count(n) > 1})

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
