"""`kubetrain validate` and `kubetrain crds`: offline, exit codes and messages."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from cli_plane import pytorchjob, write_job

from kubetrain.cli.main import main

REPO = Path(__file__).resolve().parents[3]


def test_valid_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_job(tmp_path, pytorchjob("ok", "print(1)"))
    assert main(["validate", str(path)]) == 0
    assert f'{path}: PyTorchJob "ok" is valid' in capsys.readouterr().out


def test_invalid_file_names_field_and_problem(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job = pytorchjob("Bad_Name", "print(1)")
    job["spec"]["pytorchReplicaSpecs"]["Master"]["restartPolicy"] = "Sometimes"
    path = write_job(tmp_path, job)
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert 'PyTorchJob.kubeflow.org "Bad_Name" is invalid' in err
    assert "metadata.name: Invalid value" in err
    assert 'Unsupported value: "Sometimes"' in err and "Never" in err  # the fix: the supported values
    assert "Traceback" not in err


def test_mixed_files_exit_2_and_report_each(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = write_job(tmp_path, pytorchjob("ok", "print(1)"))
    broken = tmp_path / "broken.yaml"
    broken.write_text("kind: [unclosed\n")
    assert main(["validate", str(good), str(broken), str(tmp_path / "missing.yaml")]) == 2
    captured = capsys.readouterr()
    assert "is valid" in captured.out
    assert "not valid YAML" in captured.err and "no such file" in captured.err


@pytest.mark.parametrize("path", sorted((REPO / "examples" / "invalid").glob("*.yaml")), ids=lambda p: p.name)
def test_invalid_examples_exit_2(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(path)]) == 2
    assert "Traceback" not in capsys.readouterr().err


def test_crds_list_and_print(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["crds"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^pytorchjobs\.kubeflow\.org +PyTorchJob +v1$", out, re.M), out
    assert re.search(
        r"^clustertrainingruntimes\.trainer\.kubeflow\.org +ClusterTrainingRuntime +v1alpha1$", out, re.M
    )
    assert main(["crds", "--print"]) == 0
    docs = [d for d in yaml.safe_load_all(capsys.readouterr().out) if d]
    assert {d["kind"] for d in docs} == {"CustomResourceDefinition"}
    assert "tfjobs.kubeflow.org" in {d["metadata"]["name"] for d in docs}
