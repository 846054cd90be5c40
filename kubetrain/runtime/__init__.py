"""The operator runtime: transport, informers, work queue, expectations, events, manager.

Everything with I/O lives here; the reconcile decisions live in `kubetrain.controller`.
"""

from kubetrain.kube.errors import ApiError
from kubetrain.kube.resources import ResourceRegistry, ResourceType
from kubetrain.runtime.cache import Change, Store
from kubetrain.runtime.config import RuntimeConfig, UnsupportedScheme
from kubetrain.runtime.events import EventCorrelator, EventRecorder
from kubetrain.runtime.expectations import Expectations
from kubetrain.runtime.informer import Informer
from kubetrain.runtime.manager import Manager, Planner
from kubetrain.runtime.reflector import Reflector
from kubetrain.runtime.transport import KubeClient
from kubetrain.runtime.workqueue import QueueShutDown, WorkQueue

__all__ = [
    "ApiError",
    "Change",
    "EventCorrelator",
    "EventRecorder",
    "Expectations",
    "Informer",
    "KubeClient",
    "Manager",
    "Planner",
    "QueueShutDown",
    "Reflector",
    "ResourceRegistry",
    "ResourceType",
    "RuntimeConfig",
    "Store",
    "UnsupportedScheme",
    "WorkQueue",
]
