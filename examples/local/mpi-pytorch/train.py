"""PyTorch data-parallel training launched by mpirun (MPIJob): ranks from MPI, gradients over gloo.

The CPU build of PyTorch has no MPI backend, so MPI provides what a launcher would otherwise
inject: the rank and world size (mpi4py's COMM_WORLD, the same as OMPI_COMM_WORLD_RANK/SIZE) and
the rendezvous address: rank 0 takes its own host name (the worker pod's hostname, which resolves
to its pod IP) and a free port and broadcasts them over MPI; every rank then joins
`init_process_group("gloo", "tcp://host:port")`. DDP averages the gradients; each rank trains on
its own shard of scikit-learn's digits. The program checks that the loss falls and that all ranks
end with identical weights (gathered over MPI) and exits non-zero otherwise.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys

import torch
import torch.distributed as dist
from mpi4py import MPI
from sklearn.datasets import load_digits
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def rendezvous(comm: MPI.Comm) -> str:
    """rank 0's host and a free port on it, broadcast to every rank."""
    address = None
    if comm.rank == 0:
        host = socket.gethostname()
        with socket.socket() as s:  # a free port on the pod's address (wildcard binds go there)
            s.bind(("", 0))
            port = s.getsockname()[1]
        address = f"{host}:{port}"
    return comm.bcast(address, root=0)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.05)
    args = parser.parse_args()

    comm = MPI.COMM_WORLD
    rank, world = comm.rank, comm.size
    assert os.environ.get("OMPI_COMM_WORLD_RANK", str(rank)) == str(rank)
    torch.set_num_threads(1)  # several ranks share the machine's cores
    address = rendezvous(comm)
    dist.init_process_group("gloo", init_method=f"tcp://{address}", rank=rank, world_size=world)
    print(f"rank {rank}/{world} on {socket.gethostname()}: gloo joined via {address}", flush=True)

    digits = load_digits()
    x_all = torch.tensor(digits.data / 16.0, dtype=torch.float32)
    y_all = torch.tensor(digits.target, dtype=torch.long)
    perm = torch.randperm(len(x_all), generator=torch.Generator().manual_seed(0))  # same split everywhere
    test_idx, train_idx = perm[:297], perm[297:]
    shard = train_idx[rank::world]
    x, y = x_all[shard], y_all[shard]

    torch.manual_seed(rank)  # different initial weights per rank: DDP broadcasts rank 0's
    model = DDP(nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    steps = (len(train_idx) // world) // args.batch_size  # the same on every rank
    first = last = 0.0
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
        last = comm.allreduce(total / steps, op=MPI.SUM) / world  # the mean loss over ranks, via MPI
        first = first or last
        if rank == 0:
            print(f"rank 0: epoch {epoch + 1}/{args.epochs} loss {last:.4f}", flush=True)

    flat = torch.cat([p.detach().flatten() for p in model.parameters()]).double().numpy()
    weights = comm.gather(flat, root=0)
    digest = f"{float(flat.sum()):.10f}"
    ok = last < first
    if rank == 0:
        identical = all((w == weights[0]).all() for w in weights)
        with torch.no_grad():
            acc = (model(x_all[test_idx]).argmax(dim=1) == y_all[test_idx]).float().mean().item()
        print(
            f"rank 0: final loss {last:.4f} (first epoch {first:.4f}), test accuracy {acc:.3f}, "
            f"{world} ranks, weights identical on all ranks: {identical} (checksum {digest})",
            flush=True,
        )
        ok = ok and bool(identical)
    ok = comm.bcast(ok, root=0)
    dist.destroy_process_group()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
