"""RSS of the informer cache holding N trimmed pods, against an empty cache.

Pods are realistic PyTorchJob workers (labels, ownerReference, env, volumes, managedFields,
container statuses), decoded from JSON one by one as a watch/list would deliver them, trimmed
and indexed by `kubetrain.runtime.cache.Store` exactly as the pod informer does.

    python benchmarks/runtime_cache_memory.py [--pods 10000] [--full]

`--full` also measures storing the untrimmed dicts (what a cache without trimming would cost).
Target (docs/upstream-behaviour.md#caches): < 100 MB over empty for 10,000 pods.
"""

from __future__ import annotations

import argparse
import gc
import json
import time
import uuid
from typing import Any

from kubetrain.runtime.cache import INDEX_JOB_NAME, INDEX_OWNER_UID, Store
from kubetrain.runtime.trim import trim_pod


def rss_bytes() -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def make_pod(job: int, index: int, job_uid: str) -> dict[str, Any]:
    name = f"train-{job:04d}"
    pod_name = f"{name}-worker-{index}"
    labels = {
        "training.kubeflow.org/operator-name": "pytorchjob-controller",
        "training.kubeflow.org/job-name": name,
        "training.kubeflow.org/replica-type": "worker",
        "training.kubeflow.org/replica-index": str(index),
        "training.kubeflow.org/job-role": "master" if index == 0 else "worker",
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": pod_name,
            "namespace": f"team-{job % 20}",
            "uid": str(uuid.uuid4()),
            "resourceVersion": str(100000 + job * 10 + index),
            "creationTimestamp": "2024-05-01T10:00:00Z",
            "labels": labels,
            "annotations": {"sidecar.istio.io/inject": "false"},
            "ownerReferences": [
                {
                    "apiVersion": "kubeflow.org/v1",
                    "kind": "PyTorchJob",
                    "name": name,
                    "uid": job_uid,
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
            "managedFields": [
                {
                    "manager": m,
                    "operation": "Update",
                    "apiVersion": "v1",
                    "time": "2024-05-01T10:00:01Z",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {
                        "f:metadata": {"f:labels": {f"f:{k}": {} for k in labels}},
                        "f:spec": {"f:containers": {f'k:{{"name":"pytorch-{i}"}}': {} for i in range(8)}},
                    },
                }
                for m in ("kubetrain", "kubelet", "kube-scheduler")
            ],
        },
        "spec": {
            "containers": [
                {
                    "name": "pytorch",
                    "image": "docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727",
                    "command": ["python3", "/opt/pytorch-mnist/mnist.py", "--epochs=1"],
                    "env": [
                        {"name": "MASTER_PORT", "value": "23456"},
                        {"name": "MASTER_ADDR", "value": f"{name}-master-0"},
                        {"name": "WORLD_SIZE", "value": "16"},
                        {"name": "RANK", "value": str(index)},
                        {"name": "PYTHONUNBUFFERED", "value": "1"},
                    ],
                    "ports": [{"name": "pytorchjob-port", "containerPort": 23456, "protocol": "TCP"}],
                    "resources": {
                        "limits": {"nvidia.com/gpu": "1"},
                        "requests": {"cpu": "4", "memory": "16Gi"},
                    },
                    "volumeMounts": [
                        {
                            "name": "kube-api-access-abcde",
                            "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                            "readOnly": True,
                        }
                    ],
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File",
                    "imagePullPolicy": "IfNotPresent",
                }
            ],
            "initContainers": [
                {
                    "name": "init-pytorch",
                    "image": "alpine:3.10",
                    "command": ["sh", "-c", "until nslookup master; do sleep 2; done"],
                }
            ],
            "restartPolicy": "OnFailure",
            "nodeName": f"gpu-node-{(job * 7 + index) % 500}",
            "schedulerName": "default-scheduler",
            "serviceAccountName": "default",
            "tolerations": [
                {
                    "key": "node.kubernetes.io/not-ready",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                }
            ],
            "volumes": [
                {
                    "name": "kube-api-access-abcde",
                    "projected": {
                        "sources": [{"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}]
                    },
                }
            ],
        },
        "status": {
            "phase": "Running",
            "conditions": [
                {
                    "type": t,
                    "status": "True",
                    "lastProbeTime": None,
                    "lastTransitionTime": "2024-05-01T10:00:05Z",
                }
                for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")
            ],
            "hostIP": "10.0.1.2",
            "podIP": f"10.{job % 250}.{index}.{job % 200}",
            "podIPs": [{"ip": f"10.{job % 250}.{index}.{job % 200}"}],
            "startTime": "2024-05-01T10:00:02Z",
            "containerStatuses": [
                {
                    "name": "pytorch",
                    "state": {"running": {"startedAt": "2024-05-01T10:00:04Z"}},
                    "lastState": {},
                    "ready": True,
                    "restartCount": 0,
                    "image": "docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727",
                    "imageID": "docker.io/kubeflowkatib/pytorch-mnist@sha256:" + "0" * 64,
                    "containerID": "containerd://" + uuid.uuid4().hex + uuid.uuid4().hex,
                    "started": True,
                }
            ],
            "initContainerStatuses": [
                {
                    "name": "init-pytorch",
                    "state": {
                        "terminated": {
                            "exitCode": 0,
                            "reason": "Completed",
                            "startedAt": "2024-05-01T10:00:02Z",
                            "finishedAt": "2024-05-01T10:00:03Z",
                        }
                    },
                    "ready": True,
                    "restartCount": 0,
                    "image": "alpine:3.10",
                }
            ],
            "qosClass": "Burstable",
        },
    }


def wire_pods(n: int, per_job: int = 10) -> list[bytes]:
    out = []
    for j in range((n + per_job - 1) // per_job):
        job_uid = str(uuid.uuid4())
        for i in range(min(per_job, n - j * per_job)):
            out.append(json.dumps(make_pod(j, i, job_uid)).encode())
    return out


def measure(wire: list[bytes], trim: bool) -> tuple[int, float, Store]:
    gc.collect()
    before = rss_bytes()
    store = Store(trim_pod if trim else None)
    t0 = time.perf_counter()
    for raw in wire:
        store.upsert(json.loads(raw))
    elapsed = time.perf_counter() - t0
    gc.collect()
    return rss_bytes() - before, elapsed, store


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--full", action="store_true", help="also measure an untrimmed cache")
    args = parser.parse_args()

    wire = wire_pods(args.pods)
    wire_bytes = sum(len(w) for w in wire)
    print(f"pods: {args.pods}, average JSON size {wire_bytes / len(wire):,.0f} B")
    # Warm up interpreter-level allocations (interned keys, code paths) with a tiny cache.
    measure(wire[:50], trim=True)

    delta, elapsed, store = measure(wire, trim=True)
    owner = store.list()[0]["metadata"]["ownerReferences"][0]["uid"]
    assert len(store) == args.pods and store.by_index(INDEX_OWNER_UID, owner)
    assert store.by_index(INDEX_JOB_NAME, "team-0/train-0000")
    print(
        f"trimmed cache: RSS +{delta / 2**20:,.1f} MiB over empty "
        f"({delta / args.pods:,.0f} B/pod); decode+trim+index {elapsed:.2f} s "
        f"({elapsed / args.pods * 1e6:,.0f} us/pod)"
    )
    print(f"target < 100 MB for 10,000 pods: {'met' if delta * 10_000 / args.pods < 100e6 else 'NOT met'}")
    del store
    gc.collect()

    if args.full:
        delta_full, elapsed_full, store = measure(wire, trim=False)
        print(
            f"untrimmed cache: RSS +{delta_full / 2**20:,.1f} MiB ({delta_full / args.pods:,.0f} B/pod); "
            f"decode+index {elapsed_full:.2f} s"
        )
        del store


if __name__ == "__main__":
    main()
