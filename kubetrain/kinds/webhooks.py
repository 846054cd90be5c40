"""The validating webhook configuration's entries, one per kind the admission webhook validates.

`manifests/base/webhook.yaml` lists a webhook per kind with upstream's name and path (the routes
`kubetrain.webhook.handler` serves), and the single-namespace overlay patches each with a
namespaceSelector; both `webhooks:` lists are generated from the registry (`python -m
kubetrain.kinds.manifests`), so a kind with `webhook=True` is admitted by registering it. Each
file's comment and metadata stay hand-written.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kubetrain.api.kinds import KindInfo
from kubetrain.api.validation import webhook_name, webhook_path
from kubetrain.kinds.registry import webhook_kinds

SERVICE_NAME = "training-operator"
"""The operator's Service (upstream's name; `kubetrain.webhook.provisioner.DEFAULT_SERVICE_NAME`)."""
SERVICE_NAMESPACE = "kubeflow"
"""Its namespace, which is also the one the single-namespace overlay serves."""


def webhook(info: KindInfo) -> dict[str, Any]:
    """One kind's entry: CREATE and UPDATE of its resource, to its path on the operator's Service."""
    return {
        "name": webhook_name(info),
        "admissionReviewVersions": ["v1"],
        "clientConfig": {
            "service": {
                "name": SERVICE_NAME,
                "namespace": SERVICE_NAMESPACE,
                "path": webhook_path(info),
                "port": 443,
            }
        },
        "failurePolicy": "Fail",
        "matchPolicy": "Equivalent",
        "rules": [
            {
                "apiGroups": [info.group],
                "apiVersions": [info.version],
                "operations": ["CREATE", "UPDATE"],
                "resources": [info.plural],
                "scope": "Namespaced" if info.namespaced else "Cluster",
            }
        ],
        "sideEffects": "None",
        "timeoutSeconds": 10,
    }


def namespace_selector(info: KindInfo) -> dict[str, Any]:
    """The single-namespace overlay's patch of one kind's entry."""
    return {
        "name": webhook_name(info),
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": SERVICE_NAMESPACE}},
    }


@dataclass(frozen=True)
class Target:
    """A file under the manifests tree whose `webhooks:` list is generated."""

    path: str
    entry: Callable[[KindInfo], dict[str, Any]]


TARGETS = (
    Target("base/webhook.yaml", webhook),
    Target("overlays/single-namespace/webhook-namespace-selector.yaml", namespace_selector),
)


def splice(text: str, webhooks: list[dict[str, Any]]) -> str:
    """`text` with everything from its `webhooks:` line on replaced by `webhooks`."""
    head = text[: text.index("\nwebhooks:\n") + 1]
    return head + yaml.safe_dump({"webhooks": webhooks}, sort_keys=False, default_flow_style=False, width=100)


def generate(manifests: Path, kinds: Iterable[KindInfo] | None = None) -> dict[str, str]:
    """Target path (relative to `manifests`) -> its text with the registry's webhooks."""
    infos = list(webhook_kinds() if kinds is None else kinds)
    return {
        t.path: splice((manifests / t.path).read_text(encoding="utf-8"), [t.entry(i) for i in infos])
        for t in TARGETS
    }
