"""Self-signed webhook certificates: what they cover, when they must be replaced."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from cryptography import x509

from kubetrain.webhook import certs
from kubetrain.webhook.certs import CertBundle

NAMES = certs.dns_names("training-operator", "kubeflow")


def test_dns_names_cover_every_form_the_api_server_may_use() -> None:
    assert NAMES == [
        "training-operator",
        "training-operator.kubeflow",
        "training-operator.kubeflow.svc",
        "training-operator.kubeflow.svc.cluster.local",
    ]
    assert certs.dns_names("s", "n", "corp.example")[-1] == "s.n.svc.corp.example"


def test_generated_bundle_is_usable_and_self_consistent() -> None:
    bundle = certs.generate("training-operator", "kubeflow")
    assert certs.needs_rotation(bundle, NAMES) == ""
    ca = x509.load_pem_x509_certificate(bundle.ca_cert)
    cert = x509.load_pem_x509_certificate(bundle.cert)
    assert ca.subject.rfc4514_string() == "CN=kubetrain-webhook-ca,O=kubetrain"
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert cert.subject.rfc4514_string() == "CN=training-operator.kubeflow.svc,O=kubetrain"
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == NAMES
    cert.verify_directly_issued_by(ca)


def test_other_names_or_expiry_or_a_foreign_ca_need_rotation() -> None:
    bundle = certs.generate("training-operator", "kubeflow")
    assert "does not cover other.kubeflow.svc" in certs.needs_rotation(bundle, ["other.kubeflow.svc"])
    later = dt.datetime.now(dt.UTC) + dt.timedelta(days=300)
    assert certs.needs_rotation(bundle, NAMES, now=later) == "the serving certificate expires soon"
    foreign = certs.generate("training-operator", "kubeflow")
    mixed = CertBundle(ca_cert=foreign.ca_cert, cert=bundle.cert, key=bundle.key)
    assert certs.needs_rotation(mixed, NAMES) == "the serving certificate is not signed by the CA"
    wrong_key = CertBundle(ca_cert=bundle.ca_cert, cert=bundle.cert, key=foreign.key)
    assert certs.needs_rotation(wrong_key, NAMES) == "the serving key does not match the certificate"
    garbage = CertBundle(ca_cert=b"x", cert=b"y", key=b"z")
    assert certs.needs_rotation(garbage, NAMES).startswith("unreadable")


def test_renewal_keeps_the_ca_so_the_ca_bundle_stays_valid() -> None:
    bundle = certs.generate("training-operator", "kubeflow")
    renewed = certs.renew_serving(bundle, "training-operator", "kubeflow")
    assert renewed.ca_cert == bundle.ca_cert and renewed.ca_key == bundle.ca_key
    assert renewed.cert != bundle.cert
    assert certs.needs_rotation(renewed, NAMES) == ""


def test_secret_data_and_directory_round_trip(tmp_path: Path) -> None:
    bundle = certs.generate("svc", "ns")
    assert set(bundle.secret_data()) == {"ca.crt", "ca.key", "tls.crt", "tls.key"}
    assert CertBundle.from_secret_data(bundle.secret_data()) == bundle
    assert CertBundle.from_secret_data({"tls.crt": b"x"}) is None
    target = tmp_path / "serving-certs"
    assert CertBundle.read(target) is None
    bundle.write(target)
    assert sorted(p.name for p in target.iterdir()) == ["ca.crt", "tls.crt", "tls.key"]
    assert (target / "tls.key").stat().st_mode & 0o077 == 0
    assert CertBundle.read(target) == CertBundle(bundle.ca_cert, bundle.cert, bundle.key)
