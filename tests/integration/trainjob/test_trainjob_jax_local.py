"""A TrainJob on upstream's jax-distributed ClusterTrainingRuntime runs for real on the local plane
of `kubetrain up`: the operator builds its JobSet with the JAX plugin's env, the embedded JobSet
controller its Job of 2 indexed pods, `jax.distributed.initialize` joins both processes at
`<trainjob>-node-0-0.<trainjob>:29500`, training ends with identical weights, and the TrainJob ends
Complete with its jobsStatus."""

from __future__ import annotations

import json
from pathlib import Path

from kubetrain.cli.plane import LocalPlane
from tests.integration.jobset.test_local_plane import kubectl
from tests.polling import wait_for

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "local" / "trainjob-jax"


async def test_example_jax_trainjob_completes_under_the_local_plane(tmp_path: Path) -> None:
    plane = LocalPlane(working_dir=EXAMPLE)
    await plane.start()
    try:
        kubeconfig = plane.write_kubeconfig(tmp_path / "kubeconfig")
        code, out = await kubectl(kubeconfig, "apply", "-f", str(EXAMPLE / "trainjob.yaml"))
        assert "clustertrainingruntime.trainer.kubeflow.org/jax-distributed created" in out, out
        assert code == 0 and "trainjob.trainer.kubeflow.org/trainjob-jax created" in out, out

        async def finished() -> dict:
            code, out = await kubectl(kubeconfig, "get", "trainjob", "trainjob-jax", "-o", "json")
            if code != 0:
                return {}
            status = json.loads(out).get("status") or {}
            types = {c["type"] for c in status.get("conditions") or [] if c.get("status") == "True"}
            return status if types & {"Complete", "Failed"} else {}

        status = await wait_for(finished, 240, "the TrainJob to finish", interval=1.0)
        code, logs = await kubectl(
            kubeconfig, "logs", "-l", "jobset.sigs.k8s.io/jobset-name=trainjob-jax", "--tail=-1"
        )
        complete = [c for c in status["conditions"] if c["type"] == "Complete"]
        assert complete and complete[0]["status"] == "True", (status, logs)
        assert complete[0]["reason"] == "AllJobsCompleted", status
        assert status["jobsStatus"][0]["name"] == "node" and status["jobsStatus"][0]["succeeded"] == 1, status

        code, out = await kubectl(kubeconfig, "get", "jobset", "trainjob-jax", "-o", "json")
        assert code == 0, out
        jobset = json.loads(out)
        owner = jobset["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["name"], owner["controller"]) == ("TrainJob", "trainjob-jax", True)
        node = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]
        assert (node["parallelism"], node["completions"]) == (2, 2)
        container = node["template"]["spec"]["containers"][0]
        env = {e["name"]: e.get("value") for e in container["env"]}
        assert env["JAX_NUM_PROCESSES"] == "2", env
        assert env["JAX_COORDINATOR_ADDRESS"] == "trainjob-jax-node-0-0.trainjob-jax:29500", env
        assert [p["containerPort"] for p in container["ports"]] == [29500], container
        assert logs.count("identical=True") == 2, logs
        assert "process 1/2" in logs and "process 0/2" in logs, logs
    finally:
        await plane.stop()
