"""Data-parallel MLP on scikit-learn's digits with real Horovod (PyTorch, over MPI), launched by mpirun.

Needs Horovod 0.28.1 built against torch with MPI: see requirements-horovod.txt and
examples/local/README.md (scripts/horovod-env builds it). The image map points the MPIJob's image
at that interpreter; `mpirun` then finds it as `python` on PATH, on the launcher and in the workers.

Horovod's own pieces, on CPU: `hvd.init()` (ranks, sizes and local ranks from MPI), each rank
training on its shard `rank::size` of the training set, `hvd.broadcast_parameters` (every rank
starts from rank 0's weights, though each seeded its own), `hvd.broadcast_optimizer_state`,
`hvd.DistributedOptimizer` (averages the gradients every step), `hvd.allreduce` of the epoch loss
and of the test set's correct counts, and `hvd.allgather` of every rank's weights at the end. Each
rank prints its loss first -> last epoch; rank 0 prints the averaged loss, the test accuracy and
whether every rank holds the same weights. Exits non-zero when the loss did not fall or the
weights differ.
"""

from __future__ import annotations

import argparse
import socket
import sys

import horovod
import horovod.torch as hvd
import torch
from sklearn.datasets import load_digits
from torch import nn


def weights(model: nn.Module) -> torch.Tensor:
    return torch.cat([p.detach().flatten() for p in model.parameters()]).double()


def distinct(model: nn.Module, name: str) -> int:
    """How many different weight vectors the ranks hold (allgather of every rank's)."""
    gathered = hvd.allgather(weights(model).unsqueeze(0), name=name)
    return len({tuple(row.tolist()) for row in gathered})


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.05)
    args = parser.parse_args()

    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    torch.set_num_threads(1)  # several ranks share the machine's cores
    print(
        f"rank {rank}/{size} on {socket.gethostname()}: horovod {horovod.__version__}, torch "
        f"{torch.__version__}, MPI enabled: {hvd.mpi_enabled()}, "
        f"local rank {hvd.local_rank()}/{hvd.local_size()}",
        flush=True,
    )

    digits = load_digits()
    x_all = torch.tensor(digits.data / 16.0, dtype=torch.float32)
    y_all = torch.tensor(digits.target, dtype=torch.long)
    perm = torch.randperm(len(x_all), generator=torch.Generator().manual_seed(0))  # same split everywhere
    test_idx, train_idx = perm[:297], perm[297:]
    shard = train_idx[rank::size]
    x, y = x_all[shard], y_all[shard]

    torch.manual_seed(rank)  # different initial weights per rank: broadcast_parameters makes them rank 0's
    model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
    before = distinct(model, "weights.initial")
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    after = distinct(model, "weights.broadcast")
    if rank == 0:
        print(f"rank 0: broadcast_parameters: {before} distinct initial weight sets -> {after}", flush=True)
    opt = hvd.DistributedOptimizer(opt, named_parameters=model.named_parameters())
    loss_fn = nn.CrossEntropyLoss()

    steps = (len(train_idx) // size) // args.batch_size  # the same on every rank
    own_first = own_last = mean_first = mean_last = 0.0
    for epoch in range(args.epochs):
        order = torch.randperm(len(x), generator=torch.Generator().manual_seed(epoch))
        total = 0.0
        for step in range(steps):
            idx = order[step * args.batch_size : (step + 1) * args.batch_size]
            opt.zero_grad()
            loss = loss_fn(model(x[idx]), y[idx])
            loss.backward()
            opt.step()
            total += loss.item()
        own_last = total / steps
        mean_last = hvd.allreduce(torch.tensor(own_last), name="loss", op=hvd.Average).item()
        if epoch == 0:
            own_first, mean_first = own_last, mean_last
        if rank == 0:
            print(
                f"rank 0: epoch {epoch + 1}/{args.epochs} loss {mean_last:.4f} (averaged over ranks)",
                flush=True,
            )
    print(
        f"rank {rank}/{size}: {len(shard)} training samples, loss {own_first:.4f} -> {own_last:.4f}",
        flush=True,
    )

    # the test set sharded too: each rank counts its correct answers, allreduce sums them
    test = test_idx[rank::size]
    with torch.no_grad():
        correct = (model(x_all[test]).argmax(dim=1) == y_all[test]).sum()
    counts = hvd.allreduce(
        torch.tensor([correct.item(), len(test)], dtype=torch.float64), name="test", op=hvd.Sum
    )
    acc = (counts[0] / counts[1]).item()
    identical = distinct(model, "weights.final") == 1
    ok = own_last < own_first and identical
    if rank == 0:
        print(
            f"rank 0: final loss {mean_last:.4f} (first {mean_first:.4f}), test accuracy {acc:.3f}, "
            f"{size} ranks, identical weights: {identical}",
            flush=True,
        )
    ok = bool(hvd.allreduce(torch.tensor(int(ok)), name="ok", op=hvd.Min).item())
    hvd.shutdown()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
