import pytest

from kubetrain.runtime.config import RuntimeConfig, UnsupportedScheme, resolve_kinds

KINDS = {"TFJob": 1, "PyTorchJob": 2, "XGBoostJob": 3}


def test_resolve_kinds_case_insensitive_and_default_all() -> None:
    assert resolve_kinds(["pytorchjob", "TFJOB", "tfjob"], KINDS) == ["PyTorchJob", "TFJob"]
    assert resolve_kinds([], KINDS) == ["TFJob", "PyTorchJob", "XGBoostJob"]


def test_unknown_scheme_uses_upstream_message() -> None:
    with pytest.raises(UnsupportedScheme, match=r"^scheme foojob is not supported yet$"):
        resolve_kinds(["foojob"], KINDS)


def test_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBEFLOW_NAMESPACE", "kubeflow")
    monkeypatch.setenv("CUSTOM_CLUSTER_DOMAIN", "cluster.example")
    cfg = RuntimeConfig.from_env(workers=8)
    assert cfg.namespace == "kubeflow" and cfg.workers == 8
    cc = cfg.controller_config()
    assert cc.cluster_domain == "cluster.example"
    monkeypatch.delenv("KUBEFLOW_NAMESPACE")
    assert RuntimeConfig.from_env().namespace is None
