"""Every example of `examples/local/` on the cluster, as a user would submit it there.

The same YAML that `kubetrain run` trains locally is created unchanged on the cluster; on a real
control plane its pods are bound by the real kube-scheduler to the tier's `kubetrain node`, batch
Jobs (MPIJob v2beta1's launcher) are run by the real Job controller and children are deleted by
the real garbage collector. The one edit: each container's `workingDir` is set to the example's
copy on this machine, since an example's program is a file beside its YAML (on a real node it
would be in the image). Real MXNet (`job-mxnet.yaml`) needs its interpreter mapped by the node's
image map, so it runs when KUBETRAIN_E2E_MXNET_PYTHON is set (always in CI); real ChainerMN
(`job-chainermn.yaml`, `chainer-workersets/`) likewise with KUBETRAIN_E2E_CHAINER_PYTHON, and real Horovod
(`horovod-pytorch/` and `horovod-v1/`, MPIJob v2beta1 and v1) with KUBETRAIN_E2E_HOROVOD_PYTHON.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubetrain.runtime.transport import KubeClient
from tests.e2e.cluster import tier
from tests.e2e.cluster.conftest import ClusterEnv
from tests.e2e.e2e_helpers import require_modules
from tests.integration.operator_process.jobs import conditions, wait_for
from tests.integration.operator_process.procs import REPO
from tests.podlogs import job_logs

assert tier.KUBECONFIG  # importing tier skips this module without a cluster

JsonDict = dict[str, Any]
EXAMPLES = REPO / "examples" / "local"
EXPECTED_FAILED = {"backoff-exceeded"}
"""Examples about a failure: their job must end Failed."""
EXAMPLE_TIMEOUT = 300.0
PROOF = {
    "pytorch-ddp-digits/job.yaml": r"test accuracy [\d.]+, world size 3",
    "tensorflow-mwms/job.yaml": r"identical_on_all_workers=True final loss",
    "tensorflow-ps-worker-chief/job.yaml": r"restored \S+, test accuracy [\d.]+",
    "xgboost-iris/job.yaml": r"test accuracy [\d.]+",
    "jax-multiprocess/job.yaml": r"psum over processes = 3\.0",
    "paddle-collective/job.yaml": r"all_reduce\(rank \+ 1\) = 3\.0",
    "mxnet-ps/job.yaml": r"all workers done \(all ok: True\), servers stopped",
    "mxnet-ps/job-mxnet.yaml": r"KVStore dist_sync",
    "restart-onfailure/job.yaml": r"restarted in the same pod \(same uid\) after a failure: succeeding",
    "exitcode-retryable/job.yaml": r"new pod: True",
    "mpi-v2beta1-allreduce/job.yaml": r"expected 10, got 10: OK",
    "mpi-v2beta1-allreduce/job-launcher-as-worker.yaml": r"as-worker-launcher': 2, .*got 10: OK",
    "mpi-mpich-allreduce/job.yaml": r"4 ranks over MPICH on 2 hosts, expected 10, got 10: OK",
    "mpi-v1-allreduce/job.yaml": r"expected 10, got 10: OK",
    "mpi-v1alpha2-statefulset/job.yaml": r"'mpi-v1alpha2-worker-1': 2\}, expected 10, got 10: OK",
    "mpi-pytorch/job.yaml": r"4 ranks, weights identical on all ranks: True",
    "chainer-mpi/job.yaml": r"2 ranks, identical weights: True",
    "chainer-mpi/job-chainermn.yaml": r"2 ranks, identical weights: True",
    "chainer-workersets/job.yaml": r"3 ranks, identical weights: True",
    "caffe2-workers/job.yaml": r"identical on all 2 shards: True",
    "horovod-pytorch/job.yaml": r"4 ranks, identical weights: True",
    "horovod-v1/job.yaml": r"4 ranks, identical weights: True",
}
"""A line that shows the example really trained, read through the API server from the kubelet
API (`kubectl logs`); backoff-exceeded has none (its pods may be gone, its status says it all)."""
FRAMEWORKS = {
    "pytorch-ddp-digits": ("torch", "sklearn"),
    "tensorflow-mwms": ("tensorflow", "sklearn"),
    "tensorflow-ps-worker-chief": ("tensorflow", "sklearn"),
    "xgboost-iris": ("xgboost", "sklearn"),
    "jax-multiprocess": ("jax",),
    "paddle-collective": ("paddle",),
    "mpi-pytorch": ("torch", "mpi4py", "sklearn"),
    "mpi-v1-allreduce": ("mpi4py",),
    "mpi-v1alpha2-statefulset": ("mpi4py",),
    "mpi-v2beta1-allreduce": ("mpi4py",),
    "chainer-mpi": ("mpi4py",),
    "mxnet-ps": ("sklearn",),
}

OWN_INTERPRETER = [
    ("mxnet-ps/job-mxnet.yaml", "KUBETRAIN_E2E_MXNET_PYTHON", "real MXNet"),
    ("chainer-mpi/job-chainermn.yaml", "KUBETRAIN_E2E_CHAINER_PYTHON", "real ChainerMN"),
    ("chainer-workersets/job.yaml", "KUBETRAIN_E2E_CHAINER_PYTHON", "real ChainerMN"),
    ("horovod-*/*", "KUBETRAIN_E2E_HOROVOD_PYTHON", "real Horovod"),
]
"""Examples (`<example>/<job file>` patterns) whose images the node maps to an interpreter of their
own (conftest's image map)."""


def _example_files() -> list[Path]:
    """The kubeflow jobs (job.yaml, job-*.yaml); jobset-ping/jobset.yaml is a JobSet, which a bare
    control plane does not serve (its tests run the real JobSet controller themselves)."""
    return sorted({*EXAMPLES.glob("*/job.yaml"), *EXAMPLES.glob("*/job-*.yaml")})


def _pod_templates(node: Any) -> list[JsonDict]:
    """Every pod template under a job's spec, whatever the kind's layout (replica specs, master
    and worker sets, a single replicaSpecs)."""
    if isinstance(node, list):
        return [t for item in node for t in _pod_templates(item)]
    if not isinstance(node, dict):
        return []
    template = node.get("template")
    if isinstance(template, dict) and "containers" in (template.get("spec") or {}):
        return [template]
    return [t for value in node.values() for t in _pod_templates(value)]


def _with_working_dir(obj: JsonDict, directory: Path) -> JsonDict:
    """Point every container of every pod template at `directory`, where the example's files are."""
    for template in _pod_templates(obj["spec"]):
        pod = template["spec"]
        for container in [*pod.get("initContainers", []), *pod.get("containers", [])]:
            container["workingDir"] = str(directory)
    return obj


def _finished(obj: JsonDict) -> str | None:
    """Succeeded or Failed once the job is; the historical kinds copy their batch Job's `Complete`."""
    state = conditions(obj)
    if state.get("Failed") == "True":
        return "Failed"
    return "Succeeded" if "True" in (state.get("Succeeded"), state.get("Complete")) else None


@pytest.mark.parametrize("path", _example_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
async def test_example_runs_on_the_cluster(
    path: Path, kube: KubeClient, cluster_env: ClusterEnv, tmp_path: Path
) -> None:
    example = path.parent.name
    require_modules(*FRAMEWORKS.get(example, ()))
    for pattern, variable, framework in OWN_INTERPRETER:
        if fnmatch.fnmatchcase(f"{example}/{path.name}", pattern) and not os.environ.get(variable):
            if os.environ.get("CI") == "true":
                pytest.fail(f"CI=true: {variable} is not set")
            pytest.skip(f"set {variable} to run {framework}")
    copy = tmp_path / example
    shutil.copytree(path.parent, copy, ignore=shutil.ignore_patterns("__pycache__", ".model", "log"))
    obj = _with_working_dir(yaml.safe_load((copy / path.name).read_text()), copy)
    obj["metadata"]["namespace"] = cluster_env.namespace
    api_version = obj["apiVersion"]
    name = obj["metadata"]["name"]

    await kube.create(obj)

    async def outcome() -> str | None:
        return _finished(await kube.get(api_version, obj["kind"], cluster_env.namespace, name))

    result = await wait_for(outcome, EXAMPLE_TIMEOUT, f"{obj['kind']} {name} finished")
    expected = "Failed" if example in EXPECTED_FAILED else "Succeeded"
    final = await kube.get(api_version, obj["kind"], cluster_env.namespace, name)
    flags = cluster_env.connection_flags()
    if result != expected:
        logs = await job_logs(kube, cluster_env.kubeconfig, cluster_env.namespace, name, flags)
        raise AssertionError(
            f"{result}, not {expected}:\n{yaml.safe_dump(final.get('status'))}\n{logs[-6000:]}"
        )
    proof = PROOF.get(f"{example}/{path.name}")
    if proof is not None:
        logs = await job_logs(kube, cluster_env.kubeconfig, cluster_env.namespace, name, flags)
        assert re.search(proof, logs), f"no log line matches {proof!r}:\n{logs[-4000:]}"
    await kube.delete(api_version, obj["kind"], cluster_env.namespace, name, propagation_policy="Foreground")
