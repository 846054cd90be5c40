"""Self-signed webhook certificates: a CA, a serving certificate it signs, and their checks.

What upstream's cert rotator (open-policy-agent/cert-controller) does, in our names: one CA
(`kubetrain-webhook-ca`, org `kubetrain`) per installation, stored with the serving pair in one
Secret with cert-controller's keys (`ca.crt`, `ca.key`, `tls.crt`, `tls.key`), so replicas and
restarts share it and the API server's caBundle stays valid. ECDSA P-256 instead of RSA 2048:
as widely supported by Go's TLS and about a hundred times faster to generate.

A bundle is reused only while it is still useful: the serving certificate covers the service's
DNS names, is signed by the stored CA, and has more than `ROTATE_BEFORE` left; otherwise a new
one is generated (`needs_rotation` says why, for the log).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from kubetrain.kube.pki import ca_certificate, pem_cert, pem_key, serving_certificate, subject_name

CA_COMMON_NAME = "kubetrain-webhook-ca"
ORGANIZATION = "kubetrain"
CA_VALIDITY = dt.timedelta(days=3650)
SERVING_VALIDITY = dt.timedelta(days=365)
ROTATE_BEFORE = dt.timedelta(days=90)
"""Regenerate when less than this is left (cert-controller's lookahead)."""
CLOCK_SKEW = dt.timedelta(hours=1)
"""notBefore is back-dated so a node whose clock lags still accepts a fresh certificate."""

CA_CERT_KEY = "ca.crt"
CA_KEY_KEY = "ca.key"
TLS_CERT_KEY = "tls.crt"
TLS_KEY_KEY = "tls.key"


@dataclass(frozen=True)
class CertBundle:
    """PEM bytes of the CA pair and the serving pair; the CA key is absent for provided certs."""

    ca_cert: bytes
    cert: bytes
    key: bytes
    ca_key: bytes = b""

    def secret_data(self) -> dict[str, bytes]:
        """Secret keys -> bytes, in cert-controller's layout (the caller base64-encodes)."""
        data = {CA_CERT_KEY: self.ca_cert, TLS_CERT_KEY: self.cert, TLS_KEY_KEY: self.key}
        if self.ca_key:
            data[CA_KEY_KEY] = self.ca_key
        return data

    @classmethod
    def from_secret_data(cls, data: dict[str, bytes]) -> CertBundle | None:
        """A bundle from decoded Secret data, or None if a required key is missing."""
        if not all(data.get(k) for k in (CA_CERT_KEY, TLS_CERT_KEY, TLS_KEY_KEY)):
            return None
        return cls(data[CA_CERT_KEY], data[TLS_CERT_KEY], data[TLS_KEY_KEY], data.get(CA_KEY_KEY, b""))

    def write(self, directory: Path) -> None:
        """Write tls.crt, tls.key and ca.crt (the layout the server and cert-manager mounts use).

        Each file is written to a temporary name and renamed, so a server reloading the directory
        never reads a certificate without its key half-written.
        """
        directory.mkdir(parents=True, exist_ok=True)
        files = ((CA_CERT_KEY, self.ca_cert), (TLS_CERT_KEY, self.cert), (TLS_KEY_KEY, self.key))
        for name, content in files:
            tmp = directory / f".{name}.tmp"
            tmp.write_bytes(content)
            tmp.chmod(0o600)
            tmp.replace(directory / name)

    @classmethod
    def read(cls, directory: Path) -> CertBundle | None:
        """The bundle in `directory`, or None if tls.crt or tls.key is missing (ca.crt optional)."""
        cert, key = directory / TLS_CERT_KEY, directory / TLS_KEY_KEY
        if not (cert.is_file() and key.is_file()):
            return None
        ca = directory / CA_CERT_KEY
        return cls(ca.read_bytes() if ca.is_file() else b"", cert.read_bytes(), key.read_bytes())


def dns_names(service: str, namespace: str, cluster_domain: str = "cluster.local") -> list[str]:
    """Every name the API server may use for the webhook service."""
    return [
        service,
        f"{service}.{namespace}",
        f"{service}.{namespace}.svc",
        f"{service}.{namespace}.svc.{cluster_domain}",
    ]


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def generate(
    service: str, namespace: str, *, cluster_domain: str = "cluster.local", now: dt.datetime | None = None
) -> CertBundle:
    """A fresh CA and a serving certificate for `<service>.<namespace>.svc` signed by it."""
    now = now or _now()
    ca_name = subject_name(CA_COMMON_NAME, ORGANIZATION)
    ca_cert, ca_key = ca_certificate(ca_name, validity=CA_VALIDITY, backdate=CLOCK_SKEW, now=now)
    return _serving(ca_cert, ca_key, service, namespace, cluster_domain, now)


def renew_serving(
    bundle: CertBundle,
    service: str,
    namespace: str,
    *,
    cluster_domain: str = "cluster.local",
    now: dt.datetime | None = None,
) -> CertBundle:
    """A new serving certificate signed by the bundle's CA (the caBundle stays valid)."""
    ca_cert = x509.load_pem_x509_certificate(bundle.ca_cert)
    ca_key = serialization.load_pem_private_key(bundle.ca_key, password=None)
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey):
        raise ValueError("the stored CA key is not an ECDSA key")
    return _serving(ca_cert, ca_key, service, namespace, cluster_domain, now or _now())


def _serving(
    ca_cert: x509.Certificate,
    ca_key: ec.EllipticCurvePrivateKey,
    service: str,
    namespace: str,
    cluster_domain: str,
    now: dt.datetime,
) -> CertBundle:
    cert, key = serving_certificate(
        subject_name(f"{service}.{namespace}.svc", ORGANIZATION),
        dns_names(service, namespace, cluster_domain),
        (ca_cert.subject, ca_key),
        validity=min(SERVING_VALIDITY, ca_cert.not_valid_after_utc - now),
        backdate=CLOCK_SKEW,
        now=now,
    )
    return CertBundle(
        ca_cert=pem_cert(ca_cert), cert=pem_cert(cert), key=pem_key(key), ca_key=pem_key(ca_key)
    )


def needs_rotation(bundle: CertBundle, names: list[str], now: dt.datetime | None = None) -> str:
    """Why `bundle` cannot serve `names` any more ("" if it can)."""
    now = now or _now()
    try:
        ca = x509.load_pem_x509_certificate(bundle.ca_cert)
        cert = x509.load_pem_x509_certificate(bundle.cert)
        key = serialization.load_pem_private_key(bundle.key, password=None)
    except ValueError as exc:
        return f"unreadable certificate or key: {exc}"
    spki = serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    if cert.public_key().public_bytes(*spki) != key.public_key().public_bytes(*spki):
        return "the serving key does not match the certificate"
    try:
        cert.verify_directly_issued_by(ca)
    except (ValueError, TypeError, InvalidSignature):
        return "the serving certificate is not signed by the CA"
    if ca.not_valid_after_utc - now < ROTATE_BEFORE:
        return "the CA expires soon"
    if cert.not_valid_after_utc - now < ROTATE_BEFORE:
        return "the serving certificate expires soon"
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return "the serving certificate has no DNS names"
    missing = sorted(set(names) - set(san.get_values_for_type(x509.DNSName)))
    if missing:
        return f"the serving certificate does not cover {', '.join(missing)}"
    return ""
