"""The Kubeflow SDK (`kubeflow` 0.5.x, TrainerClient), unchanged, against `kubetrain up` (issue 14).

`kubetrain up` runs as a subprocess, as a user starts it (tests/e2e/sdk_plane.py); upstream's
default ClusterTrainingRuntimes (v2.3.0's manifests, unchanged; `torch-distributed` among them)
are applied with `kubetrain install --only-runtimes`; then a user's script
(tests/e2e/kubeflow_sdk_session.py) runs with `KUBECONFIG` set to the file the plane wrote and
calls `TrainerClient()` with no argument:

* list_runtimes: the five runtimes, as the SDK reads them (framework label, the trainer's image);
* train(CustomTrainer(func=train_digits, func_args, num_nodes=2, resources_per_node={"cpu": 1},
  env), options=[Name, Labels, RuntimePatch]): the SDK turns the function into `bash -c` with a
  here-document that writes it to a file and runs it with `torchrun`; the local node runs
  `bash` and finds `torchrun` first on PATH (the interpreter's bin directory); the TrainJob's
  runtime patch (the SDK's manager name) reaches the pods;
* wait_for_job_status (with a callback: Created, Running, Complete), get_job, list_jobs (all, and
  by runtime), get_job_logs (node-0 by default, step="node-1", follow=True), get_job_events,
  delete_job (the TrainJob and its pods go);
* get_runtime, and get_runtime_packages (a 1-node TrainJob that prints `pip list`).

The training function is real: DDP over gloo on scikit-learn's digits, 2 nodes of 1 process,
each on its own shard; both ranks must end with identical weights and the test accuracy must be
well above chance.

Not covered: `packages_to_install` (the generated script runs `pip install` into the interpreter
the local node runs, i.e. the test's own environment, from a package index), BuiltinTrainer
(torchtune: model downloads and GPUs) and initializers (dataset/model downloads).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml


def _missing(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is None
    except ModuleNotFoundError:  # the parent package is missing
        return True


NEEDED = ("kubeflow.trainer", "kubeflow.training", "torch", "sklearn")
if any(_missing(m) for m in NEEDED) and os.environ.get("CI") != "true":
    pytest.skip(f"needs {', '.join(NEEDED)} (requirements-e2e.txt)", allow_module_level=True)

import kubeflow.trainer  # noqa: E402, F401  # under CI=true a missing SDK fails here, never skips
import sklearn  # noqa: E402, F401
import torch  # noqa: E402, F401

from tests.e2e.sdk_plane import MARKER_ENV, REPO, KubetrainUp, running_plane  # noqa: E402
from tests.trainer_runtimes import RUNTIMES  # noqa: E402

SESSION = Path(__file__).with_name("kubeflow_sdk_session.py")
NAME = "sdk-digits"


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubetrainUp]:
    with running_plane(tmp_path_factory.mktemp("kubetrain-up")) as plane:
        applied = subprocess.run(
            [
                sys.executable,
                "-m",
                "kubetrain.cli.main",
                "install",
                "--only-runtimes",  # upstream's default runtimes, as `kubetrain install` ships them
                "--kubeconfig",
                str(plane.kubeconfig),
            ],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert applied.returncode == 0, applied.stderr
        assert "clustertrainingruntime/torch-distributed applied" in applied.stderr, applied.stderr
        yield plane


@pytest.fixture(scope="module")
def session(up: KubetrainUp) -> dict[str, Any]:
    """The user's script, run once; its JSON report."""
    env = {**os.environ, "KUBECONFIG": str(up.kubeconfig)}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    ran = subprocess.run(
        [sys.executable, str(SESSION), "torch-distributed", NAME, f"{MARKER_ENV}={up.marker}"],
        cwd=up.workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=420,
    )
    if ran.returncode != 0:
        pytest.fail(
            f"the SDK session failed ({ran.returncode}):\n{ran.stderr[-6000:]}\n"
            f"kubetrain up:\n{up.output()[-4000:]}"
        )
    report: dict[str, Any] = json.loads(ran.stdout.strip().splitlines()[-1])
    report["stderr"] = ran.stderr
    return report


def test_trainer_client_finds_the_control_plane(session: dict[str, Any]) -> None:
    """TrainerClient() reads Trainer's public ConfigMap and warns when it is missing."""
    assert "Trainer control-plane version info is not available" not in session["stderr"]
    assert "Traceback" not in session["stderr"], session["stderr"]


def trainer_image(runtime: dict[str, Any]) -> str:
    """The `node` container's image of the runtime's trainer step (the SDK's `trainer.image`)."""
    for rjob in runtime["spec"]["template"]["spec"]["replicatedJobs"]:
        labels = rjob["template"].get("metadata", {}).get("labels", {})
        if labels.get("trainer.kubeflow.org/trainjob-ancestor-step") == "trainer":
            [node] = [
                c for c in rjob["template"]["spec"]["template"]["spec"]["containers"] if c["name"] == "node"
            ]
            return str(node["image"])
    raise AssertionError(f"{runtime['metadata']['name']} has no trainer step")


def test_list_runtimes_reads_upstreams_default_runtimes(session: dict[str, Any]) -> None:
    """What `kubetrain install --only-runtimes` applied, as the SDK reads it."""
    installed = [yaml.safe_load(f.read_text()) for f in sorted(RUNTIMES.glob("*_distributed.yaml"))]
    expected = [
        {
            "name": r["metadata"]["name"],
            "kind": "ClusterTrainingRuntime",
            "framework": r["metadata"]["labels"]["trainer.kubeflow.org/framework"],
            "image": trainer_image(r),
        }
        for r in installed
    ]
    assert len(expected) == 5
    assert sorted(session["runtimes"], key=lambda r: r["name"]) == sorted(expected, key=lambda r: r["name"])


