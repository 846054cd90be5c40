"""MPIJob API: lossless parsing, the two-version CRD and its round trips, defaults, validation
messages, and the example manifests."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from mpi_builders import v1_job, v2_job

from kubetrain.api.codec import encode
from kubetrain.api.jobs import load_documents
from kubetrain.api.types import TrainingJob
from kubetrain.embedded.apiserver.schema import apply_defaults, prune
from kubetrain.kinds import crds as kind_crds
from kubetrain.kinds.mpijob.conversion import (
    API_VERSION_ANNOTATION,
    convert,
    has_v2beta1_markers,
    written_version,
)
from kubetrain.kinds.mpijob.defaults import default_v1, default_v2
from kubetrain.kinds.mpijob.types import MPIJobV1Spec, MPIJobV2Spec
from kubetrain.kinds.mpijob.validation import validate_v1, validate_v2
from kubetrain.kinds.mpijob.wire import parse as parse_mpijob
from kubetrain.kinds.mpijob.wire import v1_spec, v2_spec
from kubetrain.kinds.registry import BY_KIND, registration_for

REPO = Path(__file__).resolve().parents[3]
CRD_DIR = REPO / "manifests" / "crds"
MPI_CRD = yaml.safe_load(kind_crds.generate_all()["kubeflow.org_mpijobs.yaml"])
EXAMPLES = sorted(p for d in ("mpi", "chainer", "caffe2") for p in (REPO / "examples" / d).glob("*.yaml"))


def schema(version: str) -> dict[str, Any]:
    (entry,) = [v for v in MPI_CRD["spec"]["versions"] if v["name"] == version]
    return entry["schema"]["openAPIV3Schema"]  # type: ignore[no-any-return]


def api_server_write(obj: dict[str, Any], version: str) -> dict[str, Any]:
    """A create/update through `version`'s endpoint: pruning and that version's defaults."""
    out = convert(obj, version)
    prune(out, schema(version), root=True)
    apply_defaults(out, schema(version))
    return out


def parse(raw: dict[str, Any]) -> TrainingJob:
    job, _, errors = parse_mpijob(raw)
    assert not errors and isinstance(job, TrainingJob)
    return job


# ---- parsing and round trips -------------------------------------------------------------------


@pytest.mark.parametrize("raw", [v1_job(spec={"mainContainer": "m", "cleanPodPolicy": "All"}), v2_job()])
def test_lossless_round_trip(raw: dict[str, Any]) -> None:
    raw["spec"]["futureField"] = {"x": 1}
    raw["status"] = {
        "conditions": [{"type": "Created", "status": "True", "extraKey": 1}],
        "replicaStatuses": {"Worker": {"active": 1}},
        "other": 2,
    }
    assert encode(parse(raw)) == raw


def test_each_version_decodes_its_own_spec() -> None:
    assert isinstance(parse(v1_job()).spec, MPIJobV1Spec)
    assert isinstance(parse(v2_job()).spec, MPIJobV2Spec)


@pytest.mark.parametrize(
    ("raw", "other"),
    [
        (v1_job(spec={"mainContainer": "trainer", "cleanPodPolicy": "All"}), "v2beta1"),
        (v2_job(spec={"mpiImplementation": "Intel", "sshAuthMountPath": "/home/u/.ssh"}), "v1"),
    ],
)
def test_reading_one_version_as_the_other_round_trips(raw: dict[str, Any], other: str) -> None:
    """Conversion strategy None: read as the other version, decode, encode, read back: equal."""
    own = raw["apiVersion"].split("/")[1]
    raw["metadata"]["annotations"] = {API_VERSION_ANNOTATION: own}
    as_other = convert(raw, other)
    job = parse(as_other)
    assert job.spec is not None and written_version(as_other) == own  # mechanics stay the same
    back = convert(encode(job), own)
    assert back == raw
    assert encode(parse(back)) == raw


def test_through_the_api_server_schema() -> None:
    """The generated CRD keeps every field through either endpoint, and defaults reveal the
    version a job was created in; the annotation keeps it after a write through the other."""
    v1 = api_server_write(v1_job(spec={"mainContainer": "trainer", "cleanPodPolicy": "All"}), "v1")
    assert v1["spec"]["mainContainer"] == "trainer" and "mpiImplementation" not in v1["spec"]
    assert not has_v2beta1_markers(v1) and written_version(v1) == "v1"  # the operator lists as v1
    v2 = api_server_write(v2_job(), "v2beta1")
    assert v2["spec"]["mpiImplementation"] == "OpenMPI" and v2["spec"]["sshAuthMountPath"] == "/root/.ssh"
    assert written_version(convert(v2, "v1")) == "v2beta1"
    edited = api_server_write(convert(v2, "v1"), "v1")  # kubectl edit uses the preferred version v1
    assert edited["spec"] == v2["spec"]
    stamped = copy.deepcopy(v1)
    stamped["metadata"]["annotations"] = {API_VERSION_ANNOTATION: "v1"}
    kueue = api_server_write(stamped, "v2beta1")  # e.g. Kueue unsuspends through v2beta1
    assert kueue["spec"]["mainContainer"] == "trainer"
    assert written_version(kueue) == "v1"


def test_version_rule() -> None:
    assert written_version(v1_job()) == "v1"
    assert written_version(v2_job()) == "v2beta1"
    marked = convert(v2_job(spec={"mpiImplementation": "OpenMPI"}), "v1")
    assert written_version(marked) == "v2beta1"
    override = v2_job(annotations={API_VERSION_ANNOTATION: "v1"})
    assert written_version(override) == "v1"
    with pytest.raises(ValueError):
        convert(v1_job(), "v3")


# ---- CRD ---------------------------------------------------------------------------------------


def test_one_crd_serves_the_three_versions_with_storage_v1() -> None:
    versions = [(v["name"], v["served"], v["storage"]) for v in MPI_CRD["spec"]["versions"]]
    assert versions == [("v1", True, True), ("v2beta1", True, False), ("v1alpha2", True, False)]
    assert MPI_CRD["metadata"]["name"] == "mpijobs.kubeflow.org"
    v1_spec_schema = schema("v1")["properties"]["spec"]["properties"]
    v2_spec_schema = schema("v2beta1")["properties"]["spec"]["properties"]
    v1alpha2_spec_schema = schema("v1alpha2")["properties"]["spec"]["properties"]
    assert set(v1_spec_schema) == set(v2_spec_schema) == set(v1alpha2_spec_schema)
    # only v1alpha2 defaults the top-level backoffLimit: the marker of a job written as v1alpha2
    assert v1alpha2_spec_schema["backoffLimit"]["default"] == 6
    assert "default" not in v1_spec_schema["backoffLimit"] and "default" not in v2_spec_schema["backoffLimit"]
    assert "default" not in v1alpha2_spec_schema["mpiImplementation"]
    assert "default" not in v1_spec_schema["mpiImplementation"]
    assert v2_spec_schema["mpiImplementation"]["default"] == "OpenMPI"
    assert v2_spec_schema["launcherCreationPolicy"]["enum"] == ["AtStartup", "WaitForWorkersReady"]
    assert v2_spec_schema["slotsPerWorker"]["default"] == 1
    assert "default" not in v1_spec_schema["slotsPerWorker"]


@pytest.mark.parametrize(
    "name", ["kubeflow.org_mpijobs.yaml", "kubeflow.org_chainerjobs.yaml", "kubeflow.org_caffe2jobs.yaml"]
)
def test_committed_crds_match_the_generator(name: str) -> None:
    assert (CRD_DIR / name).read_text(encoding="utf-8") == kind_crds.generate_all()[name], (
        "stale: run python -m kubetrain.kinds.crds --write manifests/crds"
    )


def test_historical_crd_names() -> None:
    files = kind_crds.generate_all()
    chainer = yaml.safe_load(files["kubeflow.org_chainerjobs.yaml"])
    assert chainer["spec"]["names"]["shortNames"] == ["chj", "chjs", "chjob", "chjobs"]
    assert chainer["spec"]["names"]["categories"] == ["all"]
    assert [v["name"] for v in chainer["spec"]["versions"]] == ["v1alpha1"]
    caffe2 = yaml.safe_load(files["kubeflow.org_caffe2jobs.yaml"])
    assert (
        "RuntimeID"
        in caffe2["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    )
    versions = [
        (i.kind, i.version) for kind in ("MPIJob", "ChainerJob", "Caffe2Job") for i in BY_KIND[kind].versions
    ]
    assert versions == [
        ("MPIJob", "v1"),
        ("MPIJob", "v2beta1"),
        ("MPIJob", "v1alpha2"),
        ("ChainerJob", "v1alpha1"),
        ("Caffe2Job", "v1alpha1"),
    ]


# ---- defaults ----------------------------------------------------------------------------------


def test_v2_defaults() -> None:
    raw = v2_job()
    del raw["spec"]["slotsPerWorker"]
    raw["spec"]["runPolicy"] = {}
    raw["spec"]["mpiReplicaSpecs"]["Worker"].pop("replicas")
    job = default_v2(parse(raw))
    spec = v2_spec(job)
    assert (spec.slots_per_worker, spec.ssh_auth_mount_path, spec.mpi_implementation) == (
        1,
        "/root/.ssh",
        "OpenMPI",
    )
    assert (spec.launcher_creation_policy, spec.run_launcher_as_worker) == ("AtStartup", False)
    assert spec.run_policy is not None and spec.run_policy.clean_pod_policy == "None"
    specs = spec.replica_specs or {}
    assert (specs["Launcher"].restart_policy, specs["Worker"].restart_policy) == ("OnFailure", "Never")  # type: ignore[union-attr]
    assert specs["Worker"].replicas == 0  # type: ignore[union-attr]
    assert v2_spec(parse(raw)).slots_per_worker is None  # the input is untouched


@pytest.mark.parametrize(
    ("top", "run_policy", "expected"),
    [(None, None, "None"), ("All", None, "All"), ("All", "Running", "Running"), (None, "Running", "Running")],
)
def test_v1_clean_pod_policy_precedence(top: str | None, run_policy: str | None, expected: str) -> None:
    spec: dict[str, Any] = {}
    if top:
        spec["cleanPodPolicy"] = top
    if run_policy:
        spec["runPolicy"] = {"cleanPodPolicy": run_policy}
    raw = v1_job(spec=spec)
    raw["spec"]["mpiReplicaSpecs"]["worker"] = raw["spec"]["mpiReplicaSpecs"].pop("Worker")
    job = default_v1(parse(raw))
    assert job.run_policy.clean_pod_policy == expected
    assert v1_spec(job).clean_pod_policy == (top or expected)
    assert set(job.replica_specs) == {"Launcher", "Worker"}


# ---- validation --------------------------------------------------------------------------------


def test_v2_validation_messages() -> None:
    raw = v2_job(name="x" * 60, workers=20)
    raw["spec"]["mpiReplicaSpecs"]["Launcher"].update(replicas=2, restartPolicy="ExitCode")
    raw["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"] = []
    raw["spec"]["runPolicy"] = {"cleanPodPolicy": "Some", "backoffLimit": -1, "managedBy": "me"}
    raw["spec"]["slotsPerWorker"] = -1
    messages = list(validate_v2(default_v2(parse(raw))).messages())
    assert messages == [
        'metadata.name: Invalid value: "'
        + "x" * 60
        + '": will not able to create pod and service with invalid DNS '
        'label "' + "x" * 60 + '-worker-19": must be no more than 63 characters',
        'spec.mpiReplicaSpecs[Launcher].restartPolicy: Unsupported value: "ExitCode": '
        'supported values: "Never", "OnFailure"',
        "spec.mpiReplicaSpecs[Launcher].replicas: Invalid value: 2: must be 1",
        "spec.mpiReplicaSpecs[Worker].template.spec.containers: Required value: "
        "must define at least one container",
        "spec.slotsPerWorker: Invalid value: -1: must be greater than or equal to 0",
        'spec.runPolicy.cleanPodPolicy: Unsupported value: "Some": '
        'supported values: "All", "None", "Running"',
        "spec.runPolicy.backoffLimit: Invalid value: -1: must be greater than or equal to 0",
        'spec.runPolicy.managedBy: Unsupported value: "me": supported values: "kubeflow.org/mpi-operator", '
        '"kueue.x-k8s.io/multikueue"',
    ]
    missing = v2_job()
    del missing["spec"]["mpiReplicaSpecs"]["Launcher"]
    assert list(validate_v2(default_v2(parse(missing))).messages()) == [
        "spec.mpiReplicaSpecs[Launcher]: Required value: must have Launcher replica spec"
    ]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda s: s.pop("Launcher"), "MPIReplicaSpec is not valid: Master ReplicaSpec must be present"),
        (lambda s: s.update(PS=s["Worker"]), "MPIReplicaType is PS but must be one of [Launcher Worker]"),
        (
            lambda s: s["Worker"]["template"]["spec"]["containers"][0].pop("image"),
            "MPIJobSpec is not valid: Image is undefined in the container of Worker",
        ),
        (
            lambda s: s["Worker"]["template"]["spec"].update(containers=[]),
            "MPIJobSpec is not valid: containers definition expected in Worker",
        ),
    ],
)
def test_v1_validation_messages(change: Any, message: str) -> None:
    raw = v1_job()
    change(raw["spec"]["mpiReplicaSpecs"])
    assert validate_v1(parse(raw)) == message


# ---- examples ----------------------------------------------------------------------------------


def test_there_are_examples_for_every_kind() -> None:
    kinds = {(doc["kind"], doc["apiVersion"]) for p in EXAMPLES for doc in load_documents(p.read_text())}
    assert kinds == {
        ("MPIJob", "kubeflow.org/v1"),
        ("MPIJob", "kubeflow.org/v2beta1"),
        ("ChainerJob", "kubeflow.org/v1alpha1"),
        ("Caffe2Job", "kubeflow.org/v1alpha1"),
    }


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_examples_parse_round_trip_and_validate(path: Path) -> None:
    for doc in load_documents(path.read_text(encoding="utf-8")):
        reg = registration_for(doc["kind"])
        assert reg is not None and reg.problems is not None
        job, info, errors = reg.parse(doc)
        assert job is not None and info is not None and not errors
        assert encode(job) == doc
        assert reg.problems(job, info) == []
        for version in ("v1", "v2beta1", "v1alpha2") if doc["kind"] == "MPIJob" else ():
            prune(served := convert(doc, version), schema(version), root=True)
            assert served["spec"] == doc["spec"]  # nothing pruned through any endpoint
