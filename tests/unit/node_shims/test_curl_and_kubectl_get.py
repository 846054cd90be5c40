"""The node's `curl` shim serves kubectl downloads; its `kubectl get` asks the API server as an
in-cluster kubectl does (service-account token, ca.crt, RBAC), with kubectl's messages."""

from __future__ import annotations

import hashlib
import json
import os
import ssl
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubetrain.embedded.apiserver import ServerThread
from kubetrain.embedded.node import shims
from kubetrain.embedded.node.shims import client

STABLE = "https://storage.googleapis.com/kubernetes-release/release/stable.txt"
KUBECTL = "https://storage.googleapis.com/kubernetes-release/release/v1.31.0/bin/linux/amd64/kubectl"
SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


def _run(
    bin_dir: Path, tool: str, *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> Any:
    base = {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_")}
    base["PATH"] = f"{bin_dir}{os.pathsep}{base.get('PATH', '')}"
    return subprocess.run(
        [str(bin_dir / tool), *args],
        capture_output=True,
        text=True,
        timeout=30,
        env={**base, **(env or {})},
        cwd=cwd,
    )


# -- curl ----------------------------------------------------------------------------------------


def test_curl_serves_the_kubernetes_release_urls_with_the_nodes_kubectl(tmp_path: Path) -> None:
    bin_dir = shims.install(tmp_path / "bin", tmp_path / "exec.sock")
    stable = _run(bin_dir, "curl", "-s", STABLE)
    assert stable.returncode == 0, stable.stderr
    assert stable.stdout == client.FALLBACK_VERSION  # no API server in reach: the node's default
    work = tmp_path / "work"
    work.mkdir()
    got = _run(bin_dir, "curl", "-LO", KUBECTL, cwd=work)
    assert got.returncode == 0, got.stderr
    assert (work / "kubectl").read_bytes() == (bin_dir / "kubectl").read_bytes()
    assert os.access(work / "kubectl", os.X_OK)
    dl = _run(
        bin_dir,
        "curl",
        "-fsSLo",
        str(work / "k2"),
        "https://dl.k8s.io/release/v1.30.2/bin/linux/arm64/kubectl",
    )
    assert dl.returncode == 0, dl.stderr
    assert (work / "k2").read_bytes() == (bin_dir / "kubectl").read_bytes()
    digest = _run(bin_dir, "curl", "-sL", "https://dl.k8s.io/v1.31.0/bin/linux/amd64/kubectl.sha256")
    assert digest.stdout == hashlib.sha256((bin_dir / "kubectl").read_bytes()).hexdigest()


def test_curl_hands_every_other_url_to_the_real_curl(tmp_path: Path) -> None:
    bin_dir = shims.install(tmp_path / "bin", tmp_path / "exec.sock")
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "curl").write_text('#!/bin/sh\necho "real curl: $*"\n')
    (fake / "curl").chmod(0o755)
    env = {"PATH": f"{bin_dir}{os.pathsep}{fake}{os.pathsep}/usr/bin:/bin"}
    for args in (
        ["-s", "https://example.com/file"],
        ["-sL", STABLE, "https://example.com/other"],  # not only release URLs: all to curl
        ["-X", "POST", STABLE],  # not a download
    ):
        result = _run(bin_dir, "curl", *args, env=env)
        assert result.stdout == f"real curl: {' '.join(args)}\n", result.stderr


# -- kubectl get: parsing and jsonpath -------------------------------------------------------------


def test_parse_kubectl_get() -> None:
    assert client.parse_kubectl_get(["statefulsets", "ws", "-o=jsonpath={.status.replicas}"]) == (
        "statefulsets",
        ["ws"],
        None,
        "jsonpath={.status.replicas}",
    )
    assert client.parse_kubectl_get(["pod/p1", "-n", "ns1", "-o", "json"]) == ("pod", ["p1"], "ns1", "json")
    assert client.parse_kubectl_get(["pods", "--namespace=x"]) == ("pods", [], "x", "")
    with pytest.raises(ValueError, match="does not implement the flag --watch"):
        client.parse_kubectl_get(["pods", "--watch"])


def test_jsonpath_subset() -> None:
    data = {
        "status": {"replicas": 2, "phase": "Running"},
        "metadata": {"labels": {"app.kubernetes.io/name": "x"}},
        "items": [{"metadata": {"name": "a"}}, {"metadata": {"name": "b"}}],
    }
    assert client.jsonpath("{.status.replicas}", data) == "2"
    assert client.jsonpath("phase={.status.phase}", data) == "phase=Running"
    assert client.jsonpath("{.items[*].metadata.name}", data) == "a b"
    assert client.jsonpath("{.items[1].metadata.name}", data) == "b"
    assert client.jsonpath(r"{.metadata.labels.app\.kubernetes\.io/name}", data) == "x"
    assert client.jsonpath("{.status.missing}", data) == ""  # kubectl allows missing keys
    assert client.jsonpath("{.status}", data) == '{"replicas":2,"phase":"Running"}'
    with pytest.raises(ValueError, match="range"):
        client.jsonpath("{range .items[*]}{.metadata.name}{end}", data)
    with pytest.raises(ValueError, match="unsupported jsonpath expression"):
        client.jsonpath("{.items[?(@.x)]}", data)


# -- kubectl get against an API server, with a service account's credentials ---------------------


@pytest.fixture
def server() -> Iterator[ServerThread]:
    with ServerThread() as thread:
        yield thread


def _admin(server: ServerThread, method: str, path: str, body: Any = None) -> Any:
    req = urllib.request.Request(
        server.url + path,
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {server.token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, context=ssl.create_default_context(cafile=server.ca_file)) as resp:
        return json.loads(resp.read())


def test_kubectl_get_uses_the_service_account_and_rbac(tmp_path: Path, server: ServerThread) -> None:
    ns = "/api/v1/namespaces/default"
    _admin(server, "POST", f"{ns}/serviceaccounts", {"metadata": {"name": "launcher"}})
    sts = {
        "metadata": {"name": "ws"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"a": "b"}},
            "template": {
                "metadata": {"labels": {"a": "b"}},
                "spec": {"containers": [{"name": "c", "image": "i"}]},
            },
        },
    }
    _admin(server, "POST", "/apis/apps/v1/namespaces/default/statefulsets", sts)
    token = _admin(server, "POST", f"{ns}/serviceaccounts/launcher/token", {"spec": {}})["status"]["token"]
    secrets = tmp_path / "sa"
    secrets.mkdir()
    (secrets / "token").write_text(token)
    (secrets / "ca.crt").write_bytes(Path(server.ca_file).read_bytes())
    (secrets / "namespace").write_text("default")
    host, port = server.url.removeprefix("https://").rsplit(":", 1)
    env = {
        "KUBETRAIN_API_SERVICE": f"{host}:{port}",
        "KUBETRAIN_PATH_MAP": json.dumps({SA_DIR: str(secrets)}),
    }
    bin_dir = shims.install(tmp_path / "bin", tmp_path / "exec.sock")
    get = ["get", "statefulsets", "ws", "-o=jsonpath={.spec.replicas}"]

    denied = _run(bin_dir, "kubectl", *get, env=env)
    assert denied.returncode == 1
    assert denied.stderr == (
        'Error from server (Forbidden): statefulsets.apps "ws" is forbidden: User '
        '"system:serviceaccount:default:launcher" cannot get resource "statefulsets" in API group "apps" '
        'in the namespace "default"\n'
    )
    role = {
        "metadata": {"name": "r"},
        "rules": [
            {"apiGroups": ["apps"], "verbs": ["get"], "resources": ["statefulsets"], "resourceNames": ["ws"]}
        ],
    }
    binding = {
        "metadata": {"name": "r"},
        "subjects": [{"kind": "ServiceAccount", "name": "launcher", "namespace": "default"}],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
    }
    _admin(server, "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles", role)
    _admin(server, "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings", binding)
    allowed = _run(bin_dir, "kubectl", *get, env=env)
    assert (allowed.returncode, allowed.stdout) == (0, "2"), allowed.stderr
    as_json = _run(bin_dir, "kubectl", "get", "sts/ws", "-o", "json", env=env)
    assert json.loads(as_json.stdout)["metadata"]["name"] == "ws"
    table = _run(bin_dir, "kubectl", "get", "statefulsets.apps", "ws", env=env)
    assert table.stdout.splitlines()[0].split() == ["NAME", "READY", "AGE"], table.stderr
    assert table.stdout.splitlines()[1].split()[:2] == ["ws", "0/2"]
    missing = _run(bin_dir, "kubectl", "get", "pods", "nope", env=env)
    assert missing.returncode == 1
    assert missing.stderr.startswith('Error from server (Forbidden): pods "nope" is forbidden')
    # the curl shim asks the same server for its version
    stable = _run(bin_dir, "curl", "-s", STABLE, env=env)
    assert stable.stdout == "v1.31.0"
    # the kubelet's variables work as well
    kubelet_env = {
        **env,
        "KUBERNETES_SERVICE_HOST": host,
        "KUBERNETES_SERVICE_PORT": port,
        "KUBETRAIN_API_SERVICE": "",
    }
    assert _run(bin_dir, "kubectl", *get, env=kubelet_env).stdout == "2"
    # a token the server does not know: kubectl's 401 message
    (secrets / "token").write_text("not-a-token")
    unknown = _run(bin_dir, "kubectl", *get, env=env)
    assert unknown.stderr == "error: You must be logged in to the server (Unauthorized)\n"
