"""A TrainJob on upstream's xgboost-distributed ClusterTrainingRuntime runs for real on the local
plane of `kubetrain up`: the operator builds its JobSet with the XGBoost plugin's DMLC_* env, the
embedded JobSet controller its Job of 2 indexed pods, task 0's RabitTracker at
`<trainjob>-node-0-0.<trainjob>:29500` joins both, both ranks end with the same model, and the
TrainJob ends Complete with its jobsStatus."""

from __future__ import annotations

import json
from pathlib import Path

from kubetrain.cli.plane import LocalPlane
from tests.integration.jobset.test_local_plane import kubectl
from tests.polling import wait_for

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "local" / "trainjob-xgboost"


async def test_example_xgboost_trainjob_completes_under_the_local_plane(tmp_path: Path) -> None:
    plane = LocalPlane(working_dir=EXAMPLE)
    await plane.start()
    try:
        kubeconfig = plane.write_kubeconfig(tmp_path / "kubeconfig")
        code, out = await kubectl(kubeconfig, "apply", "-f", str(EXAMPLE / "trainjob.yaml"))
        assert "clustertrainingruntime.trainer.kubeflow.org/xgboost-distributed created" in out, out
        assert code == 0 and "trainjob.trainer.kubeflow.org/trainjob-xgboost created" in out, out

        async def finished() -> dict:
            code, out = await kubectl(kubeconfig, "get", "trainjob", "trainjob-xgboost", "-o", "json")
            if code != 0:
                return {}
            status = json.loads(out).get("status") or {}
            types = {c["type"] for c in status.get("conditions") or [] if c.get("status") == "True"}
            return status if types & {"Complete", "Failed"} else {}

        status = await wait_for(finished, 240, "the TrainJob to finish", interval=1.0)
        code, logs = await kubectl(
            kubeconfig, "logs", "-l", "jobset.sigs.k8s.io/jobset-name=trainjob-xgboost", "--tail=-1"
        )
        complete = [c for c in status["conditions"] if c["type"] == "Complete"]
        assert complete and complete[0]["status"] == "True", (status, logs)
        assert complete[0]["reason"] == "AllJobsCompleted", status
        assert status["jobsStatus"][0]["name"] == "node" and status["jobsStatus"][0]["succeeded"] == 1, status

        code, out = await kubectl(kubeconfig, "get", "jobset", "trainjob-xgboost", "-o", "json")
        assert code == 0, out
        jobset = json.loads(out)
        owner = jobset["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["name"], owner["controller"]) == ("TrainJob", "trainjob-xgboost", True)
        node = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]
        assert (node["parallelism"], node["completions"]) == (2, 2)
        container = node["template"]["spec"]["containers"][0]
        env = {e["name"]: e.get("value") for e in container["env"]}
        assert env["DMLC_NUM_WORKER"] == "2" and env["DMLC_TRACKER_PORT"] == "29500", env
        assert env["DMLC_TRACKER_URI"] == "trainjob-xgboost-node-0-0.trainjob-xgboost", env
        assert [p["containerPort"] for p in container["ports"]] == [29500], container
        assert logs.count("identical_to_rank0=True") == 2, logs
        assert "test accuracy" in logs, logs
    finally:
        await plane.stop()
