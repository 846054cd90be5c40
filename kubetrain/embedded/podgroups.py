"""The PodGroup CRDs of the gang schedulers the embedded binder stands in for.

A cluster gets them by installing scheduler-plugins or Volcano; the local plane installs them
itself, so a job's PodGroup is created, read and reported on as on that cluster.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

import yaml

PODGROUP_CRD_FILES = ("scheduling.x-k8s.io_podgroups.yaml", "scheduling.volcano.sh_podgroups.yaml")


def podgroup_crds() -> list[dict[str, Any]]:
    """scheduler-plugins' (`scheduling.x-k8s.io/v1alpha1`) and Volcano's PodGroup CRDs."""
    data = resources.files(__package__).joinpath("data")
    return [yaml.safe_load(data.joinpath(name).read_text()) for name in PODGROUP_CRD_FILES]
