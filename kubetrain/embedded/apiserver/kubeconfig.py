"""A kubeconfig any Kubernetes client can load to reach the embedded server: its CA and token.

The token is the server's only credential, so the file is created 0600 (never readable by
others, not even between creating and chmod-ing it) and replaced atomically: a reader sees the
old file or the new one, and a symlink planted at the path is replaced, not followed.
"""

from __future__ import annotations

import base64
import contextlib
import os
import tempfile
from pathlib import Path
from typing import Any

import yaml


def kubeconfig_dict(
    server_url: str, token: str, ca_pem: bytes, context: str = "kubetrain", namespace: str = "default"
) -> dict[str, Any]:
    cluster = {"server": server_url, "certificate-authority-data": base64.b64encode(ca_pem).decode()}
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "clusters": [{"name": context, "cluster": cluster}],
        "users": [{"name": context, "user": {"token": token}}],
        "contexts": [
            {"name": context, "context": {"cluster": context, "user": context, "namespace": namespace}}
        ],
        "current-context": context,
    }


def write_kubeconfig(
    path: str | os.PathLike[str],
    server_url: str,
    token: str,
    ca_pem: bytes,
    context: str = "kubetrain",
    namespace: str = "default",
) -> Path:
    """Write the file (mode 0600, as kubectl expects for credentials) and return its path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(kubeconfig_dict(server_url, token, ca_pem, context, namespace), sort_keys=False)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)  # 0600 from the start
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return target
