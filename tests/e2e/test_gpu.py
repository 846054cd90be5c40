"""A real CUDA job on this machine's GPU through `kubetrain run` (skipped without one, in CI too:
CI machines have no GPU, so this test cannot be made to run there).

The job asks for one ``nvidia.com/gpu``; the node gives it one device of the discovered
inventory as CUDA_VISIBLE_DEVICES, and the process computes on it.
"""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path

import pytest

from kubetrain.embedded.node.gpus import discover_gpus
from tests.e2e.e2e_helpers import run_job

JOB = """
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: cuda-check
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: Never
      template:
        spec:
          containers:
            - name: pytorch
              image: pytorch/pytorch:latest
              resources:
                limits:
                  nvidia.com/gpu: 1
              command:
                - python
                - -c
                - |
                  import os, torch
                  x = torch.arange(1000, device="cuda", dtype=torch.float32)
                  print("cuda devices", torch.cuda.device_count(), "visible",
                        os.environ["CUDA_VISIBLE_DEVICES"], "sum", int(x.sum().item()))
"""


def test_a_cuda_job_computes_on_its_one_gpu(tmp_path: Path) -> None:
    devices = discover_gpus()
    if not devices:
        pytest.skip("no NVIDIA GPU on this machine (nvidia-smi, /proc/driver/nvidia, $KUBETRAIN_GPUS)")
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch not installed")
    import torch

    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA here")
    job = tmp_path / "job.yaml"
    job.write_text(textwrap.dedent(JOB))
    run = run_job(job)
    assert run.returncode == 0, run.describe()
    found = run.one(r"cuda devices (?P<n>\d+) visible (?P<id>\S+) sum (?P<sum>\d+)", "master-0")
    assert found["n"] == "1" and found["id"] in devices, run.describe()
    assert found["sum"] == str(sum(range(1000))), run.describe()
