"""How long one `plan()` call takes for big jobs (benchmarks print figures, they never assert).

    PYTHONPATH=. python benchmarks/plan_bench.py [--runs N]

For PyTorchJobs of 1, 100 and 1,000 replicas (1 Master + N-1 Workers) it times two plans:
`create` (nothing exists yet: every pod and service is built) and `steady` (every pod Running,
every service present, status up to date: the plan must be empty). Prints the median of N runs.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time
from datetime import UTC, datetime
from typing import Any

from kubetrain.controller.config import ControllerConfig
from kubetrain.controller.plan import CreateObject, Observed
from kubetrain.kinds.registry import plan

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
CONFIG = ControllerConfig()


def make_job(replicas: int) -> dict[str, Any]:
    def spec(count: int) -> dict[str, Any]:
        container = {
            "name": "pytorch",
            "image": "pytorch/pytorch:2.3.0",
            "command": ["torchrun", "train.py"],
            "env": [{"name": "EPOCHS", "value": "10"}],
            "resources": {"requests": {"cpu": "4", "memory": "16Gi"}, "limits": {"nvidia.com/gpu": "1"}},
            "volumeMounts": [{"name": "data", "mountPath": "/data"}],
        }
        return {
            "replicas": count,
            "template": {
                "metadata": {"labels": {"team": "ml"}},
                "spec": {"containers": [container], "volumes": [{"name": "data", "emptyDir": {}}]},
            },
        }

    specs = {"Master": spec(1)}
    if replicas > 1:
        specs["Worker"] = spec(replicas - 1)
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "bench", "namespace": "default", "uid": "bench-uid"},
        "spec": {"pytorchReplicaSpecs": specs},
    }


def steady_state(job: dict[str, Any]) -> tuple[dict[str, Any], Observed]:
    """The job after its creates landed, every pod Running, and the status written."""
    first = plan(job, Observed(), NOW, CONFIG)
    pods, services = [], []
    for i, action in enumerate(first.actions):
        assert isinstance(action, CreateObject)
        obj = copy.deepcopy(action.obj)
        obj["metadata"]["uid"] = f"uid-{i}"
        if obj["kind"] == "Pod":
            obj["status"] = {
                "phase": "Running",
                "containerStatuses": [{"name": "pytorch", "restartCount": 0, "state": {"running": {}}}],
            }
            pods.append(obj)
        else:
            services.append(obj)
    observed = Observed(pods=pods, services=services)
    job = {**job, "status": first.status}
    for _ in range(2):
        result = plan(job, observed, NOW, CONFIG)
        if result.status is not None:
            job = {**job, "status": result.status}
    assert plan(job, observed, NOW, CONFIG).is_empty
    return job, observed


def median_ms(fn: Any, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    print(f"{'replicas':>8}  {'create (ms)':>12}  {'steady (ms)':>12}   median of {args.runs} runs")
    for replicas in (1, 100, 1000):
        job = make_job(replicas)
        create_ms = median_ms(lambda job=job: plan(job, Observed(), NOW, CONFIG), args.runs)
        steady_job, observed = steady_state(job)
        steady_ms = median_ms(lambda j=steady_job, o=observed: plan(j, o, NOW, CONFIG), args.runs)
        print(f"{replicas:>8}  {create_ms:>12.2f}  {steady_ms:>12.2f}")


if __name__ == "__main__":
    main()
