"""What every pod worker shares: the API, the network, the settings, the node's identity."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, Protocol

from kubetrain.kube.client import KubeAPI, core_path
from kubetrain.kube.errors import ApiError

from .config import NodeConfig
from .gpus import GPUAllocator
from .network import PodNetwork

JsonDict = dict[str, Any]

_RESOURCE = {"configmap": "configmaps", "secret": "secrets"}


class ApiObjectSource:
    """ConfigMaps, Secrets and service-account tokens from the API server (an `ObjectSource`)."""

    def __init__(self, api: KubeAPI) -> None:
        self.api = api

    async def get(self, kind: str, namespace: str, name: str) -> JsonDict | None:
        return await self.api.get_or_none(core_path(_RESOURCE[kind], namespace, name))

    async def token(self, pod: JsonDict, service_account: str, audience: str, expiration: int) -> str | None:
        """A token bound to `pod` through the TokenRequest API, as the kubelet requests it; None
        when the server has no such API (404: a bare API server, e.g. the embedded one)."""
        meta = pod.get("metadata") or {}
        body = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {
                "audiences": [audience] if audience else [],
                "expirationSeconds": expiration,
                "boundObjectRef": {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": meta.get("name"),
                    "uid": meta.get("uid"),
                },
            },
        }
        path = core_path("serviceaccounts", meta.get("namespace") or "default", service_account, "token")
        try:
            answer = await self.api.create(path, body)
        except ApiError as err:
            if err.status in (404, 405):
                return None
            raise
        return str((answer.get("status") or {}).get("token") or "")


class PodEnvProvider(Protocol):
    """A node service that puts pods in reach of it through their env (the exec endpoint does)."""

    def pod_env(self, namespace: str, name: str, base: Mapping[str, str]) -> dict[str, str]:
        """Variables to lay over the final env `base` of a container of pod `namespace/name`."""
        ...


@dataclass
class NodeContext:
    api: KubeAPI
    config: NodeConfig
    network: PodNetwork
    root: Path
    host_ip: str
    env_provider: PodEnvProvider | None = None  # the exec endpoint pods reach (see `exec`)
    gpus: GPUAllocator = field(default_factory=lambda: GPUAllocator(()))

    @property
    def source(self) -> ApiObjectSource:
        return ApiObjectSource(self.api)

    @property
    def allocatable(self) -> dict[str, Fraction]:
        return self.config.allocatable()
