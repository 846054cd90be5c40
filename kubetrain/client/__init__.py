"""The kubetrain Python client: job verbs over the Kubernetes API (`Client` sync, `AsyncClient`)."""

from kubetrain.client.aio import BACKGROUND, FOREGROUND, AsyncClient
from kubetrain.client.errors import (
    AlreadyExists,
    ApiFailure,
    ConfigError,
    InvalidInput,
    KubetrainError,
    NotFound,
    UnknownKind,
    Unreachable,
    ValidationError,
    WaitTimeout,
)
from kubetrain.client.kinds import resolve_kind
from kubetrain.client.sync import Client

__all__ = [
    "BACKGROUND",
    "FOREGROUND",
    "AlreadyExists",
    "ApiFailure",
    "AsyncClient",
    "Client",
    "ConfigError",
    "InvalidInput",
    "KubetrainError",
    "NotFound",
    "UnknownKind",
    "Unreachable",
    "ValidationError",
    "WaitTimeout",
    "resolve_kind",
]
