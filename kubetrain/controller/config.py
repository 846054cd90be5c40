"""Settings of the reconciler that mirror upstream operator flags, and what it watches.

Upstream's flags: docs/upstream-behaviour.md#operator-flags.
"""

from __future__ import annotations

from dataclasses import dataclass

VOLCANO_PODGROUP = ("scheduling.volcano.sh/v1beta1", "PodGroup", "podgroups")
SCHEDULER_PLUGINS_PODGROUP = ("scheduling.x-k8s.io/v1alpha1", "PodGroup", "podgroups")
HPA = ("autoscaling/v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers")
DEFAULT_MPI_KUBECTL_DELIVERY_IMAGE = "ghcr.io/kubeflow/training-v1/kubectl-delivery:latest"
"""training-operator v1.9.2's `--mpi-kubectl-delivery-image` default (MPIJob v1 launcher init container;
its pkg/config `MPIKubectlDeliveryImageDefault`)."""


@dataclass(frozen=True)
class ControllerConfig:
    """Knobs of the pure reconciler; the runtime builds it from the operator flags."""

    gang_scheduler_name: str = ""
    """`--gang-scheduler-name`: "volcano" (any case) or a scheduler-plugins scheduler name; "" = off."""
    gang_schedulers_named_by_pods: tuple[str, ...] = ()
    """Without a `gang_scheduler_name`, a job whose pod templates name one of these schedulers is
    gang scheduled by it (the local plane, whose binder is every one of them); () = never."""
    cluster_domain: str = ""
    """`CUSTOM_CLUSTER_DOMAIN` of the operator process: suffix of TF_CONFIG hosts."""
    pytorch_init_container_image: str = "alpine:3.10"
    pytorch_init_container_max_tries: int = 100
    pytorch_init_container_template: str | None = None
    """Contents of `--pytorch-init-container-template-file`, if the operator was given one."""
    mpi_kubectl_delivery_image: str = DEFAULT_MPI_KUBECTL_DELIVERY_IMAGE
    """`--mpi-kubectl-delivery-image`: the image whose init container copies kubectl into an
    MPIJob v1 launcher (`/opt/kube`), so `kubexec.sh` can `kubectl exec` into the workers."""

    @property
    def gang_scheduling(self) -> bool:
        return bool(self.gang_scheduler_name)

    @property
    def uses_volcano(self) -> bool:
        return self.gang_scheduler_name.lower() == "volcano"


@dataclass(frozen=True)
class ChildType:
    """A child resource kind the runtime must watch and hand to the planner in `Observed`."""

    api_version: str
    kind: str
    plural: str
    label_selector: str | None
    """Selector restricting the cache to our own objects; None means filter by controller owner only."""

    @property
    def key(self) -> str:
        return f"{self.api_version}/{self.kind}"
