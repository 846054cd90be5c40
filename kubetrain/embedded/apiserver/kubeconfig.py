"""A kubeconfig any Kubernetes client can load to reach the embedded server."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

# The server ignores credentials; a token keeps clients from prompting for any.
TOKEN = "kubetrain-embedded"


def kubeconfig_dict(
    server_url: str, context: str = "kubetrain", namespace: str = "default"
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "clusters": [{"name": context, "cluster": {"server": server_url}}],
        "users": [{"name": context, "user": {"token": TOKEN}}],
        "contexts": [
            {"name": context, "context": {"cluster": context, "user": context, "namespace": namespace}}
        ],
        "current-context": context,
    }


def write_kubeconfig(
    path: str | os.PathLike[str], server_url: str, context: str = "kubetrain", namespace: str = "default"
) -> Path:
    """Write the file (mode 0600, as kubectl expects for credentials) and return its path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(yaml.safe_dump(kubeconfig_dict(server_url, context, namespace), sort_keys=False))
    target.chmod(0o600)
    return target
