"""The server's TLS: a CA and a loopback serving certificate, made afresh for every server.

kubectl (client-go) sends a kubeconfig's bearer token only over TLS: against a plain-HTTP server
it drops the credentials, so the token could not protect the plane and kubectl would get 401.
So the server speaks HTTPS, as kube-apiserver with a self-signed ``--cert-dir`` does: a CA of its
own signs a certificate for 127.0.0.1, ::1 and localhost, and clients trust that CA through the
kubeconfig's ``certificate-authority-data`` (in-process clients: `ca_file`). The keys never leave
the process: they are written only for ``load_cert_chain`` into a private directory and removed
at once.
"""

from __future__ import annotations

import datetime
import os
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path

from kubetrain.kube.pki import VALIDITY, ca_certificate, pem_cert, pem_key, serving_certificate, subject_name

DNS_NAMES = ("localhost",)
IPS = ("127.0.0.1", "::1")


@dataclass(frozen=True)
class ServingTLS:
    """What the listener serves with, and what a client must trust (``ca_pem``)."""

    ca_pem: bytes
    context: ssl.SSLContext

    def client_context(self) -> ssl.SSLContext:
        """A client context that trusts this server only."""
        return ssl.create_default_context(cadata=self.ca_pem.decode())


@dataclass(frozen=True)
class LoopbackPKI:
    """A fresh CA and a loopback serving certificate it signed, as PEM."""

    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes

    def write(self, directory: Path) -> None:
        """``tls.crt`` and ``tls.key`` (0600) in `directory`, as servers load them."""
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "tls.crt").write_bytes(self.cert_pem)
        fd = os.open(directory / "tls.key", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(self.key_pem)


def make_loopback_pki(extra_host: str | None = None, validity: datetime.timedelta = VALIDITY) -> LoopbackPKI:
    """A new CA and a certificate it signs for loopback (and ``extra_host``, the listen address)."""
    now = datetime.datetime.now(datetime.UTC)
    stamp = int(now.timestamp())
    ca, ca_key = ca_certificate(subject_name(f"kubetrain-ca@{stamp}"), validity=validity, now=now)
    hosts = [*IPS, *DNS_NAMES, *([extra_host] if extra_host else [])]
    cert, key = serving_certificate(
        f"localhost@{stamp}", hosts, (ca.subject, ca_key), validity=validity, now=now
    )
    return LoopbackPKI(pem_cert(ca), pem_cert(cert), pem_key(key))


def make_serving_tls(extra_host: str | None = None) -> ServingTLS:
    """What a server listening on loopback (and ``extra_host``) serves with: a fresh PKI."""
    pki = make_loopback_pki(extra_host)
    return ServingTLS(pki.ca_pem, _server_context(pki.cert_pem + pki.ca_pem, pki.key_pem))


def _server_context(chain: bytes, key: bytes) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.set_alpn_protocols(["http/1.1"])  # no h2: clients fall back to HTTP/1.1 at once
    with tempfile.TemporaryDirectory(prefix="kubetrain-apiserver-tls-") as tmp:  # mode 0700
        cert_path, key_path = Path(tmp) / "tls.crt", Path(tmp) / "tls.key"
        cert_path.write_bytes(chain)
        fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(key)
        context.load_cert_chain(cert_path, key_path)
    return context
