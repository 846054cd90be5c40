"""The JobSet CRD the local plane serves: kubernetes-sigs/jobset v0.10.1's, shipped unchanged
in ``kubetrain/embedded/data`` (a cluster gets it by installing JobSet)."""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

import yaml

JOBSET_CRD_FILE = "jobset.x-k8s.io_jobsets.yaml"
JOBSET_VERSION = "v0.10.1"


@cache
def _parsed() -> dict[str, Any]:
    text = resources.files("kubetrain.embedded").joinpath("data", JOBSET_CRD_FILE).read_text()
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # 10x faster on this 780 kB schema
    return dict(yaml.load(text, Loader=loader))


def jobset_crd() -> dict[str, Any]:
    """The CRD object (a fresh copy: callers may change it)."""
    import copy

    return copy.deepcopy(_parsed())
