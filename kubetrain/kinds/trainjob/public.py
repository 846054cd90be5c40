"""Trainer's public ConfigMap: where the Kubeflow SDK reads which Trainer control plane it talks to.

Upstream's install ships ConfigMap `kubeflow-trainer-public` in its namespace, `kubeflow-system`
(helm chart `templates/manager/public-configmap.yaml`: `kubeflow_trainer_version`), readable by
every authenticated user. The SDK's `TrainerClient()` reads it at start
(`KubernetesBackend.verify_backend`, `$KUBEFLOW_SYSTEM_NAMESPACE` else `kubeflow-system`) and
logs a warning, with the 404 it got, when it is missing. kubetrain serves v2.3.0's API, so that is
the version it names.
"""

from __future__ import annotations

from typing import Any

from kubetrain.kinds.trainjob.constants import TRAINER_VERSION

SYSTEM_NAMESPACE = "kubeflow-system"
PUBLIC_CONFIGMAP = "kubeflow-trainer-public"


def public_objects() -> tuple[dict[str, Any], ...]:
    """The namespace and the ConfigMap, as a control plane installs them."""
    return (
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": SYSTEM_NAMESPACE}},
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": PUBLIC_CONFIGMAP, "namespace": SYSTEM_NAMESPACE},
            "data": {"kubeflow_trainer_version": TRAINER_VERSION},
        },
    )
