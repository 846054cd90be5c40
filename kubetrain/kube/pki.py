"""x509 for loopback and in-cluster serving: a CA and the serving certificates it signs.

The embedded API server (its loopback CA), the node agent (a kubelet's self-signed certificate)
and the admission webhook (cert-controller's CA and serving pair) all need the same two
certificates, with the extensions Go's TLS insists on: a CA with keyCertSign, and a leaf with
serverAuth, digitalSignature, subject alternative names and the issuer's key identifier. ECDSA
P-256 throughout: as widely supported by Go's TLS as RSA 2048 and far faster to generate.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from collections.abc import Iterable

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY = dt.timedelta(days=365)
BACKDATE = dt.timedelta(minutes=5)
"""notBefore lies this far back, so a peer whose clock lags a little accepts a fresh certificate."""
Issuer = tuple[x509.Name, ec.EllipticCurvePrivateKey]


def new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    """The private key as unencrypted PKCS#8 PEM (what `ssl.load_cert_chain` reads)."""
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def pem_cert(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def subject_name(common_name: str, organization: str | None = None) -> x509.Name:
    """O= (when given) then CN=, the order Go's pkix.Name writes them in."""
    org = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization)] if organization else []
    return x509.Name([*org, x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _key_usage(*, cert_sign: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=cert_sign,
        crl_sign=cert_sign,
        encipher_only=False,
        decipher_only=False,
    )


def _builder(
    subject: x509.Name,
    issuer: x509.Name,
    key: ec.EllipticCurvePrivateKey,
    not_before: dt.datetime,
    not_after: dt.datetime,
) -> x509.CertificateBuilder:
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
    )


def ca_certificate(
    subject: x509.Name,
    *,
    validity: dt.timedelta = VALIDITY,
    backdate: dt.timedelta = BACKDATE,
    now: dt.datetime | None = None,
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """A self-signed CA (path length 0: it signs leaves only) and its new key."""
    now = now or dt.datetime.now(dt.UTC)
    key = new_key()
    cert = (
        _builder(subject, subject, key, now - backdate, now + validity)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(cert_sign=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return cert, key


def serving_certificate(
    subject: x509.Name | str,
    hosts: Iterable[str],
    issuer: Issuer | None = None,
    *,
    validity: dt.timedelta = VALIDITY,
    backdate: dt.timedelta = BACKDATE,
    now: dt.datetime | None = None,
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """A server-auth certificate for `hosts` (IP addresses and DNS names) and its new key, signed by
    `issuer` (a CA's name and key) or by its own key when None (self-signed). A string subject is
    a common name."""
    now = now or dt.datetime.now(dt.UTC)
    name = subject_name(subject) if isinstance(subject, str) else subject
    key = new_key()
    issuer_name, issuer_key = issuer or (name, key)
    alt: list[x509.GeneralName] = []
    for host in dict.fromkeys(hosts):
        try:
            alt.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            alt.append(x509.DNSName(host))
    builder = (
        _builder(name, issuer_name, key, now - backdate, now + validity)
        .add_extension(x509.SubjectAlternativeName(alt), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(cert_sign=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
    )
    if issuer is not None:
        builder = builder.add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()), critical=False
        )
    return builder.sign(issuer_key, hashes.SHA256()), key
