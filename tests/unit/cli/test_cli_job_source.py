"""Reading and validating job input before anything talks to a server."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import yaml
from cli_builders import pytorchjob

from kubetrain.api.jobs import parse_job
from kubetrain.cli.output import names
from kubetrain.client.errors import EXIT_INVALID, InvalidInput, ValidationError
from kubetrain.client.source import load_jobs, load_one, load_run
from kubetrain.kinds.registry import REPLICA_SPEC_KINDS as KINDS
from kubetrain.kube.annotations import WORKDIR

REPO = Path(__file__).resolve().parents[3]


def test_dict_yaml_text_path_and_parsed_job(tmp_path: Path) -> None:
    raw = pytorchjob()
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(raw))
    job, _, _ = parse_job(raw, KINDS)
    assert job is not None
    for source in (raw, yaml.safe_dump(raw), str(path), path, job):
        loaded = load_one(source)
        assert (loaded.kind, loaded.name) == ("PyTorchJob", "tiny")
    assert load_one(path).source == str(path)


def test_missing_file() -> None:
    with pytest.raises(InvalidInput, match="no such file"):
        load_one("/nonexistent/job.yaml")


def test_a_directory_is_named_as_such_with_the_job_file_it_holds(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match=r"is a directory \(give the path of a job YAML/JSON file\)$"):
        load_one(tmp_path)
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(pytorchjob()))
    with pytest.raises(InvalidInput, match=f"did you mean {tmp_path / 'job.yaml'}"):
        load_one(tmp_path)


def test_dash_reads_standard_input(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(yaml.safe_dump(pytorchjob("from-stdin"))))
    job = load_one("-")
    assert job.name == "from-stdin" and job.source == "<stdin>"


def test_yaml_syntax_error_names_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("kind: PyTorchJob\nmetadata: {name: x\n")
    with pytest.raises(InvalidInput, match=r"not valid YAML: .*line \d+"):
        load_one(path)


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.yaml"
    path.write_text("---\n")
    with pytest.raises(InvalidInput, match="no document"):
        load_one(path)


def test_validation_error_carries_field_errors() -> None:
    raw = pytorchjob()
    raw["spec"]["pytorchReplicaSpecs"]["Master"]["replicas"] = 2
    with pytest.raises(ValidationError) as exc:
        load_one(raw)
    err = exc.value
    assert err.exit_code == EXIT_INVALID
    assert [e.field for e in err.errors] == ["spec.pytorchReplicaSpecs[Master].replicas"]
    assert 'PyTorchJob.kubeflow.org "tiny" is invalid' in str(err)
    assert "spec.pytorchReplicaSpecs[Master].replicas: Forbidden" in str(err)


def test_unknown_kind_is_a_validation_error_naming_every_kind_kubetrain_takes() -> None:
    with pytest.raises(ValidationError, match='kind: Unsupported value: "Pod"') as exc:
        load_one({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}})
    for kind in ("PyTorchJob", "MPIJob", "ChainerJob", "Caffe2Job", "TrainJob", "ClusterTrainingRuntime"):
        assert f'"{kind}"' in str(exc.value)
    with pytest.raises(ValidationError, match=r"kind: Required value: must be one of TFJob, .*, TrainJob"):
        load_one({"apiVersion": "v1", "metadata": {"name": "p"}})


def test_multi_document_file(tmp_path: Path) -> None:
    path = tmp_path / "two.yaml"
    path.write_text(yaml.safe_dump_all([pytorchjob("a"), pytorchjob("b")]))
    assert [j.name for j in load_jobs(path)] == ["a", "b"]
    with pytest.raises(InvalidInput, match="holds 2 jobs"):
        load_one(path)


@pytest.mark.parametrize("path", sorted((REPO / "examples" / "invalid").glob("*.yaml")), ids=lambda p: p.name)
def test_every_invalid_example_is_refused(path: Path) -> None:
    with pytest.raises((ValidationError, InvalidInput)):
        load_jobs(path)


def test_a_job_file_names_its_directory_on_the_job_and_every_pod_template(tmp_path: Path) -> None:
    mpijob = {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": "mpi"},
        "spec": {
            "mpiReplicaSpecs": {
                role: {"replicas": 1, "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}
                for role in ("Launcher", "Worker")
            }
        },
    }
    path = tmp_path / "mpi.yaml"
    path.write_text(yaml.safe_dump(mpijob))
    job = load_one(path).raw
    assert job["metadata"]["annotations"] == {WORKDIR: str(tmp_path)}
    for role in ("Launcher", "Worker"):
        template = job["spec"]["mpiReplicaSpecs"][role]["template"]
        assert template["metadata"]["annotations"] == {WORKDIR: str(tmp_path)}


def test_a_directory_the_job_names_itself_wins(tmp_path: Path) -> None:
    raw = pytorchjob()
    raw["metadata"]["annotations"] = {WORKDIR: "/srv/code"}
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(raw))
    job = load_one(path).raw
    master = job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]
    assert (
        job["metadata"]["annotations"][WORKDIR] == master["metadata"]["annotations"][WORKDIR] == "/srv/code"
    )
    assert WORKDIR not in (load_one(pytorchjob()).raw["metadata"].get("annotations") or {})  # a dict: none


TRAINJOB_EXAMPLE = REPO / "examples" / "local" / "trainjob-torch" / "trainjob.yaml"


def test_a_trainjob_is_checked_with_its_webhooks_rules_offline() -> None:
    runtime, job = load_jobs(TRAINJOB_EXAMPLE)
    assert (runtime.kind, job.kind) == ("ClusterTrainingRuntime", "TrainJob")
    bad = yaml.safe_dump(
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": {"name": "t"},
            "spec": {"runtimeRef": {"name": "r", "kind": "Other"}},
        }
    )
    with pytest.raises(
        InvalidInput, match=r'TrainJob "t" is invalid: unsupported runtime: Other\.trainer\.kubeflow\.org'
    ):
        load_jobs(bad)


def test_run_takes_the_job_with_the_runtime_it_reads_from_the_same_file() -> None:
    loaded = load_run(TRAINJOB_EXAMPLE)
    assert (loaded.kind, loaded.name) == ("TrainJob", "trainjob-torch")
    assert [c["kind"] for c in loaded.companions] == ["ClusterTrainingRuntime"]
    with pytest.raises(InvalidInput, match="holds 2 jobs"):
        load_one(TRAINJOB_EXAMPLE)  # the client's create/apply take one object


def test_a_trainjobs_names_carry_its_group() -> None:
    trainjob = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": {"name": "t"}}
    pytorch = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "p"}}
    assert names([trainjob, pytorch]) == "trainjob.trainer.kubeflow.org/t\npytorchjob.kubeflow.org/p"
    assert str(ValidationError([], "TrainJob", "t")).startswith(
        'TrainJob.trainer.kubeflow.org "t" is invalid'
    )
