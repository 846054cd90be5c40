"""Which kubeconfig file, context and namespace a client uses."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kubetrain.client.errors import ConfigError
from kubetrain.client.kubeconfig import kubeconfig_path, resolve


def write(path: Path, namespace: str | None = "team", current: str = "a") -> Path:
    ctx: dict[str, str] = {"cluster": "c", "user": "u"}
    if namespace:
        ctx["namespace"] = namespace
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": current,
                "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:1"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [
                    {"name": "a", "context": ctx},
                    {"name": "b", "context": {"cluster": "c", "user": "u"}},
                ],
            }
        )
    )
    return path


def test_explicit_path_context_namespace(tmp_path: Path) -> None:
    path = write(tmp_path / "k.yaml")
    assert resolve(path).namespace == "team"
    assert resolve(path, "b").namespace == "default"
    assert resolve(path, "a", "other").namespace == "other"
    assert resolve(path).context == "a"


def test_kubeconfig_env_first_existing_entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path / "k.yaml")
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path / 'missing.yaml'}:{path}")
    assert kubeconfig_path() == str(path)


def test_no_kubeconfig_says_how_to_get_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(ConfigError, match="kubetrain up"):
        kubeconfig_path()


def test_missing_explicit_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        resolve(tmp_path / "nope.yaml")


def test_unknown_context_lists_known(tmp_path: Path) -> None:
    path = write(tmp_path / "k.yaml")
    with pytest.raises(ConfigError, match=r'context "zz" is not in kubeconfig .* \(known: a, b\)'):
        resolve(path, "zz")


def test_not_a_kubeconfig(tmp_path: Path) -> None:
    path = tmp_path / "k.yaml"
    path.write_text("- just\n- a list\n")
    with pytest.raises(ConfigError, match="not a kubeconfig"):
        resolve(path)
