"""Operator-managed webhook certificates: keep them in a Secret, on disk, and in the caBundle.

The operator's equivalent of upstream's cert rotator. `ensure()`:

1. reads the Secret (`training-operator-webhook-cert` in the operator's namespace); reuses its
   bundle while it still serves the service's DNS names, else renews the serving certificate with
   the stored CA (the caBundle stays valid), else generates a new CA;
2. writes a changed bundle back with the Secret's resourceVersion (or creates the Secret), so two
   replicas starting at once converge: the loser of the 409 re-reads and adopts the winner's;
3. writes `tls.crt`/`tls.key`/`ca.crt` into the server's certificate directory;
4. sets `caBundle` on every webhook of the named ValidatingWebhookConfigurations (read-modify-
   write with resourceVersion: webhooks are a list, which a merge patch would replace whole).

The webhook layer must not import the runtime, so the API is the small `ObjectApi` protocol; the
runtime's `KubeClient` satisfies it and the CLI passes one in. Errors are recognised by their
`status` attribute (404, 409), which the runtime's `ApiError` carries.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from kubetrain.webhook import certs
from kubetrain.webhook.certs import CertBundle

log = logging.getLogger(__name__)

JsonDict = dict[str, Any]

SECRET_API = "v1"
WEBHOOK_API = "admissionregistration.k8s.io/v1"
VALIDATING_KIND = "ValidatingWebhookConfiguration"

DEFAULT_SECRET_NAME = "training-operator-webhook-cert"
DEFAULT_SERVICE_NAME = "training-operator"
DEFAULT_WEBHOOK_CONFIGURATION = "validator.training-operator.kubeflow.org"
DEFAULT_NAMESPACE = "kubeflow"


class ObjectApi(Protocol):
    """The three verbs the provisioner needs (the runtime's `KubeClient` has them)."""

    async def get(self, api_version: str, kind: str, namespace: str | None, name: str) -> JsonDict: ...

    async def create(self, obj: JsonDict, *, namespace: str | None = None) -> JsonDict: ...

    async def replace(self, obj: JsonDict, *, subresource: str | None = None) -> JsonDict: ...


def http_status(exc: BaseException) -> int | None:
    """The HTTP status an API error carries, or None for any other exception."""
    status = getattr(exc, "status", None)
    return status if isinstance(status, int) else None


@dataclass(frozen=True)
class CertConfig:
    """Where the certificates live; defaults are upstream's flag defaults
    (docs/upstream-behaviour.md#operator-flags)."""

    cert_dir: Path
    namespace: str = DEFAULT_NAMESPACE
    secret_name: str = DEFAULT_SECRET_NAME
    service_name: str = DEFAULT_SERVICE_NAME
    webhook_configurations: tuple[str, ...] = (DEFAULT_WEBHOOK_CONFIGURATION,)
    cluster_domain: str = "cluster.local"
    conflict_attempts: int = 5

    @property
    def dns_names(self) -> list[str]:
        return certs.dns_names(self.service_name, self.namespace, self.cluster_domain)


class CertProvisioner:
    """Generates, stores, installs and injects the webhook's serving certificates."""

    def __init__(
        self,
        api: ObjectApi,
        config: CertConfig,
        *,
        generate: Callable[[], CertBundle] | None = None,
    ) -> None:
        self.api = api
        self.config = config
        self._generate = generate or self._new_bundle
        self.bundle: CertBundle | None = None
        self.ready = asyncio.Event()

    def _new_bundle(self) -> CertBundle:
        cfg = self.config
        return certs.generate(cfg.service_name, cfg.namespace, cluster_domain=cfg.cluster_domain)

    async def ensure(self) -> CertBundle:
        """Make the Secret, the files and the caBundles consistent; returns the bundle in use."""
        bundle = await self._reconcile_secret()
        current = CertBundle.read(self.config.cert_dir)
        if current is None or current.cert != bundle.cert or current.key != bundle.key:
            bundle.write(self.config.cert_dir)
            log.info("webhook certificates written to %s", self.config.cert_dir)
        for name in self.config.webhook_configurations:
            await self.inject_ca_bundle(name, bundle.ca_cert)
        self.bundle = bundle
        self.ready.set()
        return bundle

    async def run(self, interval: float = 3600.0) -> None:
        """`ensure()` now and then every `interval` seconds, so certificates rotate in time.

        A failed round is logged and retried at the next tick; it never stops the loop.
        """
        while True:
            try:
                await self.ensure()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("webhook certificate check failed; retrying in %.0fs", interval)
            await asyncio.sleep(interval)

    # -- the Secret ----------------------------------------------------------------------------

    async def _reconcile_secret(self) -> CertBundle:
        cfg = self.config
        for _ in range(max(1, cfg.conflict_attempts)):
            secret = await self._get_secret()
            stored = _bundle_of(secret)
            reason = certs.needs_rotation(stored, cfg.dns_names) if stored else "no certificates stored"
            if stored is not None and not reason:
                return stored
            fresh = self._next_bundle(stored)
            log.info("generating webhook certificates for %s: %s", cfg.dns_names[2], reason)
            try:
                await self._write_secret(secret, fresh)
            except Exception as exc:
                if http_status(exc) == 409:
                    log.info("secret %s/%s changed concurrently; re-reading", cfg.namespace, cfg.secret_name)
                    continue
                raise
            return fresh
        raise RuntimeError(
            f"secret {cfg.namespace}/{cfg.secret_name} kept changing during {cfg.conflict_attempts} attempts"
        )

    def _next_bundle(self, stored: CertBundle | None) -> CertBundle:
        """Renew with the stored CA when it is still good (keeps the caBundle), else start over."""
        cfg = self.config
        if stored is not None and stored.ca_key:
            with contextlib.suppress(ValueError, TypeError):
                renewed = certs.renew_serving(
                    stored, cfg.service_name, cfg.namespace, cluster_domain=cfg.cluster_domain
                )
                if not certs.needs_rotation(renewed, cfg.dns_names):
                    return renewed
        return self._generate()

    async def _get_secret(self) -> JsonDict | None:
        try:
            return await self.api.get(SECRET_API, "Secret", self.config.namespace, self.config.secret_name)
        except Exception as exc:
            if http_status(exc) == 404:
                return None
            raise

    async def _write_secret(self, secret: JsonDict | None, bundle: CertBundle) -> None:
        data = {k: base64.b64encode(v).decode() for k, v in bundle.secret_data().items()}
        if secret is None:
            await self.api.create(
                {
                    "apiVersion": SECRET_API,
                    "kind": "Secret",
                    "metadata": {"name": self.config.secret_name, "namespace": self.config.namespace},
                    "type": "Opaque",
                    "data": data,
                }
            )
            return
        # Replace only our keys; resourceVersion makes a concurrent writer's change a 409.
        merged = {**(secret.get("data") or {}), **data}
        body = {**secret, "apiVersion": SECRET_API, "kind": "Secret", "data": merged}
        await self.api.replace(body)

    # -- the caBundle --------------------------------------------------------------------------

    async def inject_ca_bundle(self, name: str, ca_cert: bytes) -> bool:
        """Set caBundle on every webhook of one configuration; False if it does not exist."""
        encoded = base64.b64encode(ca_cert).decode()
        for _ in range(max(1, self.config.conflict_attempts)):
            try:
                config = await self.api.get(WEBHOOK_API, VALIDATING_KIND, None, name)
            except Exception as exc:
                if http_status(exc) == 404:
                    log.warning("ValidatingWebhookConfiguration %s not found: caBundle not injected", name)
                    return False
                raise
            webhooks = config.get("webhooks") or []
            if all((w.get("clientConfig") or {}).get("caBundle") == encoded for w in webhooks):
                return True
            for hook in webhooks:
                hook.setdefault("clientConfig", {})["caBundle"] = encoded
            try:
                await self.api.replace({**config, "apiVersion": WEBHOOK_API, "kind": VALIDATING_KIND})
            except Exception as exc:
                if http_status(exc) == 409:
                    continue
                raise
            log.info("caBundle injected into %s (%d webhooks)", name, len(webhooks))
            return True
        raise RuntimeError(f"ValidatingWebhookConfiguration {name} kept changing during caBundle injection")


def _bundle_of(secret: JsonDict | None) -> CertBundle | None:
    if secret is None:
        return None
    data: dict[str, bytes] = {}
    for key, value in (secret.get("data") or {}).items():
        with contextlib.suppress(ValueError, TypeError):
            data[key] = base64.b64decode(value, validate=True)
    return CertBundle.from_secret_data(data)
