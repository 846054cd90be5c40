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
import ipaddress
import os
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

DNS_NAMES = ("localhost",)
IPS = ("127.0.0.1", "::1")
VALIDITY = datetime.timedelta(days=365)


@dataclass(frozen=True)
class ServingTLS:
    """What the listener serves with, and what a client must trust (``ca_pem``)."""

    ca_pem: bytes
    context: ssl.SSLContext

    def client_context(self) -> ssl.SSLContext:
        """A client context that trusts this server only."""
        return ssl.create_default_context(cadata=self.ca_pem.decode())


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def serving_certificate(
    cn: str,
    hosts: list[str],
    issuer: tuple[x509.Name, ec.EllipticCurvePrivateKey] | None = None,
    validity: datetime.timedelta = VALIDITY,
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """A server-auth certificate (ECDSA P-256) for `hosts` (IP addresses and DNS names), signed by
    `issuer` (a CA's name and key) or by its own key when None (self-signed)."""
    now = datetime.datetime.now(datetime.UTC)
    key = ec.generate_private_key(ec.SECP256R1())
    issuer_name, issuer_key = issuer or (_name(cn), key)
    alt: list[x509.GeneralName] = []
    for host in dict.fromkeys(hosts):
        try:
            alt.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            alt.append(x509.DNSName(host))
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(cn))
        .issuer_name(issuer_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + validity)
        .add_extension(x509.SubjectAlternativeName(alt), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(True, False, False, False, False, False, False, False, False), critical=True
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
    )
    if issuer is not None:
        builder = builder.add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()), critical=False
        )
    return builder.sign(issuer_key, hashes.SHA256()), key


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
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name(f"kubetrain-ca@{stamp}")
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + validity)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    hosts = [*IPS, *DNS_NAMES, *([extra_host] if extra_host else [])]
    cert, key = serving_certificate(f"localhost@{stamp}", hosts, (ca_name, ca_key), validity)
    pem = serialization.Encoding.PEM
    return LoopbackPKI(ca.public_bytes(pem), cert.public_bytes(pem), pem_key(key))


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
