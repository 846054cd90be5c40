"""The kubetrain Python client: job verbs over the Kubernetes API (`Client` sync, `AsyncClient`).

Names resolve on first use (PEP 562), so importing one light submodule (`kubetrain.client.errors`,
which the CLI needs before it knows the command) does not pull in aiohttp and kubernetes_asyncio.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kubetrain.client.aio import BACKGROUND, FOREGROUND, AsyncClient
    from kubetrain.client.errors import (
        AlreadyExists,
        ApiFailure,
        ConfigError,
        InvalidInput,
        JobStuck,
        KubetrainError,
        NotFound,
        UnknownKind,
        Unreachable,
        ValidationError,
        WaitTimeout,
    )
    from kubetrain.client.kinds import resolve_kind
    from kubetrain.client.sync import Client

_ERRORS = (
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
)
_HOME: dict[str, str] = {
    "BACKGROUND": "aio",
    "FOREGROUND": "aio",
    "AsyncClient": "aio",
    "Client": "sync",
    "resolve_kind": "kinds",
    **dict.fromkeys(_ERRORS, "errors"),
}

__all__ = [
    "BACKGROUND",
    "FOREGROUND",
    "AlreadyExists",
    "ApiFailure",
    "AsyncClient",
    "Client",
    "ConfigError",
    "InvalidInput",
    "JobStuck",
    "KubetrainError",
    "NotFound",
    "UnknownKind",
    "Unreachable",
    "ValidationError",
    "WaitTimeout",
    "resolve_kind",
]


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module 'kubetrain.client' has no attribute {name!r}")
    return getattr(import_module(f"kubetrain.client.{_HOME[name]}"), name)
