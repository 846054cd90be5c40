"""A user's session with the Kubeflow SDK (`kubeflow` 0.5.x), run by tests/e2e/test_kubeflow_sdk.py.

It runs as its own process, as a user's script does after `export KUBECONFIG=...` (the file
`kubetrain up` wrote): the official `kubernetes` client reads $KUBECONFIG when it is imported, so
`TrainerClient()` with no argument finds the plane only in a process started with it set. It
drives the SDK unchanged and prints one JSON report of what each call answered on its last line
of stdout; the test checks the report.

    python tests/e2e/kubeflow_sdk_session.py RUNTIME NAME MARKER_ENV=MARKER
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import time
from typing import Any

from kubeflow.trainer import CustomTrainer, TrainerClient
from kubeflow.trainer.options import (
    JobSetSpecPatch,
    JobSetTemplatePatch,
    JobSpecPatch,
    JobTemplatePatch,
    Labels,
    Name,
    PodTemplatePatch,
    ReplicatedJobPatch,
    RuntimePatch,
    TrainingRuntimeSpecPatch,
)
from kubernetes import client as k8s


def train_digits(epochs: int = 8, lr: float = 0.05) -> None:
    # The SDK puts this function's source in an unquoted bash here-document and runs it with
    # torchrun: no dollar signs, backslashes or backticks in it.
    import os

    import torch
    import torch.distributed as dist
    from sklearn.datasets import load_digits
    from torch import nn
    from torch.nn.parallel import DistributedDataParallel

    torch.set_num_threads(1)  # two nodes share the machine's cores
    dist.init_process_group("gloo")  # torchrun's MASTER_ADDR/PORT, RANK, WORLD_SIZE from PET_*
    rank, world = dist.get_rank(), dist.get_world_size()
    print(f"digits rank {rank} of {world} via {os.environ['MASTER_ADDR']}", flush=True)

    digits = load_digits()
    x_all = torch.tensor(digits.data / 16.0, dtype=torch.float32)
    y_all = torch.tensor(digits.target, dtype=torch.long)
    perm = torch.randperm(len(x_all), generator=torch.Generator().manual_seed(0))
    test_idx, train_idx = perm[:297], perm[297:]
    x, y = x_all[train_idx[rank::world]], y_all[train_idx[rank::world]]  # each node its shard

    torch.manual_seed(0)
    model = DistributedDataParallel(nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    batch = 32
    steps = min(len(train_idx) // world, len(x)) // batch  # the same on every rank
    for epoch in range(epochs):
        total = 0.0
        for step in range(steps):
            opt.zero_grad()
            loss = loss_fn(model(x[step * batch : (step + 1) * batch]), y[step * batch : (step + 1) * batch])
            loss.backward()
            opt.step()
            total += loss.item()
        mean = torch.tensor([total / steps])
        dist.all_reduce(mean)
        print(f"digits rank {rank}: epoch {epoch + 1}/{epochs} loss={mean.item() / world:.4f}", flush=True)

    with torch.no_grad():
        accuracy = (model(x_all[test_idx]).argmax(1) == y_all[test_idx]).float().mean().item()
    checksum = torch.tensor([sum(p.double().sum().item() for p in model.parameters())], dtype=torch.float64)
    sums = [torch.zeros(1, dtype=torch.float64) for _ in range(world)]
    dist.all_gather(sums, checksum)  # DDP: every rank ends with the same weights
    same = all(torch.equal(s, sums[0]) for s in sums)
    print(f"digits rank {rank}: test_accuracy={accuracy:.3f} identical_weights={same}", flush=True)
    dist.destroy_process_group()


def node_patch(labels: dict[str, str]) -> RuntimePatch:
    """A runtime patch of the `node` replicated job's pod labels, as the SDK's options build it
    (env of the node container is refused there, as upstream's webhook does: it is the trainer's)."""
    pod = PodTemplatePatch(metadata={"labels": labels})
    job = ReplicatedJobPatch(name="node", template=JobTemplatePatch(spec=JobSpecPatch(template=pod)))
    spec = JobSetTemplatePatch(spec=JobSetSpecPatch(replicated_jobs=[job]))
    return RuntimePatch(training_runtime_spec=TrainingRuntimeSpecPatch(template=spec))


def step_view(job: Any) -> list[dict[str, Any]]:
    return [
        {"name": s.name, "status": s.status, "pod": s.pod_name, "device": s.device, "count": s.device_count}
        for s in job.steps
    ]


def stored_view(name: str) -> dict[str, Any]:
    """What the API server holds: the TrainJob the SDK built and the pods made from it (read with
    the `kubernetes` client, which TrainerClient() configured from $KUBECONFIG)."""
    trainjob = k8s.CustomObjectsApi().get_namespaced_custom_object(
        "trainer.kubeflow.org", "v1alpha1", "default", "trainjobs", name
    )
    pods = k8s.CoreV1Api().list_namespaced_pod(
        "default", label_selector=f"jobset.sigs.k8s.io/jobset-name={name}"
    )
    return {
        "labels": trainjob["metadata"].get("labels"),
        "trainer": trainjob["spec"]["trainer"],
        "runtimePatches": trainjob["spec"].get("runtimePatches"),
        "pods": {
            pod.metadata.name: {
                "labels": pod.metadata.labels,
                "env": {e.name: e.value for e in pod.spec.containers[0].env or []},
                "resources": pod.spec.containers[0].resources.limits,
            }
            for pod in pods.items
        },
    }


def main(runtime_name: str, name: str, marker: str) -> dict[str, Any]:
    marker_env, _, marker_value = marker.partition("=")
    report: dict[str, Any] = {}
    client = TrainerClient()  # $KUBECONFIG, its current context and namespace

    runtimes = client.list_runtimes()
    report["runtimes"] = [
        {"name": r.name, "kind": r.kind.value, "framework": r.trainer.framework, "image": r.trainer.image}
        for r in runtimes
    ]
    runtime = client.get_runtime(runtime_name)
    report["get_runtime"] = {
        "name": runtime.name,
        "kind": runtime.kind.value,
        "num_nodes": runtime.trainer.num_nodes,
    }

    started = time.monotonic()
    job_name = client.train(
        runtime=runtime,
        trainer=CustomTrainer(
            func=train_digits,
            func_args={"epochs": 8},
            num_nodes=2,
            resources_per_node={"cpu": 1},  # torch's numProcPerNode "auto" on CPU: 1 process a node
            env={marker_env: marker_value, "DIGITS_FROM": "sdk"},
        ),
        options=[Name(name), Labels({"team": "sdk-e2e"}), node_patch({"sdk-e2e/patched": "true"})],
    )
    report["train"] = job_name
    report["status_after_train"] = client.get_job(job_name).status

    seen: list[str] = []
    done = client.wait_for_job_status(
        job_name, timeout=300, polling_interval=1, callbacks=[lambda job: seen.append(job.status)]
    )
    report["seconds"] = round(time.monotonic() - started, 1)
    report["seen"] = seen
    report["done"] = {"status": done.status, "num_nodes": done.num_nodes, "steps": step_view(done)}

    got = client.get_job(job_name)
    report["get_job"] = {
        "name": got.name,
        "status": got.status,
        "runtime": got.runtime.name,
        "steps": step_view(got),
    }
    report["listed"] = [j.name for j in client.list_jobs()]
    report["listed_by_runtime"] = [j.name for j in client.list_jobs(runtime=runtime)]
    report["logs"] = list(client.get_job_logs(job_name))
    report["logs_node_1"] = list(client.get_job_logs(job_name, step="node-1"))
    report["logs_followed"] = list(client.get_job_logs(job_name, follow=True))
    report["stored"] = stored_view(job_name)
    report["events"] = [
        {"kind": e.involved_object_kind, "name": e.involved_object_name, "reason": e.reason}
        for e in client.get_job_events(job_name)
    ]

    client.delete_job(job_name)
    deadline = time.monotonic() + 60
    while job_name in [j.name for j in client.list_jobs()] and time.monotonic() < deadline:
        time.sleep(0.5)
    report["listed_after_delete"] = [j.name for j in client.list_jobs()]

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):  # it prints a 1-node TrainJob's logs, then deletes it
        client.get_runtime_packages(runtime)
    report["runtime_packages"] = printed.getvalue().splitlines()
    report["listed_at_end"] = [j.name for j in client.list_jobs()]
    return report


if __name__ == "__main__":
    print(json.dumps(main(*sys.argv[1:4])))
