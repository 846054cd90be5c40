"""A Kubernetes-compatible API server in memory, for the single-machine control plane and tests;
optionally kept in a SQLite file across restarts (``state_file``, see ``persistence``).

Generic by design: it knows the built-in kinds and learns custom kinds from the
CustomResourceDefinitions posted to it, like kube-apiserver.
"""

from .errors import APIError
from .faults import FaultInjector
from .logs import LogOptions, LogProvider, LogUnavailable, MemoryLogProvider
from .resources import ResourceType
from .server import EmbeddedAPIServer, ServerThread

__all__ = [
    "APIError",
    "EmbeddedAPIServer",
    "FaultInjector",
    "LogOptions",
    "LogProvider",
    "LogUnavailable",
    "MemoryLogProvider",
    "ResourceType",
    "ServerThread",
]
