"""The tier's operator as a cluster would run it: its own ServiceAccount, RBAC and webhook.

On a real API server the operator process started by the tier must not borrow the admin
certificate: it authenticates as the `training-operator` ServiceAccount bound to the ClusterRole
and Role that `manifests/` ships (plus the opt-in launcher RBAC component), so a permission the
manifests forgot fails a test here before it fails a user's install.

Its admission webhook is served to the real API server over TLS. The API server cannot reach a
Service in front of a process on this machine (Endpoints and EndpointSlices refuse loopback
addresses), so the tier does what envtest does for out-of-cluster webhooks: the manifests'
ValidatingWebhookConfiguration with each `clientConfig.service` replaced by a `url` on
127.0.0.1, and a serving certificate for that address whose CA goes into `caBundle`.
"""

from __future__ import annotations

import base64
import datetime as dt
from pathlib import Path
from typing import Any

import yaml

from kubetrain.cli.install import apply_all, render
from kubetrain.embedded.apiserver.tls import make_loopback_pki
from kubetrain.kube.errors import ApiError
from kubetrain.runtime.transport import KubeClient
from tests.integration.operator_process.procs import REPO

JsonDict = dict[str, Any]

NAMESPACE = "kubeflow"
SERVICE_ACCOUNT = "training-operator"
WEBHOOK_CONFIGURATION = "validator.training-operator.kubeflow.org"
ADMIN_KINDS = (
    "CustomResourceDefinition",
    "Namespace",
    "ServiceAccount",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
)
LAUNCHER_RBAC = REPO / "manifests" / "components" / "launcher-rbac"
TOKEN_SECONDS = 4 * 3600
TIER_LABEL = "kubetrain.dev/e2e-tier"
"""Marks the webhook configuration the tier made, so a run that was killed before its cleanup
does not leave the next one calling a dead port."""


def rendered_manifests() -> list[JsonDict]:
    return render(REPO / "manifests" / "overlays" / "cluster-wide", NAMESPACE, None)


def admin_objects(objects: list[JsonDict]) -> list[JsonDict]:
    """What an admin installs for the operator: the CRDs, its namespace, ServiceAccount and RBAC."""
    picked = [o for o in objects if o["kind"] in ADMIN_KINDS]
    for path in sorted(LAUNCHER_RBAC.glob("*.yaml")):
        if path.name != "kustomization.yaml":
            picked.extend(o for o in yaml.safe_load_all(path.read_text()) if o)
    return picked


async def operator_kubeconfig(admin: KubeClient, admin_kubeconfig: Path, out: Path) -> Path:
    """Apply the manifests' CRDs and RBAC; write a kubeconfig holding the ServiceAccount's token."""
    await apply_all(admin, admin_objects(rendered_manifests()))
    review = await admin.request(
        "POST",
        f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/{SERVICE_ACCOUNT}/token",
        body={
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": TOKEN_SECONDS},
        },
    )
    token = review["status"]["token"]
    source = yaml.safe_load(admin_kubeconfig.read_text())
    context_name = source["current-context"]
    context = next(c for c in source["contexts"] if c["name"] == context_name)["context"]
    cluster = next(c for c in source["clusters"] if c["name"] == context["cluster"])
    user = f"system:serviceaccount:{NAMESPACE}:{SERVICE_ACCOUNT}"
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [cluster],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": "operator", "context": {"cluster": cluster["name"], "user": user}}],
        "current-context": "operator",
    }
    out.write_text(yaml.safe_dump(config))
    out.chmod(0o600)
    return out


def loopback_certificates(directory: Path) -> bytes:
    """A CA and a serving certificate for 127.0.0.1 in `directory` (tls.crt, tls.key); the CA PEM."""
    pki = make_loopback_pki(validity=dt.timedelta(days=1))
    pki.write(directory)
    return pki.ca_pem


def url_webhook_configuration(port: int, ca_pem: bytes) -> JsonDict:
    """The manifests' webhook configuration, each webhook calling https://127.0.0.1:PORT<path>."""
    config = next(o for o in rendered_manifests() if o["kind"] == "ValidatingWebhookConfiguration")
    config["metadata"].setdefault("labels", {})[TIER_LABEL] = "true"
    bundle = base64.b64encode(ca_pem).decode()
    for hook in config["webhooks"]:
        path = hook["clientConfig"]["service"]["path"]
        hook["clientConfig"] = {"url": f"https://127.0.0.1:{port}{path}", "caBundle": bundle}
    return config


def made_by_the_tier(config: JsonDict) -> bool:
    return (config["metadata"].get("labels") or {}).get(TIER_LABEL) == "true"


async def install_webhook(admin: KubeClient, port: int, ca_pem: bytes) -> None:
    await admin.create(url_webhook_configuration(port, ca_pem))


async def remove_webhook(admin: KubeClient) -> None:
    try:
        await admin.delete(
            "admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", None, WEBHOOK_CONFIGURATION
        )
    except ApiError as err:
        if not err.not_found:
            raise
