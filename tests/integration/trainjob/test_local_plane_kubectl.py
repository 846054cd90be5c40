"""`kubetrain up`'s plane serves Trainer v2's kinds to kubectl: upstream's shipped runtime applies
unchanged, a TrainJob naming it is created and gets its JobSet, one naming
a missing runtime is refused with upstream's webhook name and message."""

from __future__ import annotations

from pathlib import Path

import yaml

from kubetrain.cli.plane import LocalPlane
from tests.integration.jobset.test_local_plane import kubectl
from tests.polling import wait_for
from tests.trainer_runtimes import RUNTIMES

RUNTIME = RUNTIMES / "torch_distributed.yaml"


def trainjob(name: str, runtime: str) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"runtimeRef": {"name": runtime}, "trainer": {"numNodes": 2}},
        }
    )


async def test_kubectl_applies_a_shipped_runtime_and_trainjobs(tmp_path: Path) -> None:
    plane = LocalPlane(working_dir=tmp_path)
    await plane.start()
    try:
        kubeconfig = plane.write_kubeconfig(tmp_path / "kubeconfig")
        code, out = await kubectl(kubeconfig, "apply", "-f", str(RUNTIME))
        assert code == 0, out
        assert "clustertrainingruntime.trainer.kubeflow.org/torch-distributed created" in out
        code, out = await kubectl(kubeconfig, "get", "clustertrainingruntimes", "-o", "name")
        assert (code, out.strip()) == (0, "clustertrainingruntime.trainer.kubeflow.org/torch-distributed"), (
            out
        )

        good, bad = tmp_path / "good.yaml", tmp_path / "bad.yaml"
        good.write_text(trainjob("mnist", "torch-distributed"), encoding="utf-8")
        bad.write_text(trainjob("orphan", "no-such-runtime"), encoding="utf-8")
        code, out = await kubectl(kubeconfig, "apply", "-f", str(good))
        assert code == 0 and "trainjob.trainer.kubeflow.org/mnist created" in out, out
        code, out = await kubectl(kubeconfig, "apply", "-f", str(bad))
        assert code != 0
        assert 'admission webhook "validator.trainjob.trainer.kubeflow.org" denied the request: ' in out, out
        assert (
            'clustertrainingruntimes.trainer.kubeflow.org "no-such-runtime" not found: specified '
            "clusterTrainingRuntime must be created before the TrainJob is created"
        ) in out, out

        async def jobset() -> str:  # the accepted TrainJob runs: the operator builds its JobSet
            code, out = await kubectl(
                kubeconfig, "get", "jobsets", "-o", "jsonpath={.items[*].metadata.ownerReferences[0].name}"
            )
            return out if code == 0 and out else ""

        assert await wait_for(jobset, 30, "the TrainJob's JobSet") == "mnist"
    finally:
        await plane.stop()
