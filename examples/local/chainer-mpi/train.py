"""Data-parallel logistic regression on scikit-learn's digits with plain mpi4py (ChainerJob).

What ChainerMN's multi-node optimizer does, with numpy: every rank computes the gradient on its
shard, an MPI Allreduce averages the gradients, and every rank applies the same update, so the
weights stay identical. (Real ChainerMN needs Chainer 7.8.1 and numpy<2, an environment of its
own: job-chainermn.yaml runs train_chainermn.py there; see examples/local/README.md.) The
program checks that the loss falls and that all ranks hold identical weights, and exits non-zero
otherwise.
"""

from __future__ import annotations

import socket
import sys

import numpy as np
from mpi4py import MPI
from sklearn.datasets import load_digits


def main() -> int:
    comm = MPI.COMM_WORLD
    rank, size = comm.rank, comm.size
    digits = load_digits()
    x_all = (digits.data / 16.0).astype(np.float64)
    y_all = digits.target
    perm = np.random.default_rng(0).permutation(len(x_all))
    test, train = perm[:297], perm[297:]
    shard = train[rank::size]
    x, y = x_all[shard], np.eye(10)[y_all[shard]]
    print(f"rank {rank}/{size} on {socket.gethostname()}: {len(shard)} training samples", flush=True)

    w = np.zeros((64, 10)) if rank == 0 else None
    w = comm.bcast(w, root=0)  # rank 0's initial weights everywhere (ChainerMN: bcast_data)
    b = np.zeros(10)
    lr, first, last = 0.5, None, None
    for epoch in range(30):
        logits = x @ w + b
        p = np.exp(logits - logits.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        loss = -np.mean(np.sum(y * np.log(p + 1e-12), axis=1))
        grad = np.concatenate([(x.T @ (p - y) / len(x)).ravel(), (p - y).mean(axis=0)])
        avg = np.empty_like(grad)
        comm.Allreduce(grad, avg, op=MPI.SUM)  # the multi-node optimizer's allreduce_grad
        avg /= size
        w -= lr * avg[:640].reshape(64, 10)
        b -= lr * avg[640:]
        last = comm.allreduce(loss, op=MPI.SUM) / size
        first = first if first is not None else last
        if rank == 0 and (epoch % 10 == 9 or epoch == 0):
            print(f"rank 0: epoch {epoch + 1}/30 loss {last:.4f}", flush=True)

    params = np.concatenate([w.ravel(), b])
    gathered = comm.gather(params, root=0)
    ok = bool(last < first)
    if rank == 0:
        identical = all(np.array_equal(g, gathered[0]) for g in gathered)
        acc = float(np.mean(np.argmax(x_all[test] @ w + b, axis=1) == y_all[test]))
        print(
            f"rank 0: final loss {last:.4f} (first {first:.4f}), test accuracy {acc:.3f}, "
            f"{size} ranks, identical weights: {identical}",
            flush=True,
        )
        ok = ok and identical
    return 0 if comm.bcast(ok, root=0) else 1


if __name__ == "__main__":
    sys.exit(main())
