"""Kueue's flow for a TrainJob, driven with kubectl against any plane: the TrainJob is created
suspended, a runtime patch (manager `kueue.x-k8s.io/manager`) adds a node selector, a toleration
and a pod label while it waits, then it is resumed. Upstream re-applies the JobSet while suspended,
so the pods must start with what the patch placed; the TrainJob must Complete.

Shared by the local plane's test and the real control plane's (with upstream's JobSet controller).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from tests.integration.jobset.test_local_plane import kubectl
from tests.polling import wait_for

NAME = "tj-kueue"
RUNTIME_AND_TRAINJOB = f"""
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainingRuntime
metadata: {{name: plain, namespace: default}}
spec:
  mlPolicy: {{numNodes: 1}}
  template:
    spec:
      replicatedJobs:
      - name: node
        template:
          metadata: {{labels: {{trainer.kubeflow.org/trainjob-ancestor-step: trainer}}}}
          spec:
            template:
              spec:
                containers:
                - {{name: node, image: python:3.11, command: [python, -c, "print('placed as admitted')"]}}
---
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {{name: {NAME}, namespace: default}}
spec:
  suspend: true
  runtimeRef: {{apiGroup: trainer.kubeflow.org, kind: TrainingRuntime, name: plain}}
  trainer: {{numNodes: 2}}
"""


def kueue_patch(node: str) -> dict:
    pod_spec = {
        "nodeSelector": {"kubernetes.io/hostname": node},
        "tolerations": [{"key": "example.com/reserved", "operator": "Exists", "effect": "NoSchedule"}],
    }
    pod_template = {"metadata": {"labels": {"kueue.x-k8s.io/podset": "node"}}, "spec": pod_spec}
    return {
        "manager": "kueue.x-k8s.io/manager",
        "trainingRuntimeSpec": {
            "template": {
                "spec": {
                    "replicatedJobs": [{"name": "node", "template": {"spec": {"template": pod_template}}}]
                }
            }
        },
    }


async def _json(kubeconfig: Path, *args: str) -> dict:
    code, out = await kubectl(kubeconfig, "get", *args, "-o", "json")
    return json.loads(out) if code == 0 else {}


async def _story(kubeconfig: Path) -> str:
    """What a reader of a timed-out run needs: the objects and the events."""
    _, objects = await kubectl(kubeconfig, "get", "trainjob,jobset,jobs,pods", "-o", "yaml")
    _, events = await kubectl(kubeconfig, "get", "events", "--sort-by=.lastTimestamp")
    return f"{objects[-6000:]}\n{events[-3000:]}"


async def run_kueue_flow(kubeconfig: Path, workdir: Path, logs: Callable[[], str] = str) -> None:
    manifest = workdir / "kueue-flow.yaml"
    manifest.write_text(RUNTIME_AND_TRAINJOB, encoding="utf-8")
    code, out = await kubectl(kubeconfig, "apply", "-f", str(manifest))
    assert code == 0, out
    try:
        jobset = await wait_for(lambda: _json(kubeconfig, "jobset", NAME), 60, "the suspended JobSet")
        assert jobset["spec"]["suspend"] is True
        nodes = (await _json(kubeconfig, "nodes"))["items"]
        node = nodes[0]["metadata"]["labels"]["kubernetes.io/hostname"]
        patch = json.dumps({"spec": {"runtimePatches": [kueue_patch(node)], "suspend": False}})
        code, out = await kubectl(kubeconfig, "patch", "trainjob", NAME, "--type", "merge", "-p", patch)
        assert code == 0, out

        async def complete() -> dict:
            job = await _json(kubeconfig, "trainjob", NAME)
            conditions = (job.get("status") or {}).get("conditions") or []
            done = any(c["type"] in ("Complete", "Failed") and c["status"] == "True" for c in conditions)
            return job if done else {}

        try:
            job = await wait_for(complete, 180, "the resumed TrainJob to finish", interval=0.5)
        except AssertionError as err:
            raise AssertionError(f"{err}\n{await _story(kubeconfig)}\n{logs()}") from None
        reasons = [c["reason"] for c in job["status"]["conditions"] if c["status"] == "True"]
        assert "AllJobsCompleted" in reasons, job["status"]
        pods = (await _json(kubeconfig, "pods", "-l", f"jobset.sigs.k8s.io/jobset-name={NAME}"))["items"]
        assert len(pods) == 2, pods
        for pod in pods:
            assert pod["spec"]["nodeSelector"] == {"kubernetes.io/hostname": node}
            assert {"key": "example.com/reserved", "operator": "Exists", "effect": "NoSchedule"} in pod[
                "spec"
            ]["tolerations"]
            assert pod["metadata"]["labels"]["kueue.x-k8s.io/podset"] == "node"
    finally:
        await kubectl(kubeconfig, "delete", "-f", str(manifest), "--wait=false")
