"""KubeClient over TLS, configured the way users configure it: a kubeconfig with a CA, a client
certificate, a bearer token and a tls-server-name, against a server that demands all of them."""

from __future__ import annotations

import datetime as dt
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import yaml
from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from kubetrain.kube.errors import ApiError
from kubetrain.runtime.transport import KubeClient
from kubetrain.webhook.certs import CertBundle, generate

TOKEN = "sekret-token"
SERVER_NAME = "apiserver.test.svc"


def client_pair(bundle: CertBundle) -> tuple[bytes, bytes]:
    """A client certificate (clientAuth) signed by the bundle's CA."""
    ca_cert = x509.load_pem_x509_certificate(bundle.ca_cert)
    ca_key = serialization.load_pem_private_key(bundle.ca_key, None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kubetrain-operator")]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(hours=1))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


@pytest.fixture
async def tls_server(tmp_path: Path) -> AsyncIterator[tuple[Path, list[dict[str, str]]]]:
    """A TLS server requiring a client certificate; answers with what it saw. Yields a kubeconfig."""
    bundle = generate("apiserver", "test")
    bundle.write(tmp_path / "server")
    cert, key = client_pair(bundle)
    (tmp_path / "client.crt").write_bytes(cert)
    (tmp_path / "client.key").write_bytes(key)
    seen: list[dict[str, str]] = []

    async def handle(request: web.Request) -> web.Response:
        peer = request.transport.get_extra_info("peercert") if request.transport else None
        subject = dict(item[0] for item in (peer or {}).get("subject", ()))
        seen.append({"auth": request.headers.get("Authorization", ""), "cn": subject.get("commonName", "")})
        if request.headers.get("Authorization") != f"Bearer {TOKEN}":
            return web.json_response({"kind": "Status", "reason": "Unauthorized", "code": 401}, status=401)
        return web.json_response({"kind": "Namespace", "metadata": {"name": request.match_info["name"]}})

    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(tmp_path / "server" / "ca.crt"))
    context.load_cert_chain(tmp_path / "server" / "tls.crt", tmp_path / "server" / "tls.key")
    context.verify_mode = ssl.CERT_REQUIRED
    app = web.Application()
    app.router.add_get("/api/v1/namespaces/{name}", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    kubeconfig = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "c",
                "cluster": {
                    "server": f"https://127.0.0.1:{port}",
                    "certificate-authority": str(tmp_path / "server" / "ca.crt"),
                    "tls-server-name": SERVER_NAME,
                },
            }
        ],
        "users": [
            {
                "name": "u",
                "user": {
                    "token": TOKEN,
                    "client-certificate": str(tmp_path / "client.crt"),
                    "client-key": str(tmp_path / "client.key"),
                },
            }
        ],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(kubeconfig))
    yield path, seen
    await runner.cleanup()


async def test_kubeconfig_tls_client_cert_token_and_server_name(
    tls_server: tuple[Path, list[dict[str, str]]],
) -> None:
    path, seen = tls_server
    async with await KubeClient.from_kubeconfig(str(path), qps=0) as client:
        for name in ("a", "b"):
            assert (await client.get("v1", "Namespace", None, name))["metadata"]["name"] == name
    assert seen == [{"auth": f"Bearer {TOKEN}", "cn": "kubetrain-operator"}] * 2


async def test_untrusted_server_certificate_is_a_connection_error(
    tls_server: tuple[Path, list[dict[str, str]]], tmp_path: Path
) -> None:
    path, seen = tls_server
    config = yaml.safe_load(path.read_text())
    other = generate("other", "test")  # a CA the server's certificate does not chain to
    (tmp_path / "other-ca.crt").write_bytes(other.ca_cert)
    config["clusters"][0]["cluster"]["certificate-authority"] = str(tmp_path / "other-ca.crt")
    path.write_text(yaml.safe_dump(config))
    async with await KubeClient.from_kubeconfig(str(path), qps=0, max_attempts=1) as client:
        with pytest.raises(ApiError, match="CERTIFICATE_VERIFY_FAILED") as err:
            await client.get("v1", "Namespace", None, "a")
    assert err.value.connection_error
    assert seen == []


async def test_wrong_server_name_is_refused(tls_server: tuple[Path, list[dict[str, str]]]) -> None:
    path, seen = tls_server
    config = yaml.safe_load(path.read_text())
    config["clusters"][0]["cluster"]["tls-server-name"] = "somebody-else.example.com"
    path.write_text(yaml.safe_dump(config))
    async with await KubeClient.from_kubeconfig(str(path), qps=0, max_attempts=1) as client:
        with pytest.raises(ApiError, match="CERTIFICATE_VERIFY_FAILED"):
            await client.get("v1", "Namespace", None, "a")
    assert seen == []
