"""The shared x509 builder: what Go's TLS checks in a CA and a serving certificate."""

from __future__ import annotations

import datetime as dt
import ipaddress

from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from kubetrain.kube.pki import ca_certificate, serving_certificate, subject_name


def test_ca_signs_a_serving_certificate_for_ips_and_dns_names() -> None:
    now = dt.datetime(2026, 1, 2, tzinfo=dt.UTC)
    ca, ca_key = ca_certificate(subject_name("test-ca", "kubetrain"), validity=dt.timedelta(days=10), now=now)
    cert, key = serving_certificate(
        subject_name("svc.ns.svc", "kubetrain"),
        ["127.0.0.1", "svc.ns.svc", "svc.ns.svc"],
        (ca.subject, ca_key),
        validity=dt.timedelta(days=1),
        backdate=dt.timedelta(hours=1),
        now=now,
    )
    cert.verify_directly_issued_by(ca)
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value == x509.BasicConstraints(
        ca=True, path_length=0
    )
    assert ca.extensions.get_extension_for_class(x509.KeyUsage).value.key_cert_sign
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]
    assert san.get_values_for_type(x509.DNSName) == ["svc.ns.svc"]
    assert list(cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value) == [
        ExtendedKeyUsageOID.SERVER_AUTH
    ]
    assert not cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert cert.not_valid_before_utc == now - dt.timedelta(hours=1)
    assert cert.not_valid_after_utc == now + dt.timedelta(days=1)
    assert cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)[0].value == "kubetrain"
    assert key.public_key() == cert.public_key()


def test_without_an_issuer_the_certificate_signs_itself() -> None:
    cert, _ = serving_certificate("node@kubetrain", ["localhost"])
    assert cert.issuer == cert.subject == subject_name("node@kubetrain")
    cert.verify_directly_issued_by(cert)
    assert x509.AuthorityKeyIdentifier not in [e.value.__class__ for e in cert.extensions]
