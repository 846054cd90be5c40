"""The admission webhook as a sidecar of the operator process (see `runtime.operator.Sidecar`).

The runtime and the webhook are sibling layers that must not import each other, so the CLI wires
them: this sidecar gets serving certificates (generated and kept in a Secret by
`CertProvisioner`, or mounted by cert-manager), then serves `WebhookServer` on every replica.

Nothing here is fatal to the operator: the controllers validate every job themselves (a job
that bypassed the webhook fails with `<Kind>FailedValidation`), so a webhook that cannot get its
certificates yet is retried and reported through `/readyz`, never a crash loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubetrain.api.kinds import KindInfo
from kubetrain.kinds.registry import admission_reads
from kubetrain.runtime.informer import Informer
from kubetrain.runtime.transport import KubeClient
from kubetrain.webhook.provisioner import (
    DEFAULT_NAMESPACE,
    DEFAULT_SECRET_NAME,
    DEFAULT_SERVICE_NAME,
    CertConfig,
    CertProvisioner,
)
from kubetrain.webhook.server import DEFAULT_CERT_DIR, DEFAULT_PORT, WebhookServer

log = logging.getLogger(__name__)

RETRY_INTERVAL = 5.0
ROTATION_INTERVAL = 3600.0


@dataclass(frozen=True)
class WebhookOptions:
    """`--webhook-*` flags; defaults are upstream's (docs/upstream-behaviour.md#operator-flags)."""

    port: int = DEFAULT_PORT
    host: str | None = None
    cert_dir: Path = DEFAULT_CERT_DIR
    namespace: str = DEFAULT_NAMESPACE
    """Where the certificate Secret lives: the operator's own namespace (MY_POD_NAMESPACE)."""
    service_name: str = DEFAULT_SERVICE_NAME
    secret_name: str = DEFAULT_SECRET_NAME
    generate_certificates: bool = True
    """False when cert-manager (or anyone else) mounts the certificates into `cert_dir`."""
    cluster_domain: str = "cluster.local"
    watch_namespace: str | None = None
    """The operator's `--namespace`: the namespaced kinds the webhook looks up are cached there only,
    and cluster-scoped ones not at all (the single-namespace overlay's Role grants no more)."""


class AdmissionCache:
    """Informers of the kinds the webhook's rules look up (`KindRegistration.admission_reads`), and
    the `lookup` over them: upstream's webhooks read the manager's client cache the same way.
    The webhook serves without waiting for them (a kind whose CRD is not installed never syncs,
    and must not keep the other kinds' webhooks down): until a kind's cache synced, its objects
    are not found, and a TrainJob naming a runtime is refused as upstream refuses one whose
    runtime it cannot get."""

    def __init__(self, client: KubeClient, kinds: Iterable[KindInfo], namespace: str | None = None) -> None:
        self.informers: dict[tuple[str, str], Informer] = {
            (info.api_version, info.plural): Informer(
                client,
                client.resource(info.api_version, info.kind),
                namespace=namespace if info.namespaced else None,
            )
            for info in kinds
            if info.namespaced or namespace is None  # one namespace's Role grants no cluster kind
        }

    def lookup(self, api_version: str, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        informer = self.informers.get((api_version, plural))
        if informer is None:
            return None
        return informer.store.get(namespace if informer.resource.namespaced else None, name)

    def start(self) -> None:
        for informer in self.informers.values():
            informer.start()

    async def wait_for_sync(self, timeout: float) -> bool:
        """True when every cache synced within `timeout`."""
        return all([await informer.wait_for_sync(timeout) for informer in self.informers.values()])

    async def stop(self) -> None:
        for informer in self.informers.values():
            await informer.stop()


class WebhookSidecar:
    """Certificates, then the TLS server; rotation checks every hour while it runs."""

    name = "webhook"

    def __init__(self, client: KubeClient, kinds: Iterable[KindInfo], options: WebhookOptions) -> None:
        self.options = options
        kinds = list(kinds)
        self.cache = AdmissionCache(client, admission_reads(kinds), options.watch_namespace)
        self.server = WebhookServer(
            options.cert_dir, host=options.host, port=options.port, kinds=kinds, lookup=self.cache.lookup
        )
        self.provisioner: CertProvisioner | None = None
        if options.generate_certificates:
            self.provisioner = CertProvisioner(
                client,
                CertConfig(
                    options.cert_dir,
                    namespace=options.namespace,
                    secret_name=options.secret_name,
                    service_name=options.service_name,
                    cluster_domain=options.cluster_domain,
                ),
            )

    def ready(self) -> bool:
        return self.server.ready

    async def run(self) -> None:
        opts = self.options
        if self.provisioner is not None:
            await self._retry(
                self.provisioner.ensure, f"webhook certificates (Secret {opts.namespace}/{opts.secret_name})"
            )
        else:
            log.info("waiting for webhook certificates in %s", opts.cert_dir)
            await self.server.wait_for_certificates()
        self.cache.start()
        await self._retry(self.server.start, f"webhook server on port {opts.port}")
        if self.provisioner is not None:
            await asyncio.sleep(ROTATION_INTERVAL)
            await self.provisioner.run(ROTATION_INTERVAL)

    async def stop(self) -> None:
        await self.server.stop()
        await self.cache.stop()

    @staticmethod
    async def _retry(step: Callable[[], Awaitable[object]], what: str) -> None:
        while True:
            try:
                await step()
                return
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.error("%s not ready: %s; retrying in %.0fs", what, exc, RETRY_INTERVAL)
                await asyncio.sleep(RETRY_INTERVAL)
