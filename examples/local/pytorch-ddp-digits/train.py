"""Data-parallel training with torch.distributed + DDP (gloo) on scikit-learn's digits.

Demonstrates the PyTorchJob env contract: the operator injects MASTER_ADDR, MASTER_PORT,
WORLD_SIZE and RANK into every pod, and `init_process_group(init_method="env://")` reads them. As
the program of examples/local/trainjob-torch it runs under torchrun, which reads the PET_* env of
Trainer v2's torch plugin and gives it the same four.
Each rank trains on its own shard; DDP averages the gradients, so the loss falls on every rank and
all ranks end with identical weights: the program checks that (all_gather of a checksum) and
exits non-zero if they differ.
"""

from __future__ import annotations

import argparse
import os
import sys

import torch
import torch.distributed as dist
from sklearn.datasets import load_digits
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.05)
    args = parser.parse_args()

    torch.set_num_threads(1)  # several ranks share the machine's cores
    dist.init_process_group("gloo", init_method="env://")  # MASTER_ADDR/PORT, WORLD_SIZE, RANK
    rank, world = dist.get_rank(), dist.get_world_size()
    print(f"rank {rank}/{world}: joined via {os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}")

    digits = load_digits()
    x_all = torch.tensor(digits.data / 16.0, dtype=torch.float32)
    y_all = torch.tensor(digits.target, dtype=torch.long)
    gen = torch.Generator().manual_seed(0)  # the same split on every rank
    perm = torch.randperm(len(x_all), generator=gen)
    test_idx, train_idx = perm[:297], perm[297:]
    shard = train_idx[rank::world]  # each rank its own shard
    x, y = x_all[shard], y_all[shard]

    torch.manual_seed(0)  # DDP broadcasts rank 0's weights anyway; this keeps runs repeatable
    model = DDP(nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    first_loss = last_loss = 0.0
    for epoch in range(args.epochs):
        order = torch.randperm(len(x), generator=torch.Generator().manual_seed(epoch))
        total, batches = 0.0, 0
        # The same number of steps on every rank, or DDP's allreduce would hang.
        steps = min(len(train_idx) // world, len(x)) // args.batch_size
        for step in range(steps):
            idx = order[step * args.batch_size : (step + 1) * args.batch_size]
            opt.zero_grad()
            loss = loss_fn(model(x[idx]), y[idx])
            loss.backward()
            opt.step()
            total, batches = total + loss.item(), batches + 1
        mean = torch.tensor([total / batches])
        dist.all_reduce(mean)  # the loss over all ranks
        last_loss = mean.item() / world
        first_loss = first_loss or last_loss
        print(
            f"rank {rank}: epoch {epoch + 1}/{args.epochs} local_loss={total / batches:.4f} "
            f"global_loss={last_loss:.4f}"
        )

    checksum = torch.tensor([sum(p.double().sum().item() for p in model.parameters())], dtype=torch.float64)
    sums = [torch.zeros(1, dtype=torch.float64) for _ in range(world)]
    dist.all_gather(sums, checksum)
    identical = all(torch.equal(s, sums[0]) for s in sums)
    print(f"rank {rank}: weight checksum {checksum.item():.10f} identical_on_all_ranks={identical}")

    ok = identical and last_loss < first_loss
    if rank == 0:
        with torch.no_grad():
            pred = model(x_all[test_idx]).argmax(dim=1)
        acc = (pred == y_all[test_idx]).float().mean().item()
        print(
            f"rank 0: final loss {last_loss:.4f} (first epoch {first_loss:.4f}), "
            f"test accuracy {acc:.3f}, world size {world}"
        )
    # Leave together: a rank tearing gloo down while a peer's sockets are still closing can abort
    # ("terminate called without an active exception") and hang in the abort.
    dist.barrier()
    dist.destroy_process_group()
    if not ok:
        print(f"rank {rank}: FAILED (identical={identical}, loss {first_loss:.4f} -> {last_loss:.4f})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
