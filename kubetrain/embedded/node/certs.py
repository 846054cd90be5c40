"""The kubelet API's TLS: a serving certificate, and the client CA callers must be signed by.

Like a kubelet without ``--tls-cert-file``, the node makes itself a self-signed serving
certificate at start (kube-apiserver does not verify it unless given
``--kubelet-certificate-authority``). Client certificates are requested, not required, so a
caller without one gets the kubelet's 401 rather than a failed handshake; one signed by another
CA fails the handshake (Python's ssl cannot request a certificate without verifying it).
"""

from __future__ import annotations

import base64
import ssl
from pathlib import Path

import yaml
from cryptography.hazmat.primitives import serialization

from kubetrain.kube.pki import pem_key, serving_certificate


def self_signed(directory: Path, hostnames: list[str], ips: list[str]) -> tuple[Path, Path]:
    """Write ``kubelet.crt``/``kubelet.key`` (ECDSA P-256, one year) for `hostnames` and `ips`."""
    cert, key = serving_certificate(f"{hostnames[0]}@kubetrain", [*hostnames, *ips])
    directory.mkdir(parents=True, exist_ok=True)
    cert_path, key_path = directory / "kubelet.crt", directory / "kubelet.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.touch(mode=0o600)
    key_path.write_bytes(pem_key(key))
    return cert_path, key_path


def kubeconfig_ca(path: Path, context: str | None = None) -> str | None:
    """The PEM of the cluster CA a kubeconfig names (its data or its file), None when it has none."""
    cfg = yaml.safe_load(path.read_text()) or {}
    ctx_name = context or cfg.get("current-context")
    ctx = next((c.get("context") or {} for c in cfg.get("contexts") or [] if c.get("name") == ctx_name), {})
    cluster = next(
        (c.get("cluster") or {} for c in cfg.get("clusters") or [] if c.get("name") == ctx.get("cluster")), {}
    )
    if cluster.get("certificate-authority-data"):
        return base64.b64decode(cluster["certificate-authority-data"]).decode()
    if cluster.get("certificate-authority"):
        ca = Path(cluster["certificate-authority"])
        return (ca if ca.is_absolute() else path.parent / ca).read_text()
    return None


def server_context(cert: Path, key: Path, client_ca_pem: str) -> ssl.SSLContext:
    """TLS 1.2+, HTTP/1.1 only (exec upgrades need it), client certificates of `client_ca_pem`."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(cert, key)
    ctx.load_verify_locations(cadata=client_ca_pem)
    ctx.verify_mode = ssl.CERT_OPTIONAL
    ctx.set_alpn_protocols(["http/1.1"])
    return ctx
