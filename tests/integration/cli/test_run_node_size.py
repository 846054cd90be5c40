"""`kubetrain run --node-cpu/--node-overcommit/--gpus`: upstream YAML sized for cluster nodes runs.

Upstream's JAXJob e2e test asks 1.2 CPU for each of 2 workers; a node declaring 1 CPU fits them
only with the overcommit factor. ``--gpus 2`` gives a fake inventory, one device per worker.
"""

from __future__ import annotations

from pathlib import Path

from cli_plane import jaxjob, write_job
from test_cli_run import kubetrain

PRINT_DEVICES = "import os; print('devices', os.environ['CUDA_VISIBLE_DEVICES'])"


def test_overcommit_schedules_upstream_cpu_requests_on_a_small_node(tmp_path: Path) -> None:
    job = jaxjob("jax-cpu", "print('ran')")
    job["spec"]["jaxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["resources"] = {
        "requests": {"cpu": "1.2"}
    }
    result = kubetrain(
        "run", "--node-cpu", "1", "--node-overcommit", "3", "--timeout", "60", str(write_job(tmp_path, job))
    )
    assert result.returncode == 0, result.stderr
    assert {"worker-0 | ran", "worker-1 | ran"} <= set(result.stdout.splitlines())


def test_each_gpu_worker_gets_its_own_device_of_the_fake_inventory(tmp_path: Path) -> None:
    job = jaxjob("jax-gpu", PRINT_DEVICES)
    job["spec"]["jaxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["resources"] = {
        "limits": {"nvidia.com/gpu": 1}
    }
    result = kubetrain("run", "--gpus", "2", "--timeout", "60", str(write_job(tmp_path, job)))
    assert result.returncode == 0, result.stderr
    seen = sorted(line.split()[-1] for line in result.stdout.splitlines() if " | devices " in line)
    assert seen == ["0", "1"], result.stdout
