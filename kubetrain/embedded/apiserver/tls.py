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


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def make_serving_tls(extra_host: str | None = None) -> ServingTLS:
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
        .not_valid_after(now + VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    ips = list(IPS)
    dns = list(DNS_NAMES)
    if extra_host:
        try:
            ipaddress.ip_address(extra_host)
            ips.append(extra_host)
        except ValueError:
            dns.append(extra_host)
    key = ec.generate_private_key(ec.SECP256R1())
    alt: list[x509.GeneralName] = [x509.DNSName(h) for h in dict.fromkeys(dns)]
    alt += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in dict.fromkeys(ips)]
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(f"localhost@{stamp}"))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + VALIDITY)
        .add_extension(x509.SubjectAlternativeName(alt), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(True, False, False, False, False, False, False, False, False), critical=True
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    ca_pem = ca.public_bytes(serialization.Encoding.PEM)
    chain = cert.public_bytes(serialization.Encoding.PEM) + ca_pem
    return ServingTLS(ca_pem, _server_context(chain, _pem_key(key)))


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
