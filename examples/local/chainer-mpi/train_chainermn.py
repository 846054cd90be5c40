"""Data-parallel MLP on scikit-learn's digits with real Chainer + ChainerMN (ChainerJob).

Needs Chainer 7.8.1 (ChainerMN is part of it) in a numpy<2 environment with mpi4py: see
requirements-chainer.txt and examples/local/README.md. The image map points the job's image at
that interpreter; `mpiexec` then finds it as `python` on PATH.

ChainerMN's own pieces, on CPU: the `naive` communicator (mpi4py over MPI.COMM_WORLD), rank 0's
dataset split by `scatter_dataset`, the multi-node optimizer (broadcasts rank 0's initial weights
at the first update, then allreduces the gradients every step), and the multi-node evaluator
(averages the validation results over the ranks). Each rank prints its loss first -> last epoch;
rank 0 prints the averaged loss, the test accuracy and whether every rank holds the same weights.
Exits non-zero when the loss did not fall or the weights differ.
"""

from __future__ import annotations

import shutil
import socket
import sys
import tempfile

import chainer
import chainer.functions as F
import chainer.links as L
import chainermn
import numpy as np
from chainer import training
from chainer.training import extensions
from sklearn.datasets import load_digits

EPOCHS = 10
BATCH = 32


class MLP(chainer.Chain):
    def __init__(self) -> None:
        super().__init__()
        with self.init_scope():
            self.l1 = L.Linear(64, 64)
            self.l2 = L.Linear(64, 10)

    def forward(self, x: chainer.Variable) -> chainer.Variable:
        return self.l2(F.relu(self.l1(x)))


def main() -> int:
    comm = chainermn.create_communicator("naive")
    rank, size = comm.rank, comm.size
    np.random.seed(rank)  # different initial weights per rank: the optimizer's broadcast must fix them
    print(
        f"rank {rank}/{size} on {socket.gethostname()}: chainer {chainer.__version__}, {type(comm).__name__}",
        flush=True,
    )

    if rank == 0:
        digits = load_digits()
        x_all = (digits.data / 16.0).astype(np.float32)
        y_all = digits.target.astype(np.int32)
        perm = np.random.default_rng(0).permutation(len(x_all))
        test_idx, train_idx = perm[:297], perm[297:]
        train = chainer.datasets.TupleDataset(x_all[train_idx], y_all[train_idx])
        test = chainer.datasets.TupleDataset(x_all[test_idx], y_all[test_idx])
    else:
        train, test = None, None
    train = chainermn.scatter_dataset(train, comm, shuffle=True, seed=0)
    test = chainermn.scatter_dataset(test, comm)
    print(f"rank {rank}/{size}: {len(train)} training, {len(test)} test samples", flush=True)

    model = L.Classifier(MLP())
    optimizer = chainermn.create_multi_node_optimizer(chainer.optimizers.MomentumSGD(lr=0.1), comm)
    optimizer.setup(model)

    train_iter = chainer.iterators.SerialIterator(train, BATCH, shuffle=True)
    test_iter = chainer.iterators.SerialIterator(test, BATCH, repeat=False, shuffle=False)
    updater = training.StandardUpdater(train_iter, optimizer)
    out = tempfile.mkdtemp(prefix=f"chainermn-rank{rank}-")  # the trainer's output dir (nothing is saved)
    trainer = training.Trainer(updater, (EPOCHS, "epoch"), out=out)
    evaluator = chainermn.create_multi_node_evaluator(extensions.Evaluator(test_iter, model), comm)
    trainer.extend(evaluator, trigger=(EPOCHS, "epoch"))
    log = extensions.LogReport(trigger=(1, "epoch"), filename=None)
    trainer.extend(log)
    try:
        trainer.run()
    finally:
        shutil.rmtree(out, ignore_errors=True)

    first, last = log.log[0]["main/loss"], log.log[-1]["main/loss"]
    acc = log.log[-1]["validation/main/accuracy"]  # already averaged over the ranks
    print(f"rank {rank}/{size}: loss {first:.4f} -> {last:.4f}", flush=True)

    mpi = comm.mpi_comm
    params = np.concatenate([p.array.ravel() for _, p in sorted(model.namedparams())])
    gathered = mpi.gather(params, root=0)
    mean_first = mpi.allreduce(first) / size
    mean_last = mpi.allreduce(last) / size
    ok = bool(last < first)
    if rank == 0:
        identical = all(np.array_equal(g, gathered[0]) for g in gathered)
        print(
            f"rank 0: final loss {mean_last:.4f} (first {mean_first:.4f}), test accuracy {acc:.3f}, "
            f"{size} ranks, identical weights: {identical}",
            flush=True,
        )
        ok = ok and identical
    return 0 if mpi.bcast(ok, root=0) else 1


if __name__ == "__main__":
    sys.exit(main())
