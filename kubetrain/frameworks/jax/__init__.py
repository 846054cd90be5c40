"""JAXJob, one package: its wire type and description (`wire.py`) and its framework plugin
(`plugin.py`); `kubetrain.kinds.registry` registers it with `generic(JAX)`."""

from kubetrain.frameworks.jax.plugin import JAX, Jax
from kubetrain.frameworks.jax.wire import JAXJOB, JAXJobSpec

__all__ = ["JAX", "JAXJOB", "JAXJobSpec", "Jax"]
