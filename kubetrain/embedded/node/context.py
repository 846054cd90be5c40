"""What every pod worker shares: the API, the network, the settings, the node's identity."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .config import NodeConfig
from .kubeapi import KubeAPI, core_path
from .network import PodNetwork

if TYPE_CHECKING:
    from .exec import ExecService

JsonDict = dict[str, Any]

_RESOURCE = {"configmap": "configmaps", "secret": "secrets"}


class ApiObjectSource:
    """ConfigMaps and Secrets read from the API server (an `ObjectSource`)."""

    def __init__(self, api: KubeAPI) -> None:
        self.api = api

    async def get(self, kind: str, namespace: str, name: str) -> JsonDict | None:
        return await self.api.get_or_none(core_path(_RESOURCE[kind], namespace, name))


@dataclass
class NodeContext:
    api: KubeAPI
    config: NodeConfig
    network: PodNetwork
    root: Path
    host_ip: str
    exec_service: ExecService | None = None  # the exec endpoint pods reach (see `exec`)

    @property
    def source(self) -> ApiObjectSource:
        return ApiObjectSource(self.api)

    @property
    def allocatable(self) -> dict[str, Fraction]:
        return {
            "cpu": Fraction(self.config.cpu),
            "memory": Fraction(self.config.memory_bytes),
            "ephemeral-storage": Fraction(self.config.ephemeral_storage_bytes),
        }
