"""Upstream Kubeflow Trainer's default ClusterTrainingRuntimes, as `kubetrain install --runtimes`
ships them (manifests/runtimes/, upstream v2.3.0's files unchanged)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

RUNTIMES = Path(__file__).resolve().parents[1] / "manifests" / "runtimes"


def shipped_runtime(stem: str) -> dict[str, Any]:
    """One of them by file stem, e.g. `torch_distributed`, a fresh copy each call."""
    return dict(yaml.safe_load((RUNTIMES / f"{stem}.yaml").read_text(encoding="utf-8")))
