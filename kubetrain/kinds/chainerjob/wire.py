"""ChainerJob's description (`kubeflow.org/v1alpha1`, the archived chainer-operator) and its parse."""

from __future__ import annotations

from typing import Any

from kubetrain.api.fielderrors import ErrorList
from kubetrain.api.kinds import RESTART_NEVER, V1ALPHA1, KindInfo
from kubetrain.api.standalone import parse_standalone
from kubetrain.kinds.chainerjob.types import ChainerJob, ChainerJobSpec, ChainerJobStatus

CHAINERJOB = KindInfo(
    kind="ChainerJob",
    plural="chainerjobs",
    singular="chainerjob",
    replica_specs_field="workerSets",
    replica_types=("Master", "WorkerSet"),
    default_container="chainer",
    default_port_name="",
    default_port=0,
    default_restart_policy=RESTART_NEVER,
    framework="chainer",
    controller_name="chainer-operator",
    spec_type=ChainerJobSpec,
    version=V1ALPHA1,
    status_type=ChainerJobStatus,
    short_names=("chj", "chjs", "chjob", "chjobs"),
    categories=("all",),
)


def parse(raw: Any) -> tuple[ChainerJob | None, KindInfo | None, ErrorList]:
    """Decode a ChainerJob; never raises (like `parse_job`)."""
    return parse_standalone(raw, (CHAINERJOB,), ChainerJob)
