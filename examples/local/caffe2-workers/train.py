"""Sharded training driven by the Caffe2Job env contract (Caffe2 itself is not used: see below).

The operator gives every worker SHARD_ID, NUM_SHARDS, RUN_ID and CAFFE2_CONFIG (the cluster and
this task), plus REDIS_HOST/PORT or NFS_PATH for the rendezvous. Caffe2's resnet50_trainer meets
its peers through a Redis or NFS store keyed by RUN_ID; this program does the same with a file
store: NFS_PATH (job.yaml mounts a hostPath there, which both pods share), else the working
directory (the pod's own: a single shard), under `.caffe2-rendezvous/<RUN_ID>/`. Each shard
trains a softmax regression on its shard of scikit-learn's digits; after every round it
publishes its weights and averages all shards' (synchronous model averaging), so every shard
ends with identical weights. Each shard checks that the loss fell and that all shards' final
weights are identical, and exits non-zero if not.

Caffe2 was merged into PyTorch and removed from its Python packages (no `caffe2.python` in any
current torch wheel), so the contract is what this example exercises.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.datasets import load_digits

ROUNDS = 10
WAIT_SECONDS = 120.0


def publish(store: Path, name: str, array: np.ndarray) -> None:
    tmp = store / f".{name}.{os.getpid()}.tmp.npy"
    np.save(tmp, array)
    tmp.replace(store / f"{name}.npy")  # atomic: readers never see half a file


def collect(store: Path, names: list[str]) -> list[np.ndarray]:
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        paths = [store / f"{n}.npy" for n in names]
        if all(p.exists() for p in paths):
            return [np.load(p) for p in paths]
        if time.monotonic() > deadline:
            missing = [p.name for p in paths if not p.exists()]
            raise TimeoutError(f"shards did not publish {missing} within {WAIT_SECONDS:.0f}s")
        time.sleep(0.05)


def main() -> int:
    shard, shards, run_id = int(os.environ["SHARD_ID"]), int(os.environ["NUM_SHARDS"]), os.environ["RUN_ID"]
    config = json.loads(os.environ["CAFFE2_CONFIG"])
    task = config["task"]
    assert task == {"type": "worker", "index": shard}, config
    assert len(config["cluster"]["worker"]) == shards, config
    base = Path(os.environ.get("NFS_PATH") or ".")
    store = base / ".caffe2-rendezvous" / run_id
    store.mkdir(parents=True, exist_ok=True)
    print(
        f"shard {shard}/{shards} run {run_id}: CAFFE2_CONFIG task {task}, "
        f"{len(config['cluster']['worker'])} workers, rendezvous {store}",
        flush=True,
    )

    digits = load_digits()
    x_all, y_all = digits.data / 16.0, digits.target
    perm = np.random.default_rng(0).permutation(len(x_all))
    test, train = perm[:297], perm[297:]
    mine = train[shard::shards]
    x, y = x_all[mine], np.eye(10)[y_all[mine]]
    params = np.zeros(650)  # the same start on every shard

    def loss_and_grad(p: np.ndarray) -> tuple[float, np.ndarray]:
        w, b = p[:640].reshape(64, 10), p[640:]
        z = x @ w + b
        e = np.exp(z - z.max(axis=1, keepdims=True))
        prob = e / e.sum(axis=1, keepdims=True)
        loss = float(-np.mean(np.sum(y * np.log(prob + 1e-12), axis=1)))
        return loss, np.concatenate([(x.T @ (prob - y) / len(x)).ravel(), (prob - y).mean(axis=0)])

    first = last = None
    for r in range(ROUNDS):
        for _ in range(5):  # local steps, then average across shards
            loss, grad = loss_and_grad(params)
            params = params - 0.5 * grad
        publish(store, f"round{r}-shard{shard}", np.append(params, loss))
        everyone = collect(store, [f"round{r}-shard{i}" for i in range(shards)])
        params = np.mean([a[:-1] for a in everyone], axis=0)
        last = float(np.mean([a[-1] for a in everyone]))
        first = first if first is not None else last
        print(f"shard {shard}: round {r + 1}/{ROUNDS} mean loss over shards {last:.4f}", flush=True)

    digest = hashlib.sha256(params.tobytes()).hexdigest()[:16]
    publish(store, f"final-shard{shard}", params)
    finals = collect(store, [f"final-shard{i}" for i in range(shards)])
    identical = all(np.array_equal(f, finals[0]) for f in finals)
    w, b = params[:640].reshape(64, 10), params[640:]
    acc = float(np.mean(np.argmax(x_all[test] @ w + b, axis=1) == y_all[test]))
    print(
        f"shard {shard}: loss {first:.4f} -> {last:.4f}, test accuracy {acc:.3f}, weights {digest} "
        f"identical on all {shards} shards: {identical}",
        flush=True,
    )
    return 0 if identical and last < first else 1


if __name__ == "__main__":
    sys.exit(main())