def test_get_runtime(session: dict[str, Any]) -> None:
    assert session["get_runtime"] == {
        "name": "torch-distributed",
        "kind": "ClusterTrainingRuntime",
        "num_nodes": 1,
    }


def test_train_runs_the_function_on_two_torch_nodes_to_complete(session: dict[str, Any]) -> None:
    assert session["train"] == NAME
    assert session["status_after_train"] in {"Created", "Running"}
    seen = session["seen"]
    assert seen[-1] == "Complete" and set(seen) <= {"Created", "Running", "Complete"}, seen
    done = session["done"]
    assert done["status"] == "Complete" and done["num_nodes"] == 2
    steps = done["steps"]
    assert [(s["name"], s["status"], s["device"], s["count"]) for s in steps] == [
        ("node-0", "Succeeded", "cpu", "1"),
        ("node-1", "Succeeded", "cpu", "1"),
    ]
    assert [s["pod"].rsplit("-", 1)[0] for s in steps] == [f"{NAME}-node-0-0", f"{NAME}-node-0-1"]
    print(f"kubeflow SDK: train -> Complete, 2 torch nodes, {session['seconds']} s")


def test_get_job_and_list_jobs(session: dict[str, Any]) -> None:
    got = session["get_job"]
    assert (got["name"], got["status"], got["runtime"]) == (NAME, "Complete", "torch-distributed")
    assert got["steps"] == session["done"]["steps"]
    assert session["listed"] == [NAME] and session["listed_by_runtime"] == [NAME]


def test_get_job_logs_hold_the_training_functions_output(session: dict[str, Any]) -> None:
    node0, node1 = session["logs"], session["logs_node_1"]
    assert f"digits rank 0 of 2 via {NAME}-node-0-0.{NAME}" in node0
    assert "digits rank 0: epoch 8/8" in "\n".join(node0)
    assert f"digits rank 1 of 2 via {NAME}-node-0-0.{NAME}" in node1
    assert not any("rank 1" in line for line in node0)
    for rank, lines in ((0, node0), (1, node1)):
        final = next(line for line in lines if line.startswith(f"digits rank {rank}: test_accuracy="))
        accuracy = float(final.split("test_accuracy=")[1].split()[0])
        assert accuracy > 0.8 and final.endswith("identical_weights=True"), final
    assert session["logs_followed"] == node0  # watch-streamed pods/log?follow=true of a finished pod


def test_what_the_sdk_built_reaches_the_pods(up: KubetrainUp, session: dict[str, Any]) -> None:
    """The TrainJob the SDK sent, as stored (the `bash -c` + torchrun command it generated, the
    quantities it sends as floats), and its options applied by the operator to every node pod:
    Labels on the TrainJob, the RuntimePatch's pod label, the trainer's env."""
    stored = session["stored"]
    assert stored["labels"] == {"team": "sdk-e2e"}
    trainer = stored["trainer"]
    command = trainer["command"]
    assert command[:2] == ["bash", "-c"] and 'torchrun "kubeflow_sdk_session.py"' in command[2]
    assert "def train_digits(epochs: int = 8, lr: float = 0.05) -> None:" in command[2]
    assert "train_digits(**{'epochs': 8})" in command[2]
    assert trainer["numNodes"] == 2
    assert trainer["resourcesPerNode"] == {"limits": {"cpu": 1}, "requests": {"cpu": 1}}  # sent as 1.0
    assert [p["manager"] for p in stored["runtimePatches"]] == ["trainer.kubeflow.org/kubeflow-sdk"]

    pods = stored["pods"]
    assert len(pods) == 2, pods
    for pod in pods.values():
        assert pod["labels"]["sdk-e2e/patched"] == "true"
        env = pod["env"]
        assert env["DIGITS_FROM"] == "sdk" and env[MARKER_ENV] == up.marker
        assert (env["PET_NNODES"], env["PET_NPROC_PER_NODE"], env["PET_MASTER_PORT"]) == ("2", "1", "29500")
        assert env["PET_MASTER_ADDR"] == f"{NAME}-node-0-0.{NAME}"
        assert pod["resources"] == {"cpu": "1"}


def test_get_job_events(session: dict[str, Any]) -> None:
    events = session["events"]
    assert {(e["kind"], e["reason"]) for e in events} >= {("Pod", "Scheduled"), ("Pod", "Started")}
    assert {e["name"] for e in events if e["kind"] == "Pod"} == {s["pod"] for s in session["done"]["steps"]}
    assert ("JobSet", NAME, "AllJobsCompleted") in {(e["kind"], e["name"], e["reason"]) for e in events}


def test_delete_job_removes_the_trainjob(session: dict[str, Any]) -> None:
    assert session["listed_after_delete"] == []


def test_get_runtime_packages_prints_the_local_environment(session: dict[str, Any]) -> None:
    """A 1-node TrainJob of the runtime runs the SDK's `print_packages` (Python's version, `pip
    list`): locally that is the interpreter the node runs, the one kubetrain runs in."""
    printed = session["runtime_packages"]
    assert printed[0] == f"Python: {sys.version}".splitlines()[0], printed[:3]
    packages = {line.split()[0].lower().replace("_", "-") for line in printed[1:] if line.strip()}
    assert {"torch", "scikit-learn", "kubetrain", "kubeflow"} <= packages, printed
    assert session["listed_at_end"] == []  # it deleted its TrainJob
