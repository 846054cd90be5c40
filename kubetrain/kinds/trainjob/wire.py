"""The three Trainer v2 kinds' descriptions (`trainer.kubeflow.org/v1alpha1`) and their parse.

Their schemas are upstream's CRDs, shipped unchanged (`crd.py`), so the `KindInfo`s only name the
kinds: the replica-spec fields are left empty (as MPIJob v2beta1's are), and `spec_type` is a
plain mapping, since nothing here decodes the spec into dataclasses: the webhook reads the raw
object, as the CRD's structural schema already checked its shape.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubetrain.api.fielderrors import ErrorList, invalid, not_supported
from kubetrain.api.kinds import KindInfo
from kubetrain.api.types import Envelope
from kubetrain.kinds.trainjob.constants import (
    CLUSTER_TRAINING_RUNTIME,
    CONTROLLER_NAME,
    GROUP,
    NODE,
    TRAINING_RUNTIME,
    TRAINJOB,
    VERSION,
)

JsonDict = dict[str, Any]


def _info(kind: str, plural: str, *, namespaced: bool = True, default_container: str = "") -> KindInfo:
    return KindInfo(
        kind=kind,
        plural=plural,
        singular=kind.lower(),
        replica_specs_field="",
        replica_types=(),
        default_container=default_container,
        default_port_name="",
        default_port=0,
        default_restart_policy="",
        framework="",
        controller_name=CONTROLLER_NAME,
        spec_type=dict,
        group=GROUP,
        version=VERSION,
        status_type=dict,
        namespaced=namespaced,
        printer_columns=(),
        webhook_name=f"validator.{kind.lower()}.{GROUP}",
    )


TRAINJOB_INFO = _info(TRAINJOB, "trainjobs", default_container=NODE)
"""Its default container is the trainer's, `node` (what `kubetrain logs/run` leave unnamed)."""
TRAINING_RUNTIME_INFO = _info(TRAINING_RUNTIME, "trainingruntimes")
CLUSTER_TRAINING_RUNTIME_INFO = _info(CLUSTER_TRAINING_RUNTIME, "clustertrainingruntimes", namespaced=False)


@dataclass
class TrainerObject(Envelope):
    """A TrainJob or runtime: the envelope's accessors over the raw object."""

    raw: JsonDict = field(default_factory=dict)

    @property
    def spec(self) -> JsonDict:
        spec = self.raw.get("spec")
        return spec if isinstance(spec, dict) else {}


def parser(info: KindInfo) -> Any:
    """The `parse` of one kind: refuses other kinds and apiVersions, never raises."""

    def parse(raw: Any) -> tuple[TrainerObject | None, KindInfo | None, ErrorList]:
        errors = ErrorList()
        if not isinstance(raw, dict) or raw.get("kind") != info.kind:
            errors.append(
                not_supported("kind", raw.get("kind") if isinstance(raw, dict) else None, [info.kind])
            )
            return None, None, errors
        if raw.get("apiVersion") != info.api_version:
            errors.append(not_supported("apiVersion", raw.get("apiVersion"), [info.api_version]))
        metadata = raw.get("metadata")
        metadata = metadata if isinstance(metadata, dict) else {}
        if not isinstance(metadata.get("name", ""), str):
            errors.append(invalid("metadata.name", metadata.get("name"), "must be of type string"))
        obj = TrainerObject(
            api_version=str(raw.get("apiVersion") or ""), kind=info.kind, metadata=metadata, raw=raw
        )
        return obj, info, errors

    return parse
