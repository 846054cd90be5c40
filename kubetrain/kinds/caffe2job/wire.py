"""Caffe2Job's description (`kubeflow.org/v1alpha1`, the archived caffe2-operator) and its parse."""

from __future__ import annotations

from typing import Any

from kubetrain.api.fielderrors import ErrorList
from kubetrain.api.kinds import RESTART_NEVER, V1ALPHA1, KindInfo
from kubetrain.api.standalone import parse_standalone
from kubetrain.kinds.caffe2job.types import Caffe2Job, Caffe2JobSpec, Caffe2JobStatus

CAFFE2JOB = KindInfo(
    kind="Caffe2Job",
    plural="caffe2jobs",
    singular="caffe2job",
    replica_specs_field="replicaSpecs",
    replica_types=("Worker",),
    default_container="caffe2",
    default_port_name="caffe2job-port",
    default_port=2222,
    default_restart_policy=RESTART_NEVER,
    framework="caffe2",
    controller_name="caffe2-operator",
    spec_type=Caffe2JobSpec,
    version=V1ALPHA1,
    status_type=Caffe2JobStatus,
)


def parse(raw: Any) -> tuple[Caffe2Job | None, KindInfo | None, ErrorList]:
    """Decode a Caffe2Job; never raises (like `parse_job`)."""
    return parse_standalone(raw, (CAFFE2JOB,), Caffe2Job)
