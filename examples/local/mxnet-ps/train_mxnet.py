"""The same job with real MXNet (1.9.1): KVStore dist_sync over ps-lite, from the DMLC_* env.

MXNet reads DMLC_ROLE, DMLC_PS_ROOT_URI, DMLC_PS_ROOT_PORT, DMLC_NUM_SERVER and DMLC_NUM_WORKER
itself: with DMLC_ROLE scheduler or server, `import mxnet` runs ps-lite's scheduler/server loop
and exits when the workers finish; workers create a `dist_sync` KVStore, the servers apply SGD
(set_optimizer) to the gradients all workers push, and workers pull the updated weights.
DMLC_NODE_HOST (the pod IP) is the address a node advertises.

Needs an interpreter with mxnet==1.9.1 and numpy<1.24 (MXNet uses np.bool, removed in 1.24),
which cannot share an environment with the numpy 2 the other examples need: see README.md.
"""

from __future__ import annotations

import os
import sys

role = os.environ["DMLC_ROLE"]
print(f"{role}: joining {os.environ['DMLC_PS_ROOT_URI']}:{os.environ['DMLC_PS_ROOT_PORT']}", flush=True)

import mxnet as mx  # noqa: E402  (scheduler/server: serve inside this import, then exit)
import numpy as np  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402


def main(epochs: int = 10, batch: int = 50) -> int:
    kv = mx.kv.create("dist_sync")
    rank, workers = kv.rank, kv.num_workers
    print(f"worker {rank}/{workers}: KVStore {kv.type}", flush=True)
    digits = load_digits()
    x_all = np.hstack([digits.data / 16.0, np.ones((len(digits.data), 1))]).astype("float32")
    y_all = digits.target
    perm = np.random.default_rng(0).permutation(len(x_all))
    test, train = perm[:297], perm[297:]
    per_worker = len(train) // workers
    shard = train[rank * per_worker : (rank + 1) * per_worker]

    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.5, rescale_grad=1.0 / workers))  # on servers
    weight = mx.nd.zeros((65, 10))
    kv.init(0, weight)
    kv.pull(0, out=weight)
    losses = []
    for epoch in range(epochs):
        order = np.random.default_rng(epoch * 100 + rank).permutation(shard)
        total, steps = 0.0, per_worker // batch
        for s in range(steps):
            idx = order[s * batch : (s + 1) * batch]
            xb, yb = mx.nd.array(x_all[idx]), mx.nd.array(y_all[idx])
            weight.attach_grad()
            with mx.autograd.record():
                loss = mx.nd.softmax_cross_entropy(mx.nd.dot(xb, weight), yb) / len(idx)
            loss.backward()
            total += float(loss.asscalar())
            kv.push(0, weight.grad)
            kv.pull(0, out=weight)
        losses.append(total / steps)
        print(f"worker {rank}: epoch {epoch + 1}/{epochs} loss={losses[-1]:.4f}", flush=True)
    accuracy = float(np.mean(np.argmax(x_all[test] @ weight.asnumpy(), axis=1) == y_all[test]))
    print(
        f"worker {rank}: final loss {losses[-1]:.4f} (first {losses[0]:.4f}), test accuracy {accuracy:.3f}",
        flush=True,
    )
    return 0 if losses[-1] < losses[0] else 1


if __name__ == "__main__":
    sys.exit(main())
