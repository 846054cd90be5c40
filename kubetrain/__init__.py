"""kubetrain: the Kubeflow training operators, re-implemented in Python and wire-compatible with upstream."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from kubetrain.client import AsyncClient, Client

__all__ = ["AsyncClient", "Client", "__version__"]

_LAZY = {"Client", "AsyncClient"}


def __getattr__(name: str) -> Any:
    """`kubetrain.Client` without importing aiohttp/kubernetes_asyncio for `import kubetrain`.

    Every subpackage import runs this file first; keeping it light keeps `kubetrain validate`,
    the API types and the embedded node cheap to import.
    """
    if name in _LAZY:
        from kubetrain import client

        return getattr(client, name)
    raise AttributeError(f"module 'kubetrain' has no attribute {name!r}")
