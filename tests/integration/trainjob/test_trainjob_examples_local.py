"""TrainJobs on upstream's torch-, jax-, xgboost- and deepspeed-distributed ClusterTrainingRuntimes
run for real on the local plane of `kubetrain up`: the operator builds the JobSet with the runtime's
plugin env, the embedded JobSet controller its Jobs; for torch, jax and xgboost one Job of 2 indexed
pods whose processes meet at `<trainjob>-node-0-0.<trainjob>:29500` (torchrun's rendezvous, JAX's
coordinator, task 0's RabitTracker); for deepspeed's mpi policy a `node` pod (sshd) and the
launcher, whose mpirun reads the hostfile ConfigMap the operator made and reaches the node over
ssh with the SSH Secret's keys mounted. Training ends alike on every rank, and the TrainJob ends
Complete with its jobsStatus."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kubetrain.cli.plane import LocalPlane
from tests.integration.jobset.test_local_plane import kubectl
from tests.polling import wait_for

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "local"
EXAMPLE = EXAMPLES / "trainjob-torch"


@dataclass(frozen=True)
class Case:
    runtime: str
    job: str
    env: dict[str, str]
    """What the runtime's plugin must have set on the node container."""
    log_marks: tuple[tuple[str, int], ...]
    """(text, how many times it is logged) once every rank has trained."""
    env_job: str = "node"
    """The replicated job whose `node` container has the plugin's env (MPI's: the launcher)."""
    pods: tuple[tuple[str, int], ...] = (("node", 2),)
    """Each replicated job's parallelism (= completions), in the JobSet's order."""
    port: bool = True
    """Whether the plugin opens containerPort 29500 (MPI's does not: ssh)."""
    children: dict[str, str] = field(default_factory=dict)
    """Other objects the TrainJob controls (kind -> name)."""
    hostfile: str = ""
    """The MPI hostfile ConfigMap's `hostfile`."""


CASES = [
    Case(
        "torch-distributed",
        "trainjob-torch",
        {
            "PET_NNODES": "2",
            "PET_MASTER_ADDR": "trainjob-torch-node-0-0.trainjob-torch",
            "PET_MASTER_PORT": "29500",
        },
        (("identical_on_all_ranks=True", 2),),
    ),
    Case(
        "jax-distributed",
        "trainjob-jax",
        {"JAX_NUM_PROCESSES": "2", "JAX_COORDINATOR_ADDRESS": "trainjob-jax-node-0-0.trainjob-jax:29500"},
        (("identical=True", 2), ("process 0/2", 1), ("process 1/2", 1)),
    ),
    Case(
        "xgboost-distributed",
        "trainjob-xgboost",
        {
            "DMLC_NUM_WORKER": "2",
            "DMLC_TRACKER_PORT": "29500",
            "DMLC_TRACKER_URI": "trainjob-xgboost-node-0-0.trainjob-xgboost",
        },
        (("identical_to_rank0=True", 2), ("test accuracy", 1)),
    ),
    Case(
        "deepspeed-distributed",
        "trainjob-mpi",
        {
            "OMPI_MCA_orte_default_hostfile": "/etc/mpi/hostfile",
            "OMPI_MCA_orte_set_default_slots": "2",
            "OMPI_MCA_plm_rsh_args": "-o ConnectionAttempts=10",
        },
        (("training samples", 4), ("4 ranks, identical weights: True", 1)),
        env_job="launcher",
        pods=(("node", 1), ("launcher", 1)),
        port=False,
        children={"ConfigMap": "trainjob-mpi-mpi-hostfile", "Secret": "trainjob-mpi-mpi-ssh-auth"},
        hostfile=(
            "trainjob-mpi-node-0-0.trainjob-mpi slots=2\ntrainjob-mpi-launcher-0-0.trainjob-mpi slots=2\n"
        ),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.job for c in CASES])
