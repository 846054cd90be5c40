"""What the node's endpoints (exec, the kubelet API) may see of a running pod.

`PodWorker` satisfies these protocols; the endpoints depend on them rather than on the worker,
so that the worker (which reaches the endpoints' env through `context`) and the endpoints do
not import each other.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from .process import ContainerProcess

JsonDict = dict[str, Any]


class PodView(Protocol):
    """A pod the node runs, as last seen from the API server."""

    @property
    def pod(self) -> JsonDict: ...


class ExecTarget(PodView, Protocol):
    """A pod a command can be exec'd into: its names, address, processes and their environment."""

    @property
    def name(self) -> str: ...

    @property
    def namespace(self) -> str: ...

    @property
    def hostname(self) -> str: ...

    @property
    def pod_ip(self) -> str:
        """The pod's address; empty until it has one."""
        ...

    @property
    def finished(self) -> bool: ...

    @property
    def deleting(self) -> bool: ...

    @property
    def procs(self) -> Mapping[str, ContainerProcess]:
        """The latest process of each container that has started, by container name."""
        ...

    async def exec_environment(self, cspec: JsonDict, command: list[str]) -> tuple[dict[str, str], str]:
        """Env and working directory of `command` exec'd into container `cspec`."""
        ...
