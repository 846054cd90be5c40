"""The kubetrain Python client: job verbs over the Kubernetes API (`Client` sync, `AsyncClient`).

Names resolve on first use (PEP 562), so importing one light submodule (`kubetrain.client.errors`,
which the CLI needs before it knows the command) does not pull in aiohttp and kubernetes_asyncio.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names for type checkers; at run time `__getattr__` imports them on use
    from kubetrain.client.aio import BACKGROUND as BACKGROUND
    from kubetrain.client.aio import FOREGROUND as FOREGROUND
    from kubetrain.client.aio import AsyncClient as AsyncClient
    from kubetrain.client.errors import AlreadyExists as AlreadyExists
    from kubetrain.client.errors import ApiFailure as ApiFailure
    from kubetrain.client.errors import ConfigError as ConfigError
    from kubetrain.client.errors import InvalidInput as InvalidInput
    from kubetrain.client.errors import JobStuck as JobStuck
    from kubetrain.client.errors import KubetrainError as KubetrainError
    from kubetrain.client.errors import NotFound as NotFound
    from kubetrain.client.errors import UnknownKind as UnknownKind
    from kubetrain.client.errors import Unreachable as Unreachable
    from kubetrain.client.errors import ValidationError as ValidationError
    from kubetrain.client.errors import WaitTimeout as WaitTimeout
    from kubetrain.client.kinds import resolve_kind as resolve_kind
    from kubetrain.client.sync import Client as Client

_EXPORTS: dict[str, tuple[str, ...]] = {
    "aio": ("BACKGROUND", "FOREGROUND", "AsyncClient"),
    "sync": ("Client",),
    "kinds": ("resolve_kind",),
    "errors": (
        "AlreadyExists",
        "ApiFailure",
        "ConfigError",
        "InvalidInput",
        "JobStuck",
        "KubetrainError",
        "NotFound",
        "UnknownKind",
        "Unreachable",
        "ValidationError",
        "WaitTimeout",
    ),
}
"""Each public name by the submodule that defines it."""
_HOME = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = sorted(_HOME)


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module 'kubetrain.client' has no attribute {name!r}")
    return getattr(import_module(f"kubetrain.client.{_HOME[name]}"), name)