async def test_example_trainjob_completes_under_the_local_plane(tmp_path: Path, case: Case) -> None:
    example = EXAMPLES / case.job
    plane = LocalPlane(working_dir=example)
    await plane.start()
    try:
        kubeconfig = plane.write_kubeconfig(tmp_path / "kubeconfig")
        code, out = await kubectl(kubeconfig, "apply", "-f", str(example / "trainjob.yaml"))
        assert f"clustertrainingruntime.trainer.kubeflow.org/{case.runtime} created" in out, out
        assert code == 0 and f"trainjob.trainer.kubeflow.org/{case.job} created" in out, out

        async def finished() -> dict:
            code, out = await kubectl(kubeconfig, "get", "trainjob", case.job, "-o", "json")
            if code != 0:
                return {}
            status = json.loads(out).get("status") or {}
            types = {c["type"] for c in status.get("conditions") or [] if c.get("status") == "True"}
            return status if types & {"Complete", "Failed"} else {}

        status = await wait_for(finished, 240, "the TrainJob to finish", interval=1.0)
        code, logs = await kubectl(
            kubeconfig, "logs", "-l", f"jobset.sigs.k8s.io/jobset-name={case.job}", "--tail=-1"
        )
        complete = [c for c in status["conditions"] if c["type"] == "Complete"]
        assert complete and complete[0]["status"] == "True", (status, logs)
        assert complete[0]["reason"] == "AllJobsCompleted", status
        done = {s["name"]: s["succeeded"] for s in status["jobsStatus"]}
        assert done[case.env_job] == 1, status

        code, out = await kubectl(kubeconfig, "get", "jobset", case.job, "-o", "json")
        assert code == 0, out
        jobset = json.loads(out)
        owner = jobset["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["name"], owner["controller"]) == ("TrainJob", case.job, True)
        rjobs = {r["name"]: r["template"]["spec"] for r in jobset["spec"]["replicatedJobs"]}
        counts = tuple((name, spec["parallelism"]) for name, spec in rjobs.items())
        assert counts == case.pods and all(s["completions"] == s["parallelism"] for s in rjobs.values())
        container = rjobs[case.env_job]["template"]["spec"]["containers"][0]
        env = {e["name"]: e.get("value") for e in container["env"]}
        assert {name: env.get(name) for name in case.env} == case.env, env
        ports = [p["containerPort"] for p in container.get("ports") or []]
        assert (29500 in ports) is case.port, container
        for kind, name in case.children.items():
            code, out = await kubectl(kubeconfig, "get", kind.lower(), name, "-o", "json")
            assert code == 0, out
            child = json.loads(out)
            owner = child["metadata"]["ownerReferences"][0]
            assert (owner["kind"], owner["name"], owner["controller"]) == ("TrainJob", case.job, True)
            if kind == "ConfigMap":
                assert child["data"] == {"hostfile": case.hostfile}, child
            else:
                assert child["type"] == "kubernetes.io/ssh-auth" and child["immutable"] is True, child
                assert sorted(child["data"]) == ["ssh-privatekey", "ssh-publickey"], child
        for text, times in case.log_marks:
            assert logs.count(text) == times, (text, logs)
        # each child created once: none re-created (say a Secret its label-selected cache missed)
        assert operator_writes(plane) == {("create", "ok"): 1 + len(case.children)}
    finally:
        await plane.stop()


def operator_writes(plane: LocalPlane) -> dict[tuple[str, str], float]:
    """The operator's writes of children by (verb, result), from its `kubetrain_api_writes_total`."""
    assert plane.manager is not None
    return {
        (sample.labels["verb"], sample.labels["result"]): sample.value
        for metric in plane.manager.metrics.api_writes.collect()
        for sample in metric.samples
        if sample.name.endswith("_total")
    }


async def kubetrain(kubeconfig: Path, *args: str, cwd: Path) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "kubetrain.cli.main",
        *args,
        cwd=cwd,
        env={**os.environ, "KUBECONFIG": str(kubeconfig)},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 300)
    return proc.returncode or 0, out.decode()


async def test_kubetrain_apply_of_the_file_runs_the_trainjob_in_its_files_directory(tmp_path: Path) -> None:
    """`kubetrain apply -f` takes the runtime and the TrainJob of one file, and the pods run in the
    file's directory (where train.py is), not in the plane's --workdir."""
    elsewhere = tmp_path / "plane-workdir"
    elsewhere.mkdir()
    plane = LocalPlane(working_dir=elsewhere)
    await plane.start()
    try:
        kubeconfig = plane.write_kubeconfig(tmp_path / "kubeconfig")
        code, out = await kubetrain(kubeconfig, "apply", "-f", str(EXAMPLE / "trainjob.yaml"), cwd=elsewhere)
        assert code == 0, out
        assert "clustertrainingruntime.trainer.kubeflow.org/torch-distributed created" in out, out
        assert "trainjob.trainer.kubeflow.org/trainjob-torch created" in out, out
        code, out = await kubetrain(
            kubeconfig, "wait", "trainjob", "trainjob-torch", "--timeout", "240", cwd=elsewhere
        )
        _, logs = await kubetrain(kubeconfig, "logs", "trainjob", "trainjob-torch", cwd=elsewhere)
        assert code == 0, (out, logs)
        assert "identical_on_all_ranks=True" in logs, logs
        code, out = await kubetrain(kubeconfig, "get", "clustertrainingruntimes", cwd=elsewhere)
        assert code == 0 and "torch-distributed" in out, out
    finally:
        await plane.stop()
