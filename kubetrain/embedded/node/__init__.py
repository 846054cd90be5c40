"""The local node: runs the pods bound to it as processes of this machine.

The container image is NOT run: each container's command runs as a local process, in the
Python environment kubetrain runs in or in one an image map names (`images`). Pods get their own
loopback IP and resolve Service names (`network`), volumes are files in a per-pod sandbox with
mount paths rewritten (`volumes`, `paths`), and status, restarts, deletion and logs behave as with
a kubelet (`podworker`, `logs`).

Starting it next to the embedded API server::

    api = KubeAPI.for_url(server.url, token=server.token, ssl_context=server.client_ssl_context())
    agent = NodeAgent(api, NodeConfig())
    await agent.start()
    server.log_provider = agent.log_provider
    ...
    await agent.stop(); await api.close()
"""

from kubetrain.kube.client import KubeAPI
from kubetrain.kube.errors import ApiError

from .agent import NodeAgent
from .config import NodeConfig
from .images import ImageMap, LocalEnvironment
from .network import NetworkUnavailable

__all__ = [
    "ApiError",
    "ImageMap",
    "KubeAPI",
    "LocalEnvironment",
    "NetworkUnavailable",
    "NodeAgent",
    "NodeConfig",
]
