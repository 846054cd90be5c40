"""Which kubeconfig, context and namespace a client uses, resolved the way kubectl does.

Order: an explicit path, else the first existing file of $KUBECONFIG, else ~/.kube/config.
The namespace is the explicit one, else the context's, else "default". Failures become a
`ConfigError` naming the file and how to get a working one (e.g. `kubetrain up`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kubetrain.client.errors import ConfigError

DEFAULT_PATH = "~/.kube/config"
HINT = "start a local plane with `kubetrain up` and `export KUBECONFIG=<the file it prints>`"


@dataclass(frozen=True)
class Target:
    """A resolved kubeconfig file, context name and namespace."""

    path: str
    context: str
    namespace: str


def kubeconfig_path(explicit: str | os.PathLike[str] | None = None) -> str:
    """The kubeconfig file to use; raises ConfigError when there is none."""
    if explicit:
        path = Path(explicit).expanduser()
        if not path.is_file():
            raise ConfigError(f"kubeconfig {path} does not exist ({HINT})")
        return str(path)
    for entry in os.environ.get("KUBECONFIG", "").split(os.pathsep):
        if entry and Path(entry).expanduser().is_file():
            return str(Path(entry).expanduser())
    default = Path(DEFAULT_PATH).expanduser()
    if default.is_file():
        return str(default)
    raise ConfigError(f"no kubeconfig found ($KUBECONFIG is unset or missing, no {DEFAULT_PATH}): {HINT}")


def _read(path: str) -> dict[str, Any]:
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read kubeconfig {path}: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"kubeconfig {path} is not a kubeconfig (expected a YAML mapping)")
    return data


def resolve(
    path: str | os.PathLike[str] | None = None, context: str | None = None, namespace: str | None = None
) -> Target:
    """The file, context and namespace a client should use."""
    file = kubeconfig_path(path)
    data = _read(file)
    name = context or data.get("current-context") or ""
    entries = [c for c in data.get("contexts") or () if isinstance(c, dict)]
    contexts = {c.get("name"): c.get("context") or {} for c in entries}
    if not name:
        raise ConfigError(
            f"kubeconfig {file} has no current-context: pass --context (one of: "
            f"{', '.join(map(str, contexts)) or 'none defined'})"
        )
    if name not in contexts:
        raise ConfigError(
            f'context "{name}" is not in kubeconfig {file} (known: {", ".join(map(str, contexts)) or "none"})'
        )
    ns = namespace or contexts[name].get("namespace") or "default"
    return Target(file, str(name), str(ns))
